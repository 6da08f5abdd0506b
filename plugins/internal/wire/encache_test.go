package wire

import (
	"testing"

	"github.com/zclconf/go-cty/cty"
)

func TestIdentical(t *testing.T) {
	v := cty.ObjectVal(map[string]cty.Value{"a": cty.StringVal("x")})
	w := cty.ObjectVal(map[string]cty.Value{"a": cty.StringVal("x")})
	if !identityOK {
		t.Skip("cty.Value's layout changed; identical always says false")
	}
	if !identical(v, v) {
		t.Error("a value is not identical to itself")
	}
	if identical(v, w) || identical(cty.StringVal("a"), cty.StringVal("b")) {
		t.Error("distinct values are identical")
	}
	// The cache answers an identical value and an equal one alike.
	var c encodeCache
	ty := v.Type()
	a, err := c.encode(v, ty)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := c.encode(v, ty)
	e, _ := c.encode(w, ty)
	if &a[0] != &b[0] || &a[0] != &e[0] {
		t.Error("the cache did not answer")
	}
}
