package protocols

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

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
			if err != nil && AttrName(err) != tc.attr {
				t.Errorf("error %q names %q, want %q", err, AttrName(err), tc.attr)
			}
		})
	}
	if v := Attr(obj, "nope"); !v.IsNull() {
		t.Errorf("Attr of an absent attribute = %#v, want null", v)
	}
}

// one wraps v as the attribute "a" of an object, the way a protocol gets it.
func one(v cty.Value) cty.Value { return cty.ObjectVal(map[string]cty.Value{"a": v}) }

// checkErr checks that err is nil when want is "", and otherwise an
// *AttrError naming "a" whose message starts with "a " and holds want.
func checkErr(t *testing.T, err error, want string) {
	t.Helper()
	if want == "" {
		if err != nil {
			t.Fatalf("error %v, want none", err)
		}
		return
	}
	if err == nil {
		t.Fatalf("no error, want one containing %q", want)
	}
	var ae *AttrError
	if !errors.As(err, &ae) || ae.Attr != "a" || AttrName(fmt.Errorf("wrapped: %w", err)) != "a" {
		t.Errorf("error %#v does not name attribute a", err)
	}
	if msg := err.Error(); !strings.HasPrefix(msg, "a ") || !strings.Contains(msg, want) {
		t.Errorf("error %q, want one starting with the attribute and containing %q", msg, want)
	}
}

func TestDurationAttr(t *testing.T) {
	const def = 7 * time.Second
	cases := []struct {
		name string
		v    cty.Value
		want time.Duration
		err  string
	}{
		{"absent gives the default", cty.NullVal(cty.String), def, ""},
		{"string", cty.StringVal("1m30s"), 90 * time.Second, ""},
		{"milliseconds", cty.StringVal("250ms"), 250 * time.Millisecond, ""},
		{"whole seconds", cty.NumberIntVal(2), 2 * time.Second, ""},
		{"fraction of seconds", cty.NumberFloatVal(0.5), 500 * time.Millisecond, ""},
		{"number converted to a string by the schema", cty.StringVal("2"), 2 * time.Second, ""},
		{"fraction as a string", cty.StringVal("0.25"), 250 * time.Millisecond, ""},
		{"huge saturates", cty.NumberFloatVal(1e30), math.MaxInt64, ""},
		{"word", cty.StringVal("fast"), 0, `"fast" is not a duration; write it as "10s"`},
		{"zero", cty.StringVal("0s"), 0, `"0s" must be a positive duration`},
		{"zero number", cty.NumberIntVal(0), 0, `0 must be a positive duration`},
		{"negative", cty.NumberIntVal(-1), 0, `-1 must be a positive duration`},
		{"below a nanosecond", cty.NumberFloatVal(1e-12), 0, `must be a positive duration`},
		{"bool", cty.True, 0, "must be a duration, not a bool"},
		{"list", cty.ListVal([]cty.Value{cty.StringVal("1s")}), 0, "must be a duration, not a list"},
		{"unknown", cty.UnknownVal(cty.String), 0, "is not known"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DurationAttr(one(tc.v), "a", def)
			checkErr(t, err, tc.err)
			if got != tc.want {
				t.Errorf("DurationAttr = %v, want %v", got, tc.want)
			}
		})
	}
	if got, err := DurationAttr(cty.EmptyObjectVal, "a", def); got != def || err != nil {
		t.Errorf("absent attribute: %v, %v", got, err)
	}
}

func TestIntAttr(t *testing.T) {
	cases := []struct {
		name string
		v    cty.Value
		want int
		err  string
	}{
		{"absent gives the default", cty.NullVal(cty.Number), 5, ""},
		{"in range", cty.NumberIntVal(10), 10, ""},
		{"low end", cty.NumberIntVal(1), 1, ""},
		{"high end", cty.NumberIntVal(100), 100, ""},
		{"numeric string", cty.StringVal("42"), 42, ""},
		{"below", cty.NumberIntVal(0), 0, "must be a whole number from 1 to 100, not 0"},
		{"above", cty.NumberIntVal(101), 0, "not 101"},
		{"fraction", cty.NumberFloatVal(1.5), 0, "not 1.5"},
		{"word", cty.StringVal("many"), 0, `must be a number, not "many"`},
		{"bool", cty.False, 0, "must be a number, not a bool"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := IntAttr(one(tc.v), "a", 1, 100, 5)
			checkErr(t, err, tc.err)
			if got != tc.want {
				t.Errorf("IntAttr = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestNumberAttr(t *testing.T) {
	cases := []struct {
		name string
		v    cty.Value
		want float64
		err  string
	}{
		{"absent gives the default", cty.NullVal(cty.Number), 0.5, ""},
		{"fraction", cty.NumberFloatVal(0.25), 0.25, ""},
		{"whole", cty.NumberIntVal(1), 1, ""},
		{"above", cty.NumberFloatVal(1.01), 0, "must be a number from 0 to 1, not 1.01"},
		{"below", cty.NumberIntVal(-1), 0, "not -1"},
		{"word", cty.StringVal("half"), 0, `must be a number, not "half"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := NumberAttr(one(tc.v), "a", 0, 1, 0.5)
			checkErr(t, err, tc.err)
			if got != tc.want {
				t.Errorf("NumberAttr = %g, want %g", got, tc.want)
			}
		})
	}
}

func TestBoolAttr(t *testing.T) {
	cases := []struct {
		name string
		v    cty.Value
		want bool
		err  string
	}{
		{"absent gives the default", cty.NullVal(cty.Bool), true, ""},
		{"false", cty.False, false, ""},
		{"string true", cty.StringVal("true"), true, ""},
		{"word", cty.StringVal("yes"), false, `must be true or false, not "yes"`},
		{"number", cty.NumberIntVal(1), false, "must be true or false, not 1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := BoolAttr(one(tc.v), "a", true)
			checkErr(t, err, tc.err)
			if got != tc.want {
				t.Errorf("BoolAttr = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestStringListAttr(t *testing.T) {
	cases := []struct {
		name string
		v    cty.Value
		want []string
		err  string
	}{
		{"absent", cty.NullVal(cty.List(cty.String)), nil, ""},
		{"list", cty.ListVal([]cty.Value{cty.StringVal("b"), cty.StringVal("a")}), []string{"b", "a"}, ""},
		{"tuple converts numbers", cty.TupleVal([]cty.Value{cty.StringVal("x"), cty.NumberIntVal(3)}), []string{"x", "3"}, ""},
		{"set", cty.SetVal([]cty.Value{cty.StringVal("s")}), []string{"s"}, ""},
		{"empty", cty.ListValEmpty(cty.String), []string{}, ""},
		{"a string", cty.StringVal("x"), nil, "must be a list of strings, not a string"},
		{"an element that is not a string", cty.TupleVal([]cty.Value{cty.StringVal("x"), cty.EmptyObjectVal}), nil, "[1] must be a string, not an object"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := StringListAttr(one(tc.v), "a")
			checkErr(t, err, tc.err)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("StringListAttr = %#v, want %#v", got, tc.want)
			}
		})
	}
}

func TestStringMapAttr(t *testing.T) {
	cases := []struct {
		name string
		v    cty.Value
		want []Pair
		err  string
	}{
		{"absent", cty.NullVal(cty.Map(cty.String)), nil, ""},
		{"map, sorted by key", cty.MapVal(map[string]cty.Value{"b": cty.StringVal("2"), "a": cty.StringVal("1")}),
			[]Pair{{"a", "1"}, {"b", "2"}}, ""},
		{"object converts numbers and skips nulls", cty.ObjectVal(map[string]cty.Value{
			"n": cty.NumberIntVal(3), "s": cty.StringVal("x"), "z": cty.NullVal(cty.String),
		}), []Pair{{"n", "3"}, {"s", "x"}}, ""},
		{"a list", cty.ListVal([]cty.Value{cty.StringVal("x")}), nil, "must be a map of strings"},
		{"an entry that is not a string", cty.ObjectVal(map[string]cty.Value{"k": cty.EmptyTupleVal}),
			nil, `["k"] must be a string, not a list`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := StringMapAttr(one(tc.v), "a")
			checkErr(t, err, tc.err)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("StringMapAttr = %#v, want %#v", got, tc.want)
			}
		})
	}
}
