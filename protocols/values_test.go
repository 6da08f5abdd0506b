package protocols

import (
	"testing"

	"github.com/zclconf/go-cty/cty"
)

func TestAttrAndStringAttr(t *testing.T) {
	obj := cty.ObjectVal(map[string]cty.Value{
		"path":  cty.StringVal("/x"),
		"port":  cty.NumberIntVal(8080),
		"empty": cty.NullVal(cty.String),
		"list":  cty.ListVal([]cty.Value{cty.StringVal("a")}),
	})
	cases := []struct {
		name    string
		obj     cty.Value
		attr    string
		want    string
		wantErr bool
	}{
		{"string", obj, "path", "/x", false},
		{"number converts", obj, "port", "8080", false},
		{"null is empty", obj, "empty", "", false},
		{"absent is empty", obj, "nope", "", false},
		{"null object", cty.NullVal(obj.Type()), "path", "", false},
		{"not a string", obj, "list", "", true},
		{"unknown", cty.ObjectVal(map[string]cty.Value{"path": cty.UnknownVal(cty.String)}), "path", "", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := StringAttr(tc.obj, tc.attr)
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Fatalf("StringAttr = %q, %v; want %q, error %v", got, err, tc.want, tc.wantErr)
			}
		})
	}
	if v := Attr(obj, "nope"); !v.IsNull() {
		t.Errorf("Attr of an absent attribute = %#v, want null", v)
	}
}
