package host

import (
	"bytes"
	"encoding/json"
	"sort"

	"github.com/hashicorp/hcl/v2/ext/typeexpr"
	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/zclconf/go-cty/cty"
	ctyjson "github.com/zclconf/go-cty/cty/json"

	"github.com/hload/hload/protocols"
)

// Description is what `hload plugin describe` prints as JSON.
type Description struct {
	Name            string            `json:"name"`
	Version         string            `json:"version"`
	SDKVersion      string            `json:"sdk_version"`
	ProtocolVersion int               `json:"protocol_version"`
	TargetSchema    []SchemaAttribute `json:"target_schema"`
	RequestSchema   []SchemaAttribute `json:"request_schema"`
	// Metrics are the metric names its samples may carry besides
	// "request": what a threshold may name.
	Metrics []string `json:"metrics"`
	// Gauges are the levels its clients report per interval.
	Gauges []string `json:"gauges"`
}

// SchemaAttribute is one attribute of a target or request schema.
type SchemaAttribute struct {
	Name string `json:"name"`
	// Type is the HCL type expression, such as string or map(string);
	// "any" takes any value, and "block" is a nested block.
	Type     string `json:"type"`
	Required bool   `json:"required"`
	// Description and Default are the plugin's own (protocols.AttrDoc);
	// left out when it gives none. Default is the value as JSON
	// (json.Number for a number, so it prints as the plugin wrote it).
	Description string `json:"description,omitempty"`
	Default     any    `json:"default,omitempty"`
}

// Describe returns the plugin's description, under the name the plugin
// gives itself.
func Describe(p *Plugin) Description {
	info := p.Info()
	return Description{
		Name:            info.Name,
		Version:         info.Version,
		SDKVersion:      p.SDKVersion(),
		ProtocolVersion: p.ProtocolVersion(),
		TargetSchema:    documented(SchemaAttributes(info.TargetSpec), info.TargetDocs),
		RequestSchema:   documented(SchemaAttributes(info.RequestSpec), info.RequestDocs),
		Metrics:         append([]string{}, info.Metrics...),
		Gauges:          append([]string{}, info.Gauges...),
	}
}

// SchemaAttributes lists a schema's attributes by name.
func SchemaAttributes(spec hcldec.ObjectSpec) []SchemaAttribute {
	out := make([]SchemaAttribute, 0, len(spec))
	for key, s := range spec {
		switch s := s.(type) {
		case *hcldec.AttrSpec:
			out = append(out, SchemaAttribute{Name: s.Name, Type: typeexpr.TypeString(s.Type), Required: s.Required})
		case *hcldec.BlockSpec:
			out = append(out, SchemaAttribute{Name: s.TypeName, Type: "block", Required: s.Required})
		default:
			out = append(out, SchemaAttribute{Name: key, Type: "block"})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// documented adds the plugin's descriptions and defaults to attrs.
func documented(attrs []SchemaAttribute, docs map[string]protocols.AttrDoc) []SchemaAttribute {
	for i := range attrs {
		doc, ok := docs[attrs[i].Name]
		if !ok {
			continue
		}
		attrs[i].Description = doc.Description
		if doc.Default != cty.NilVal && !doc.Default.IsNull() {
			attrs[i].Default = defaultJSON(doc.Default)
		}
	}
	return attrs
}

// defaultJSON is a default as a JSON value, in the form an HCL file
// would write it.
func defaultJSON(v cty.Value) any {
	b, err := ctyjson.Marshal(v, v.Type())
	if err != nil {
		return v.GoString() // cannot happen for a value the SDK decoded
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var out any
	if err := dec.Decode(&out); err != nil {
		return string(b)
	}
	return out
}
