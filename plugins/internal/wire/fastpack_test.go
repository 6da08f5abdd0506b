package wire

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/msgpack"
)

// TestPackerReadsBackAsGoCty: what the packer writes, go-cty's msgpack
// and the unpacker read back as the value go-cty reads from its own
// encoding, at every size of every header and for
// numbers on each of go-cty's paths; the decimal text it keeps of a
// number is that number's, on the second call too.
func TestPackerReadsBackAsGoCty(t *testing.T) {
	num := func(s string) cty.Value {
		v, err := cty.ParseNumberVal(s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	strs := func(n int) []cty.Value {
		out := make([]cty.Value, n)
		for i := range out {
			out[i] = cty.StringVal(fmt.Sprint(i))
		}
		return out
	}
	strMap := func(n int) map[string]cty.Value {
		out := make(map[string]cty.Value, n)
		for i := range n {
			out[fmt.Sprintf("k%d", i)] = cty.NumberIntVal(int64(i))
		}
		return out
	}
	values := []cty.Value{
		cty.NullVal(cty.String), cty.StringVal(""), cty.StringVal(strings.Repeat("a", 31)), cty.StringVal(strings.Repeat("b", 32)),
		cty.StringVal(strings.Repeat("c", 255)), cty.StringVal(strings.Repeat("d", 256)), cty.StringVal(strings.Repeat("é", 40000)),
		cty.True, cty.False,
		cty.NumberIntVal(0), cty.NumberIntVal(127), cty.NumberIntVal(128), cty.NumberIntVal(-32), cty.NumberIntVal(-33),
		cty.NumberIntVal(math.MaxInt64), cty.NumberIntVal(math.MinInt64), cty.NumberUIntVal(math.MaxUint64),
		num("123456789012345678901234567890"), num("-0.5"), cty.NumberFloatVal(1e300), cty.NumberFloatVal(19.99),
		num("19.99"), num("0.1"), num("19.99"), num("0.1"), cty.PositiveInfinity, cty.NegativeInfinity,
		cty.ListValEmpty(cty.String), cty.ListVal(strs(15)), cty.ListVal(strs(16)), cty.ListVal(strs(70000)),
		cty.ListVal([]cty.Value{cty.NullVal(cty.String), cty.StringVal("x")}),
		cty.SetVal(strs(20)), cty.MapValEmpty(cty.Number), cty.MapVal(strMap(15)), cty.MapVal(strMap(16)), cty.MapVal(strMap(70000)),
		cty.TupleVal([]cty.Value{cty.StringVal("a"), cty.NumberIntVal(1), cty.True, cty.NullVal(cty.Bool)}), cty.EmptyTupleVal,
		cty.EmptyObjectVal,
		cty.ObjectVal(map[string]cty.Value{
			"sku": cty.StringVal("A-100"), "quantity": cty.NumberIntVal(2), "price": num("19.99"), "gift": cty.False,
			"tags":   cty.TupleVal([]cty.Value{cty.StringVal("red"), cty.StringVal("small")}),
			"nested": cty.ObjectVal(map[string]cty.Value{"m": cty.MapVal(strMap(3)), "none": cty.NullVal(cty.List(cty.Number))}),
		}),
	}
	var p packer
	var u unpacker // one for all, as a stream has
	for i, v := range values {
		for round := range 2 { // the second from what the packer kept
			b, err := p.pack(nil, v)
			if err != nil {
				t.Fatalf("value %d: %v", i, err)
			}
			got, err := msgpack.Unmarshal(b, v.Type())
			if err != nil {
				t.Fatalf("value %d, round %d: go-cty reads %x: %v", i, round, b[:min(len(b), 32)], err)
			}
			// go-cty's own round trip is the reference: a whole number
			// too big for an int64 comes back as its shortest decimal
			// text, read at 512 bits, either way (1e300 is not 10^300 as
			// a float64).
			ref, err := msgpack.Marshal(v, v.Type())
			if err != nil {
				t.Fatal(err)
			}
			want, err := msgpack.Unmarshal(ref, v.Type())
			if err != nil {
				t.Fatal(err)
			}
			// The plugin's unpacker reads it as go-cty does, and reads
			// go-cty's own encoding so too, or leaves it to go-cty.
			for _, enc := range [][]byte{b, b, ref} {
				un, err := u.unpack(enc, v.Type())
				if err == errNotPackable && &enc[0] == &ref[0] {
					continue
				}
				if err != nil || !un.RawEquals(want) {
					t.Errorf("value %d, round %d: unpacked %#v, %v; want %#v", i, round, un, err, want)
				}
			}
			if !got.RawEquals(want) {
				t.Errorf("value %d, round %d: read back %#v, want %#v (%x, go-cty %x)", i, round, got, want, b[:min(len(b), 24)], ref[:min(len(ref), 24)])
			}
		}
	}
	for _, v := range []cty.Value{cty.UnknownVal(cty.String), cty.StringVal("s").Mark("sensitive"),
		cty.ListVal([]cty.Value{cty.StringVal("s").Mark("sensitive")}), cty.ListVal([]cty.Value{cty.UnknownVal(cty.String)})} {
		if _, err := p.pack(nil, v); err != errNotPackable {
			t.Errorf("%#v: %v, want errNotPackable", v, err)
		}
	}
}
