package wire

import (
	"math/big"
	"unsafe"

	"github.com/zclconf/go-cty/cty"
)

// Profiled on the bench harness's dynamic POST through a plugin process,
// cty's public API for objects cost both ends a third of their codec:
// GetAttr normalizes the name three times per attribute on the host, and
// ObjectVal builds a new object type (its own map of normalized names) on
// every call on the plugin, for the request and again for its JSON body.
// The names here come from the types' own maps, already normal, and a
// call's request mostly has the last call's type. So the codecs read and
// build an object's payload, a map of the attributes' payloads, the way
// cty does itself, through cty.Value's layout; rawOK turns that off, back
// to the public API, when the layout is not the one checked at start.

// valueLayout is cty.Value's: its type and its payload.
type valueLayout struct {
	ty cty.Type
	v  any
}

// rawOK says whether cty.Value has valueLayout's layout, checked on a
// value of each kind the codecs read or build.
var rawOK = checkRawLayout()

func checkRawLayout() bool {
	if unsafe.Sizeof(cty.Value{}) != unsafe.Sizeof(valueLayout{}) {
		return false
	}
	s, n := cty.StringVal("s"), cty.NumberIntVal(7)
	obj := cty.ObjectVal(map[string]cty.Value{"s": s, "n": n, "z": cty.NullVal(cty.Bool)})
	m, ok := (*valueLayout)(unsafe.Pointer(&obj)).v.(map[string]any)
	if !ok || len(m) != 3 {
		return false
	}
	for name, want := range map[string]cty.Value{"s": s, "n": n, "z": cty.NullVal(cty.Bool)} {
		if !rawValue(want.Type(), m[name]).RawEquals(want) {
			return false
		}
	}
	if t, f := cty.True, cty.False; rawPayload(t) != true || rawPayload(f) != false {
		return false
	}
	built := rawValue(obj.Type(), map[string]any{"s": rawPayload(s), "n": rawPayload(n), "z": nil})
	return built.RawEquals(obj) && built.Type().Equals(obj.Type())
}

// rawValue is the value of type ty with payload v.
func rawValue(ty cty.Type, v any) cty.Value {
	var val cty.Value
	l := (*valueLayout)(unsafe.Pointer(&val))
	l.ty, l.v = ty, v
	return val
}

// rawPayload is v's payload.
func rawPayload(v cty.Value) any {
	return (*valueLayout)(unsafe.Pointer(&v)).v
}

// rawAttrs is the payload of a known, unmarked object that is not null:
// its attributes' payloads by name. ok is false for any other value, or
// when rawOK is.
func rawAttrs(v cty.Value) (map[string]any, bool) {
	if !rawOK {
		return nil, false
	}
	m, ok := rawPayload(v).(map[string]any)
	return m, ok
}

// getAttr is v.GetAttr(name) for a name of v's type, which is normal
// already: without normalizing it, on a known, unmarked object.
func getAttr(v cty.Value, name string) cty.Value {
	if m, ok := rawAttrs(v); ok {
		if aty, ok := v.Type().AttributeTypes()[name]; ok {
			return rawValue(aty, m[name])
		}
	}
	return v.GetAttr(name)
}

// rawNumber is a known number's payload, which its Value methods never
// modify and which must not be modified either: without the copy that
// AsBigFloat makes. ok is false for another value, or when rawOK is.
func rawNumber(v cty.Value) (*big.Float, bool) {
	if !rawOK {
		return nil, false
	}
	f, ok := rawPayload(v).(*big.Float)
	return f, ok
}

// typeLayout is cty.Type's: one interface.
type typeLayout [2]uintptr

// sameType reports whether a and b are equal types: word for word when
// they are the very same, as a type from the stream's table or an
// attribute's unchanged value is on every call, else by Equals.
func sameType(a, b cty.Type) bool {
	if rawOK && unsafe.Sizeof(a) == unsafe.Sizeof(typeLayout{}) &&
		*(*typeLayout)(unsafe.Pointer(&a)) == *(*typeLayout)(unsafe.Pointer(&b)) {
		return true
	}
	return a.Equals(b)
}

// isTrue is v.True() for a known bool that is not null nor marked: its
// payload, without the Equals with cty.True that True makes (a tenth of
// the packer's time on the dynamic POST's one bool).
func isTrue(v cty.Value) bool {
	if rawOK {
		if b, ok := rawPayload(v).(bool); ok {
			return b
		}
	}
	return v.True()
}
