package http

import (
	"bytes"
	"math"
	"math/big"
	"regexp"
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"
	ctyjson "github.com/zclconf/go-cty/cty/json"
)

// sameJSON fails t unless appendJSON encodes v to ctyjson.Marshal's bytes,
// or fails where ctyjson fails.
func sameJSON(t *testing.T, v cty.Value) {
	t.Helper()
	want, wantErr := ctyjson.Marshal(v, v.Type())
	got, err := appendJSON([]byte("prefix"), v)
	if !bytes.HasPrefix(got, []byte("prefix")) {
		t.Fatalf("appendJSON(%#v) lost what dst held: %q", v, got)
	}
	got = got[len("prefix"):]
	if (err != nil) != (wantErr != nil) {
		t.Fatalf("appendJSON(%#v) error = %v, ctyjson's = %v", v, err, wantErr)
	}
	if err == nil && !bytes.Equal(got, want) {
		t.Fatalf("appendJSON(%#v) = %s, ctyjson = %s", v, got, want)
	}
}

// quotient is n/d, a number cty computed.
func quotient(n, d int64) cty.Value {
	return cty.NumberIntVal(n).Divide(cty.NumberIntVal(d))
}

func TestJSONMatchesCtyJSON(t *testing.T) {
	str := cty.StringVal
	cases := []struct {
		name string
		v    cty.Value
		want string // "" to compare with ctyjson only
	}{
		{"object", cty.ObjectVal(map[string]cty.Value{
			"user": str("ada@example.com"), "qty": cty.NumberIntVal(3), "price": cty.MustParseNumberVal("12.5"),
			"items": cty.TupleVal([]cty.Value{str("a"), str("b")}), "gift": cty.False,
		}), `{"gift":false,"items":["a","b"],"price":12.5,"qty":3,"user":"ada@example.com"}`},
		{"escapes", str("<a href=\"x\">&\\\n\t\r\b\f\x01\x7f\u2028\u2029é</a>"),
			`"\u003ca href=\"x\"\u003e\u0026\\\n\t\r\b\f\u0001` + "\x7f" + `\u2028\u2029é\u003c/a\u003e"`},
		{"invalid utf-8", cty.ObjectVal(map[string]cty.Value{"k": str("a\xffb")}), ""},
		{"decimal", cty.MustParseNumberVal("0.1"), "0.1"},
		{"price", cty.MustParseNumberVal("19.99"), "19.99"},
		{"long decimal", cty.MustParseNumberVal("0.12345678901234567890123"), "0.12345678901234567890123"},
		{"price at 64 bits", cty.NumberVal(new(big.Float).SetPrec(64).SetFloat64(19.99).Quo(big.NewFloat(3).SetPrec(64), big.NewFloat(7).SetPrec(64))), ""},
		{"price at 24 bits", cty.NumberVal(new(big.Float).SetPrec(24).SetFloat64(19.99)), ""},
		{"float64 tenth", cty.NumberFloatVal(0.1), "0.1"},
		{"float64 tenth at 512 bits", cty.NumberVal(new(big.Float).SetPrec(512).SetFloat64(0.1)),
			"0.1000000000000000055511151231257827021181583404541015625"},
		{"a third", quotient(1, 3), ""},
		{"a quarter", quotient(1, 4), "0.25"},
		{"just above a quarter", cty.NumberVal(new(big.Float).SetPrec(512).SetMantExp(new(big.Float).SetPrec(512).SetInt64(1<<60+1), -62)), ""},
		{"negative", cty.MustParseNumberVal("-7.75"), "-7.75"},
		{"negative zero", cty.NumberFloatVal(math.Copysign(0, -1)), ""},
		{"zero", cty.Zero, "0"},
		{"huge", cty.MustParseNumberVal("1e300"), ""},
		{"huge float64", cty.NumberFloatVal(1e300), ""},
		{"tiny", cty.NumberFloatVal(5e-324), ""},
		{"beyond int64", cty.MustParseNumberVal("123456789012345678901234567890"), "123456789012345678901234567890"},
		{"uint64", cty.NumberUIntVal(math.MaxUint64), "18446744073709551615"},
		{"int64", cty.NumberIntVal(math.MinInt64), "-9223372036854775808"},
		{"list", cty.ListVal([]cty.Value{cty.NumberIntVal(1), cty.NumberIntVal(2)}), "[1,2]"},
		{"set", cty.SetVal([]cty.Value{str("b"), str("a")}), `["a","b"]`},
		{"map", cty.MapVal(map[string]cty.Value{"z": cty.True, "<": cty.NullVal(cty.Bool)}), `{"\u003c":null,"z":true}`},
		{"empty", cty.EmptyObjectVal, "{}"},
		{"empty tuple", cty.EmptyTupleVal, "[]"},
		{"null", cty.NullVal(cty.String), "null"},
		{"null object", cty.NullVal(cty.Object(map[string]cty.Type{"a": cty.String})), "null"},
		{"nested", cty.ObjectVal(map[string]cty.Value{"a": cty.ListVal([]cty.Value{
			cty.ObjectVal(map[string]cty.Value{"b": cty.NullVal(cty.DynamicPseudoType)}),
		})}), `{"a":[{"b":null}]}`},
		{"list of dynamic", cty.ListVal([]cty.Value{cty.NullVal(cty.DynamicPseudoType)}), ""},
		{"many attributes", manyAttributes(40), ""},
		{"infinity", cty.ObjectVal(map[string]cty.Value{"n": cty.PositiveInfinity}), ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sameJSON(t, tc.v)
			if tc.want != "" {
				got, _ := appendJSON(nil, tc.v)
				if string(got) != tc.want {
					t.Errorf("appendJSON = %s, want %s", got, tc.want)
				}
			}
		})
	}
}

func manyAttributes(n int) cty.Value {
	attrs := map[string]cty.Value{}
	for i := range n {
		attrs[strings.Repeat("k", i+1)] = cty.NumberIntVal(int64(i))
	}
	return cty.ObjectVal(attrs)
}

// TestJSONFastPath checks that the shapes a request body has are encoded
// by appendJSON itself, not handed to ctyjson, and that what it cannot
// encode is.
func TestJSONFastPath(t *testing.T) {
	fast := []cty.Value{
		cty.ObjectVal(map[string]cty.Value{
			"user": cty.StringVal("ada"), "qty": cty.NumberIntVal(3), "price": cty.MustParseNumberVal("12.5"),
			"third": quotient(1, 3), "tenth": cty.NumberFloatVal(0.1), "big": cty.MustParseNumberVal("1e40"),
			"decimal": cty.MustParseNumberVal("19.99"),
			"items":   cty.TupleVal([]cty.Value{cty.StringVal("a"), cty.True}),
			"list":    cty.ListVal([]cty.Value{cty.NumberIntVal(1)}),
			"map":     cty.MapVal(map[string]cty.Value{"k": cty.StringVal("v")}),
			"set":     cty.SetVal([]cty.Value{cty.StringVal("v")}),
			"none":    cty.NullVal(cty.String),
		}),
	}
	for _, v := range fast {
		if _, ok := appendJSONValue(nil, v, v.Type()); !ok {
			t.Errorf("appendJSONValue(%#v) handed the value to ctyjson", v)
		}
	}
	slow := []cty.Value{
		cty.PositiveInfinity,
		cty.ObjectVal(map[string]cty.Value{"n": cty.NegativeInfinity}),
		cty.StringVal("x").Mark("sensitive"),
	}
	for _, v := range slow {
		if _, ok := appendJSONValue(nil, v, v.Type()); ok {
			t.Errorf("appendJSONValue(%#v) encoded what ctyjson must judge", v)
		}
	}
	if _, err := appendJSON(nil, cty.PositiveInfinity); err == nil || !strings.Contains(err.Error(), "infinity") {
		t.Errorf("appendJSON(infinity) error = %v, want ctyjson's about infinity", err)
	}
}

// FuzzJSON holds appendJSON to ctyjson.Marshal's bytes for strings,
// numbers of every precision cty makes (a float64's, an int64's, a
// uint64's, the 512 bits of a number HCL parsed, a quotient's), and the structures JSON
// text and the fuzzer's values build.
func FuzzJSON(f *testing.F) {
	f.Add(`{"a":1,"b":[1.5,"x",true,null],"c":{"<":"\u2028"}}`, 0.1, int64(3), int64(7))
	f.Add("12.5", 12.5, int64(-1), int64(3))
	f.Add("0.1", 1e300, int64(math.MaxInt64), int64(10))
	f.Add("1e-7", 5e-324, int64(math.MinInt64), int64(-3))
	f.Add("a\xffb<&>\x00", math.Copysign(0, -1), int64(0), int64(0))
	f.Add("[]", 123456.789, int64(1)<<53+1, int64(1000))
	f.Fuzz(func(t *testing.T, text string, x float64, n, d int64) {
		var values []cty.Value
		add := func(v cty.Value) { values = append(values, v) }
		add(cty.StringVal(text))
		add(cty.NumberIntVal(n))
		add(cty.NumberUIntVal(uint64(n)))
		if !math.IsNaN(x) {
			add(cty.NumberFloatVal(x))
			add(cty.NumberVal(new(big.Float).SetPrec(512).SetFloat64(x)))
			if d != 0 && !math.IsInf(x, 0) {
				add(cty.NumberFloatVal(x).Divide(cty.NumberIntVal(d)))
			}
		}
		if d != 0 {
			add(quotient(n, d))
		}
		// Reading 1e999999999 takes math/big the fuzzer's time.
		if !hugeExponent.MatchString(text) {
			if v, err := cty.ParseNumberVal(text); err == nil {
				add(v)
				if d != 0 && v.IsKnown() && !v.AsBigFloat().IsInf() {
					add(v.Divide(cty.NumberIntVal(d)))
				}
			}
			if ty, err := ctyjson.ImpliedType([]byte(text)); err == nil {
				if v, err := ctyjson.Unmarshal([]byte(text), ty); err == nil {
					add(v)
				}
			}
		}
		add(cty.ObjectVal(map[string]cty.Value{text: cty.TupleVal(values)}))
		add(cty.MapVal(map[string]cty.Value{text: cty.StringVal(text), "n": cty.StringVal(text + "n")}))
		add(cty.SetVal([]cty.Value{cty.StringVal(text), cty.StringVal("<" + text)}))
		for _, v := range values {
			if tame(v) {
				sameJSON(t, v)
			}
		}
	})
}

// hugeExponent matches a number's exponent of four digits or more.
var hugeExponent = regexp.MustCompile(`[eE][+-]?0*[0-9]{4}`)

// tame reports whether every number in v is within 2^±4096: printing
// 1e999999999 in full, as both encoders would, takes the fuzzer's time
// and tells nothing new.
func tame(v cty.Value) bool {
	ok := true
	cty.Walk(v, func(_ cty.Path, e cty.Value) (bool, error) {
		if e.Type() == cty.Number && e.IsKnown() && !e.IsNull() {
			if f := e.AsBigFloat(); !f.IsInf() {
				if exp := f.MantExp(nil); exp > 4096 || exp < -4096 {
					ok = false
				}
			}
		}
		return ok, nil
	})
	return ok
}

// BenchmarkJSON compares appendJSON with ctyjson.Marshal on the body of
// BenchmarkRequests' POST plus a total of 19.99, its numbers as HCL makes
// them: parsed at 512 bits (price, qty, total) and from vu.id and
// random_int.
func BenchmarkJSON(b *testing.B) {
	v := cty.ObjectVal(map[string]cty.Value{
		"user": cty.StringVal("user7@example.com"), "qty": cty.MustParseNumberVal("3"), "total": cty.MustParseNumberVal("19.99"),
		"vu": cty.NumberUIntVal(1), "iteration": cty.NumberUIntVal(12345), "price": cty.MustParseNumberVal("12.5"),
		"items": cty.TupleVal([]cty.Value{cty.StringVal("a"), cty.StringVal("b")}), "gift": cty.False,
	})
	b.Run("appendJSON", func(b *testing.B) {
		b.ReportAllocs()
		var buf []byte
		for b.Loop() {
			buf, _ = appendJSON(buf[:0], v)
		}
	})
	b.Run("ctyjson", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			ctyjson.Marshal(v, v.Type())
		}
	})
}
