package wire

import (
	"fmt"
	"sort"

	"github.com/hashicorp/hcl/v2/ext/typeexpr"
	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
	ctyjson "github.com/zclconf/go-cty/cty/json"
	"github.com/zclconf/go-cty/cty/msgpack"

	"github.com/hload/hload/plugins/proto"
	"github.com/hload/hload/protocols"
)

// schemaToProto encodes a schema with its attributes' descriptions and
// defaults. A default is checked against its attribute's type here, when
// the plugin describes itself, so that a bad one stops the plugin at
// start, naming the attribute, rather than at the first call that needs it.
func schemaToProto(spec hcldec.ObjectSpec, docs map[string]protocols.AttrDoc) ([]*proto.Attribute, error) {
	for name := range docs {
		if _, ok := spec[name]; !ok {
			return nil, fmt.Errorf("attribute %q is documented but not in the schema", name)
		}
	}
	// Sorted, so Describe is deterministic and `plugin describe` diffs well.
	names := make([]string, 0, len(spec))
	for name := range spec {
		names = append(names, name)
	}
	sort.Strings(names)
	attrs := make([]*proto.Attribute, 0, len(spec))
	for _, name := range names {
		attr, ok := spec[name].(*hcldec.AttrSpec)
		if !ok {
			return nil, fmt.Errorf("schema entry %q is a %T; only *hcldec.AttrSpec crosses the plugin boundary", name, spec[name])
		}
		if attr.Name != name {
			// The wire carries one name; a spec whose key and attribute
			// differ would come back as a different schema.
			return nil, fmt.Errorf("schema entry %q names attribute %q; they must be the same", name, attr.Name)
		}
		if attr.Type == cty.NilType {
			return nil, fmt.Errorf("schema attribute %q has no type", name)
		}
		ty, err := ctyjson.MarshalType(attr.Type)
		if err != nil {
			return nil, fmt.Errorf("schema attribute %q: %w", name, err)
		}
		a := &proto.Attribute{Name: name, TypeJson: ty, Required: attr.Required}
		doc := docs[name]
		a.Description = doc.Description
		if doc.Default != cty.NilVal {
			b, err := encodeDefault(attr, doc.Default)
			if err != nil {
				return nil, fmt.Errorf("schema attribute %q: default: %w", name, err)
			}
			a.DefaultMsgpack = b
		}
		attrs = append(attrs, a)
	}
	return attrs, nil
}

// encodeDefault checks a default against its attribute and encodes it.
func encodeDefault(attr *hcldec.AttrSpec, def cty.Value) ([]byte, error) {
	if attr.Required {
		return nil, fmt.Errorf("a required attribute has no default")
	}
	if def.IsNull() || !def.IsWhollyKnown() {
		return nil, fmt.Errorf("must be a known value, not null")
	}
	v, err := convert.Convert(def, attr.Type)
	if err != nil {
		return nil, fmt.Errorf("%s is not a %s: %w", def.Type().FriendlyName(), typeexpr.TypeString(attr.Type), err)
	}
	return encodeValue(v, attr.Type)
}

// schemaDocs decodes the descriptions and defaults of a schema from the
// wire; nil when it has none, as from a plugin built before them.
func schemaDocs(attrs []*proto.Attribute, spec hcldec.ObjectSpec) (map[string]protocols.AttrDoc, error) {
	var docs map[string]protocols.AttrDoc
	for _, a := range attrs {
		if a.Description == "" && len(a.DefaultMsgpack) == 0 {
			continue
		}
		doc := protocols.AttrDoc{Description: a.Description}
		if len(a.DefaultMsgpack) > 0 {
			as, _ := spec[a.Name].(*hcldec.AttrSpec)
			if as == nil {
				return nil, fmt.Errorf("schema attribute %q: not in the schema", a.Name)
			}
			v, err := decodeValue(a.DefaultMsgpack, as.Type)
			if err != nil || v.IsNull() {
				return nil, fmt.Errorf("schema attribute %q: bad default: %v", a.Name, err)
			}
			if as.Required {
				return nil, fmt.Errorf("schema attribute %q: a required attribute has no default", a.Name)
			}
			doc.Default = v
		}
		if docs == nil {
			docs = make(map[string]protocols.AttrDoc)
		}
		docs[a.Name] = doc
	}
	return docs, nil
}

// defaults fills in the attributes a value leaves null with their
// defaults. It is nil for a schema without defaults, which costs a call
// nothing.
type defaults map[string]cty.Value

// newDefaults collects the defaults of docs, already checked by
// schemaToProto, converted to their attributes' types.
func newDefaults(spec hcldec.ObjectSpec, docs map[string]protocols.AttrDoc) defaults {
	var d defaults
	for name, doc := range docs {
		as, _ := spec[name].(*hcldec.AttrSpec)
		if doc.Default == cty.NilVal || as == nil {
			continue
		}
		v, err := convert.Convert(doc.Default, as.Type)
		if err != nil {
			continue // Describe reports it; the plugin never serves
		}
		if d == nil {
			d = make(defaults)
		}
		d[name] = v
	}
	return d
}

// apply returns val with its null attributes set to their defaults. val is
// an object of the schema's implied type, or null or unknown, which it
// leaves alone.
func (d defaults) apply(val cty.Value) cty.Value {
	if len(d) == 0 || val.IsNull() || !val.IsKnown() || !val.Type().IsObjectType() {
		return val
	}
	var attrs map[string]cty.Value
	for name, def := range d {
		if !val.Type().HasAttribute(name) || !val.GetAttr(name).IsNull() {
			continue
		}
		if attrs == nil {
			attrs = val.AsValueMap() // a copy: cty values are immutable
		}
		attrs[name] = def
	}
	if attrs == nil {
		return val
	}
	return cty.ObjectVal(attrs)
}

// SchemaFromProto decodes a schema of attributes from the wire.
func SchemaFromProto(attrs []*proto.Attribute) (hcldec.ObjectSpec, error) {
	spec := make(hcldec.ObjectSpec, len(attrs))
	for _, a := range attrs {
		if a.GetName() == "" {
			return nil, fmt.Errorf("schema attribute without a name")
		}
		if _, dup := spec[a.Name]; dup {
			return nil, fmt.Errorf("schema attribute %q is declared twice", a.Name)
		}
		ty, err := ctyjson.UnmarshalType(a.TypeJson)
		if err != nil {
			return nil, fmt.Errorf("schema attribute %q: bad type: %w", a.Name, err)
		}
		spec[a.Name] = &hcldec.AttrSpec{Name: a.Name, Type: ty, Required: a.Required}
	}
	return spec, nil
}

// encodeValue encodes val as cty msgpack of ty, the implied type of a
// schema. msgpack.Marshal converts val to ty when they differ, and writes
// DynamicPseudoType attributes with their concrete type, so a json = {...}
// attribute round-trips.
func encodeValue(val cty.Value, ty cty.Type) ([]byte, error) {
	b, err := msgpack.Marshal(val, ty)
	if err != nil && val.ContainsMarked() {
		// Marks (sensitive, ...) are the core's business and cannot be
		// serialised; checked only on failure to keep them off the hot path.
		val, _ = val.UnmarkDeep()
		b, err = msgpack.Marshal(val, ty)
	}
	return b, err
}

// decodeValue decodes cty msgpack of ty. An empty message is a null value,
// so a host that sends nothing for a schema without attributes is fine.
func decodeValue(b []byte, ty cty.Type) (cty.Value, error) {
	if len(b) == 0 {
		return cty.NullVal(ty), nil
	}
	return msgpack.Unmarshal(b, ty)
}
