package wire

import (
	"reflect"
	"testing"

	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/zclconf/go-cty/cty"

	"github.com/hload/hload/plugins/proto"
)

func TestSchemaRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		spec hcldec.ObjectSpec
	}{
		{"empty", hcldec.ObjectSpec{}},
		{"primitives", hcldec.ObjectSpec{
			"url":     &hcldec.AttrSpec{Name: "url", Type: cty.String, Required: true},
			"port":    &hcldec.AttrSpec{Name: "port", Type: cty.Number},
			"verbose": &hcldec.AttrSpec{Name: "verbose", Type: cty.Bool},
		}},
		{"collections", hcldec.ObjectSpec{
			"headers": &hcldec.AttrSpec{Name: "headers", Type: cty.Map(cty.String)},
			"tags":    &hcldec.AttrSpec{Name: "tags", Type: cty.Set(cty.String)},
			"stages": &hcldec.AttrSpec{Name: "stages", Type: cty.List(cty.Object(map[string]cty.Type{
				"duration": cty.String, "target": cty.Number,
			}))},
		}},
		{"dynamic", hcldec.ObjectSpec{
			"json": &hcldec.AttrSpec{Name: "json", Type: cty.DynamicPseudoType},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			attrs, err := schemaToProto(tt.spec, nil)
			if err != nil {
				t.Fatal(err)
			}
			got, err := SchemaFromProto(attrs)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.spec) {
				t.Errorf("round trip: got %#v, want %#v", got, tt.spec)
			}
			if !hcldec.ImpliedType(got).Equals(hcldec.ImpliedType(tt.spec)) {
				t.Errorf("implied type changed: %#v", hcldec.ImpliedType(got))
			}
		})
	}
}

func TestSchemaToProtoRejects(t *testing.T) {
	tests := []struct {
		name string
		spec hcldec.ObjectSpec
	}{
		{"block", hcldec.ObjectSpec{"tls": &hcldec.BlockSpec{TypeName: "tls", Nested: hcldec.ObjectSpec{}}}},
		{"renamed", hcldec.ObjectSpec{"a": &hcldec.AttrSpec{Name: "b", Type: cty.String}}},
		{"untyped", hcldec.ObjectSpec{"a": &hcldec.AttrSpec{Name: "a"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := schemaToProto(tt.spec, nil); err == nil {
				t.Error("no error")
			}
		})
	}
}

func TestSchemaFromProtoRejects(t *testing.T) {
	tests := []struct {
		name  string
		attrs []*proto.Attribute
	}{
		{"no name", []*proto.Attribute{{TypeJson: []byte(`"string"`)}}},
		{"bad type", []*proto.Attribute{{Name: "a", TypeJson: []byte(`"strin`)}}},
		{"duplicate", []*proto.Attribute{
			{Name: "a", TypeJson: []byte(`"string"`)},
			{Name: "a", TypeJson: []byte(`"number"`)},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := SchemaFromProto(tt.attrs); err == nil {
				t.Error("no error")
			}
		})
	}
}

func TestValueRoundTrip(t *testing.T) {
	spec := hcldec.ObjectSpec{
		"path":    &hcldec.AttrSpec{Name: "path", Type: cty.String},
		"headers": &hcldec.AttrSpec{Name: "headers", Type: cty.Map(cty.String)},
		"json":    &hcldec.AttrSpec{Name: "json", Type: cty.DynamicPseudoType},
		"port":    &hcldec.AttrSpec{Name: "port", Type: cty.Number},
	}
	ty := hcldec.ImpliedType(spec)
	tests := []struct {
		name string
		in   cty.Value
		want cty.Value // nil: same as in
	}{
		{"all nulls", cty.ObjectVal(map[string]cty.Value{
			"path": cty.NullVal(cty.String), "headers": cty.NullVal(cty.Map(cty.String)),
			"json": cty.NullVal(cty.DynamicPseudoType), "port": cty.NullVal(cty.Number),
		}), cty.NilVal},
		{"dynamic object", cty.ObjectVal(map[string]cty.Value{
			"path":    cty.StringVal("/login"),
			"headers": cty.MapVal(map[string]cty.Value{"Accept": cty.StringVal("application/json")}),
			"json": cty.ObjectVal(map[string]cty.Value{
				"email": cty.StringVal("a@b.c"),
				"ids":   cty.TupleVal([]cty.Value{cty.NumberIntVal(1), cty.StringVal("two")}),
			}),
			"port": cty.NumberFloatVal(8.5),
		}), cty.NilVal},
		{"converted", cty.ObjectVal(map[string]cty.Value{
			// An object literal for the map, and a number for a string:
			// what HCL evaluation hands over before conversion.
			"path":    cty.NumberIntVal(7),
			"headers": cty.ObjectVal(map[string]cty.Value{"A": cty.StringVal("1")}),
			"json":    cty.StringVal("raw"),
			"port":    cty.StringVal("80"),
		}), cty.ObjectVal(map[string]cty.Value{
			"path":    cty.StringVal("7"),
			"headers": cty.MapVal(map[string]cty.Value{"A": cty.StringVal("1")}),
			"json":    cty.StringVal("raw"),
			"port":    cty.NumberIntVal(80),
		})},
		{"marked", cty.ObjectVal(map[string]cty.Value{
			"path": cty.StringVal("/s").Mark("sensitive"), "headers": cty.NullVal(cty.Map(cty.String)),
			"json": cty.NullVal(cty.DynamicPseudoType), "port": cty.NullVal(cty.Number),
		}), cty.ObjectVal(map[string]cty.Value{
			"path": cty.StringVal("/s"), "headers": cty.NullVal(cty.Map(cty.String)),
			"json": cty.NullVal(cty.DynamicPseudoType), "port": cty.NullVal(cty.Number),
		})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := encodeValue(tt.in, ty)
			if err != nil {
				t.Fatal(err)
			}
			got, err := decodeValue(b, ty)
			if err != nil {
				t.Fatal(err)
			}
			want := tt.want
			if want == cty.NilVal {
				want = tt.in
			}
			if !got.RawEquals(want) {
				t.Errorf("got %#v, want %#v", got, want)
			}
		})
	}
}
