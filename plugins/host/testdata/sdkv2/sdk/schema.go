package sdk

import (
	"fmt"
	"sort"

	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/zclconf/go-cty/cty"
	ctyjson "github.com/zclconf/go-cty/cty/json"
	"github.com/zclconf/go-cty/cty/msgpack"

	"github.com/hload/hload/plugins/host/testdata/sdkv2/proto"
)

// SchemaToProto encodes a schema of attributes for the wire.
func SchemaToProto(spec hcldec.ObjectSpec) ([]*proto.Attribute, error) {
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
		attrs = append(attrs, &proto.Attribute{Name: name, TypeJson: ty, Required: attr.Required})
	}
	return attrs, nil
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
