package sdk

import (
	"testing"
	"time"

	"github.com/zclconf/go-cty/cty"
)

// TestAttrHelpers: the SDK's helpers read values as hload's own do, and
// their errors name the attribute.
func TestAttrHelpers(t *testing.T) {
	v := cty.ObjectVal(map[string]cty.Value{
		"s":    cty.StringVal("x"),
		"d":    cty.StringVal("2"),
		"n":    cty.NumberIntVal(7),
		"f":    cty.NumberFloatVal(0.5),
		"b":    cty.True,
		"l":    cty.ListVal([]cty.Value{cty.StringVal("a"), cty.StringVal("b")}),
		"m":    cty.MapVal(map[string]cty.Value{"k": cty.StringVal("v")}),
		"bad":  cty.StringVal("fast"),
		"null": cty.NullVal(cty.String),
	})
	if s, err := StringAttr(v, "s"); s != "x" || err != nil {
		t.Errorf("StringAttr: %q %v", s, err)
	}
	if d, err := DurationAttr(v, "d", time.Second); d != 2*time.Second || err != nil {
		t.Errorf("DurationAttr: %v %v", d, err)
	}
	if d, err := DurationAttr(v, "null", time.Second); d != time.Second || err != nil {
		t.Errorf("DurationAttr of null: %v %v", d, err)
	}
	if _, err := DurationAttr(v, "bad", time.Second); AttrName(err) != "bad" {
		t.Errorf("DurationAttr of a bad value: %v names %q", err, AttrName(err))
	}
	if n, err := IntAttr(v, "n", 1, 10, 0); n != 7 || err != nil {
		t.Errorf("IntAttr: %d %v", n, err)
	}
	if _, err := IntAttr(v, "f", 0, 10, 0); AttrName(err) != "f" {
		t.Errorf("IntAttr of 0.5: %v", err)
	}
	if f, err := NumberAttr(v, "f", 0, 1, 0); f != 0.5 || err != nil {
		t.Errorf("NumberAttr: %v %v", f, err)
	}
	if b, err := BoolAttr(v, "b", false); !b || err != nil {
		t.Errorf("BoolAttr: %v %v", b, err)
	}
	if l, err := StringListAttr(v, "l"); len(l) != 2 || l[0] != "a" || l[1] != "b" || err != nil {
		t.Errorf("StringListAttr: %q %v", l, err)
	}
	if m, err := StringMapAttr(v, "m"); len(m) != 1 || m[0] != (Pair{Key: "k", Value: "v"}) || err != nil {
		t.Errorf("StringMapAttr: %v %v", m, err)
	}
	if !Attr(v, "missing").IsNull() {
		t.Error("Attr of a missing attribute is not null")
	}
	if err := AttrErrorf("port", "%d is not a port", 70000); AttrName(err) != "port" || err.Error() != "port 70000 is not a port" {
		t.Errorf("AttrErrorf: %v names %q", err, AttrName(err))
	}
}
