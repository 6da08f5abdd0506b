package wire

import (
	"errors"
	"testing"
	"unsafe"

	"github.com/zclconf/go-cty/cty"
)

// TestRawLayout: the layout check passes on the go-cty this module builds
// with, so the codecs' fast paths run, and getAttr reads every attribute
// of every kind of object as GetAttr does, through cty's own way where the
// payload is not a plain object's.
func TestRawLayout(t *testing.T) {
	if !rawOK {
		t.Fatal("cty.Value's layout is not the one the codecs read: their object paths are off")
	}
	inner := cty.ObjectVal(map[string]cty.Value{"n": cty.NumberIntVal(1)})
	objs := []cty.Value{
		cty.ObjectVal(map[string]cty.Value{
			"s": cty.StringVal("x"), "n": cty.NumberFloatVal(19.99), "z": cty.NullVal(cty.String),
			"u": cty.UnknownVal(cty.Bool), "m": cty.StringVal("secret").Mark("sensitive"), "o": inner,
			"t": cty.TupleVal([]cty.Value{cty.True, cty.StringVal("y")}),
		}),
		inner.Mark("sensitive"),
		cty.UnknownVal(inner.Type()),
	}
	for _, b := range []cty.Value{cty.True, cty.False, cty.BoolVal(1 < 2), cty.BoolVal(2 < 1)} {
		if isTrue(b) != b.True() {
			t.Errorf("isTrue(%#v) = %v", b, isTrue(b))
		}
	}
	for _, obj := range objs {
		for name := range obj.Type().AttributeTypes() {
			got, want := getAttr(obj, name), obj.GetAttr(name)
			if !got.RawEquals(want) {
				t.Errorf("getAttr(%#v, %q) = %#v, want %#v", obj, name, got, want)
			}
		}
	}
}

// TestUnpackerObjectNameTwice: an object that names an attribute twice
// (and so leaves one out) is not what the packer writes, and is left to
// go-cty rather than read as an object missing an attribute.
func TestUnpackerObjectNameTwice(t *testing.T) {
	ty := cty.Object(map[string]cty.Type{"a": cty.Number, "b": cty.Number})
	b := []byte{0x82, 0xa1, 'a', 0x01, 0xa1, 'a', 0x02}
	var u unpacker
	if v, err := u.unpack(b, ty); !errors.Is(err, errNotPackable) {
		t.Fatalf("unpacked %#v, %v; want errNotPackable", v, err)
	}
	ok := []byte{0x82, 0xa1, 'a', 0x01, 0xa1, 'b', 0x02}
	want := cty.ObjectVal(map[string]cty.Value{"a": cty.NumberIntVal(1), "b": cty.NumberIntVal(2)})
	if v, err := u.unpack(ok, ty); err != nil || !v.RawEquals(want) {
		t.Fatalf("unpacked %#v, %v; want %#v", v, err, want)
	}
}

// TestAttrDecoderObjectType: the decoder's request is cty.ObjectVal's, type
// and all, when an attribute of any type changes type between calls and
// back, and when a value is marked; a call whose attributes have the last
// call's types gets the very same object type, not a new one.
func TestAttrDecoderObjectType(t *testing.T) {
	d := newAttrDecoder(cty.Object(map[string]cty.Type{"json": cty.DynamicPseudoType, "path": cty.String}))
	body := func(s string) cty.Value {
		return cty.ObjectVal(map[string]cty.Value{"sku": cty.StringVal(s), "n": cty.NumberIntVal(1)})
	}
	calls := [][]cty.Value{ // by name, sorted: json, path
		{body("a"), cty.StringVal("/1")},
		{body("b"), cty.StringVal("/2")},
		{cty.StringVal("text"), cty.StringVal("/3")},
		{cty.TupleVal([]cty.Value{cty.True}), cty.NullVal(cty.String)},
		{body("c"), cty.StringVal("/4")},
		{body("d"), cty.StringVal("/5").Mark("sensitive")},
	}
	var last cty.Type
	for i, vals := range calls {
		want := cty.ObjectVal(map[string]cty.Value{"json": vals[0], "path": vals[1]})
		got := d.object(append([]cty.Value(nil), vals...))
		if !got.RawEquals(want) || !got.Type().Equals(want.Type()) {
			t.Errorf("call %d: %#v, want %#v", i, got, want)
		}
		if i == 1 && *(*typeLayout)(unsafe.Pointer(&last)) != *(*typeLayout)(unsafe.Pointer(&d.objType)) {
			t.Errorf("call %d: a new object type for the last call's attribute types", i)
		}
		last = d.objType
	}
}

// TestAttrDecoderKeepsValues: an attribute whose bytes are those of one of
// the last calls reaches the plugin as the very same value (what
// docs/plugins.md promises, for the protocols' identity caches), one whose
// bytes changed as a new one.
func TestAttrDecoderKeepsValues(t *testing.T) {
	ty := cty.Object(map[string]cty.Type{"query": cty.Map(cty.String)})
	d := newAttrDecoder(ty)
	var p packer
	enc := func(v cty.Value) []byte {
		b, err := p.pack(nil, v)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	a := cty.MapVal(map[string]cty.Value{"page": cty.StringVal("1")})
	b := cty.MapVal(map[string]cty.Value{"page": cty.StringVal("2")})
	first, err := d.attr(0, enc(a), 0)
	if err != nil {
		t.Fatal(err)
	}
	other, _ := d.attr(0, enc(b), 0)
	again, _ := d.attr(0, enc(a), 0) // fresh bytes, as each batch's are
	if !identical(first, again) || !again.RawEquals(a) {
		t.Errorf("the same bytes again gave %#v, not the very same value as before", again)
	}
	if identical(first, other) || !other.RawEquals(b) {
		t.Errorf("other bytes gave %#v", other)
	}
}

// TestUnpackerObjectNames: objects whose names share their first letters
// and lengths, read by one unpacker as a stream's are, come back as sent,
// each attribute's payload under its own name (a null one too, which
// RawEquals alone would not tell from a missing one).
func TestUnpackerObjectNames(t *testing.T) {
	objs := []cty.Value{
		cty.ObjectVal(map[string]cty.Value{"sku": cty.StringVal("A"), "sort": cty.NumberIntVal(1), "nested": cty.ObjectVal(map[string]cty.Value{
			"none": cty.NullVal(cty.String), "nest": cty.True, "n": cty.StringVal("x"),
		})}),
		cty.ObjectVal(map[string]cty.Value{"ab": cty.StringVal("1"), "ba": cty.StringVal("2"), "a": cty.NullVal(cty.Number)}),
	}
	var p packer
	var u unpacker
	var check func(got, want cty.Value)
	check = func(got, want cty.Value) {
		m, ok := rawAttrs(got)
		if !ok || len(m) != len(want.Type().AttributeTypes()) {
			t.Fatalf("%#v: payload %v", got, m)
		}
		for name := range want.Type().AttributeTypes() {
			if _, ok := m[name]; !ok {
				t.Errorf("%#v: no payload for %q: %v", got, name, m)
			}
			if w := want.GetAttr(name); w.Type().IsObjectType() && !w.IsNull() {
				check(got.GetAttr(name), w)
			}
		}
	}
	for round := range 2 {
		for i, v := range objs {
			b, err := p.pack(nil, v)
			if err != nil {
				t.Fatal(err)
			}
			got, err := u.unpack(b, v.Type())
			if err != nil || !got.RawEquals(v) {
				t.Fatalf("round %d, object %d: %#v, %v", round, i, got, err)
			}
			check(got, v)
		}
	}
}
