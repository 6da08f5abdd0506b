package protocols

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"time"

	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
)

// The attribute helpers below read one attribute of a target's or a
// request's values, as the core hands them to a protocol, in-process or
// behind a plugin. Each returns the default when the attribute is absent or
// null, and an *AttrError naming the attribute when its value does not fit,
// so that a protocol's ValidateTarget and ValidateRequest can say which
// attribute is at fault with errors.As.

// AttrError is a value that does not fit its attribute. Its message starts
// with the attribute's name, so it reads well on its own.
type AttrError struct {
	Attr string
	Err  error
}

func (e *AttrError) Error() string { return e.Err.Error() }

func (e *AttrError) Unwrap() error { return e.Err }

// AttrErrorf returns an *AttrError for attr whose message is attr followed
// by the formatted text: AttrErrorf("method", "%q is not ...", m) reads
// `method "GTE" is not ...`.
func AttrErrorf(attr, format string, args ...any) *AttrError {
	return &AttrError{Attr: attr, Err: fmt.Errorf(attr+" "+format, args...)}
}

// AttrName returns the attribute an error names, or "" when err is not, or
// does not wrap, an *AttrError.
func AttrName(err error) string {
	var ae *AttrError
	if errors.As(err, &ae) {
		return ae.Attr
	}
	return ""
}

// Attr returns obj's attribute name, unmarked, or a null value when obj has
// no such attribute, so that a caller that leaves an optional attribute out
// entirely is treated like one that passes null. Protocols read their
// target and request values with it, in-process or behind a plugin.
func Attr(obj cty.Value, name string) cty.Value {
	if obj.IsNull() || !obj.IsKnown() || !obj.Type().IsObjectType() || !obj.Type().HasAttribute(name) {
		return cty.NullVal(cty.DynamicPseudoType)
	}
	v, _ := obj.GetAttr(name).Unmark()
	return v
}

// StringAttr returns obj's attribute name as a string, converting a number
// or bool as HCL would; "" when it is absent or null.
func StringAttr(obj cty.Value, name string) (string, error) {
	v := Attr(obj, name)
	if v.IsNull() {
		return "", nil
	}
	if !v.IsKnown() {
		return "", AttrErrorf(name, "is not known")
	}
	if v.Type() != cty.String {
		c, err := convert.Convert(v, cty.String)
		if err != nil {
			return "", AttrErrorf(name, "must be a string, not %s", friendlyType(v))
		}
		v = c
	}
	return v.AsString(), nil
}

// DurationAttr returns obj's attribute name as a positive duration, written
// as a string that time.ParseDuration reads ("10s", "1m30s", "250ms") or as
// a number of seconds (2, 0.5). A number may arrive as a string, because
// an attribute whose schema type is string converts it ("2"); it still
// means seconds. def is returned when the attribute is absent or null.
func DurationAttr(obj cty.Value, name string, def time.Duration) (time.Duration, error) {
	v := Attr(obj, name)
	if v.IsNull() {
		return def, nil
	}
	const form = `write it as "10s", "1m30s" or a number of seconds such as 2 or 0.5`
	if !v.IsKnown() {
		return 0, AttrErrorf(name, "is not known")
	}
	var d time.Duration
	switch v.Type() {
	case cty.Number:
		f, _ := v.AsBigFloat().Float64()
		if d = secondsDuration(f); d <= 0 {
			return 0, AttrErrorf(name, "%s must be a positive duration; %s", v.AsBigFloat().Text('g', -1), form)
		}
	case cty.String:
		s := strings.TrimSpace(v.AsString())
		pd, err := time.ParseDuration(s)
		if err != nil {
			f, ferr := strconv.ParseFloat(s, 64)
			if ferr != nil {
				return 0, AttrErrorf(name, "%q is not a duration; %s", v.AsString(), form)
			}
			pd = secondsDuration(f)
		}
		if d = pd; d <= 0 {
			return 0, AttrErrorf(name, "%q must be a positive duration; %s", v.AsString(), form)
		}
	default:
		return 0, AttrErrorf(name, "must be a duration, not %s; %s", friendlyType(v), form)
	}
	return d, nil
}

// secondsDuration converts a number of seconds, saturating where a
// time.Duration ends; NaN and anything below a nanosecond give 0.
func secondsDuration(f float64) time.Duration {
	ns := f * float64(time.Second)
	switch {
	case math.IsNaN(ns) || ns < 1:
		return 0
	case ns >= math.MaxInt64:
		return math.MaxInt64
	}
	return time.Duration(ns)
}

// IntAttr returns obj's attribute name as a whole number from lo to hi;
// def when it is absent or null.
func IntAttr(obj cty.Value, name string, lo, hi, def int) (int, error) {
	v := Attr(obj, name)
	if v.IsNull() {
		return def, nil
	}
	bf, err := bigNumber(v, name)
	if err != nil {
		return 0, err
	}
	if !bf.IsInt() || bf.Cmp(big.NewFloat(float64(lo))) < 0 || bf.Cmp(big.NewFloat(float64(hi))) > 0 {
		return 0, AttrErrorf(name, "must be a whole number from %d to %d, not %s", lo, hi, bf.Text('g', -1))
	}
	n, _ := bf.Int64()
	return int(n), nil
}

// NumberAttr returns obj's attribute name as a number from lo to hi; def
// when it is absent or null.
func NumberAttr(obj cty.Value, name string, lo, hi, def float64) (float64, error) {
	v := Attr(obj, name)
	if v.IsNull() {
		return def, nil
	}
	bf, err := bigNumber(v, name)
	if err != nil {
		return 0, err
	}
	f, _ := bf.Float64()
	if bf.IsInf() || f < lo || f > hi {
		return 0, AttrErrorf(name, "must be a number from %g to %g, not %s", lo, hi, bf.Text('g', -1))
	}
	return f, nil
}

func bigNumber(v cty.Value, name string) (*big.Float, error) {
	if !v.IsKnown() {
		return nil, AttrErrorf(name, "is not known")
	}
	c, err := convert.Convert(v, cty.Number)
	if err != nil || c.IsNull() {
		if v.Type() == cty.String {
			return nil, AttrErrorf(name, "must be a number, not %q", v.AsString())
		}
		return nil, AttrErrorf(name, "must be a number, not %s", friendlyType(v))
	}
	return c.AsBigFloat(), nil
}

// BoolAttr returns obj's attribute name as a bool, converting "true" and
// "false" as HCL would; def when it is absent or null.
func BoolAttr(obj cty.Value, name string, def bool) (bool, error) {
	v := Attr(obj, name)
	if v.IsNull() {
		return def, nil
	}
	if !v.IsKnown() {
		return false, AttrErrorf(name, "is not known")
	}
	c, err := convert.Convert(v, cty.Bool)
	if err != nil || c.IsNull() {
		return false, AttrErrorf(name, "must be true or false, not %s", friendlyValue(v))
	}
	return c.True(), nil
}

// StringListAttr returns obj's attribute name, a list, set or tuple of
// strings (numbers and bools convert as HCL would), in order; nil when it
// is absent or null.
func StringListAttr(obj cty.Value, name string) ([]string, error) {
	v := Attr(obj, name)
	if v.IsNull() {
		return nil, nil
	}
	if !v.IsWhollyKnown() {
		return nil, AttrErrorf(name, "is not known")
	}
	if t := v.Type(); !t.IsListType() && !t.IsSetType() && !t.IsTupleType() {
		return nil, AttrErrorf(name, "must be a list of strings, not %s", friendlyType(v))
	}
	out := make([]string, 0, v.LengthInt())
	for it := v.ElementIterator(); it.Next(); {
		_, e := it.Element()
		e, _ = e.Unmark()
		s, err := convert.Convert(e, cty.String)
		if err != nil || s.IsNull() {
			return nil, AttrErrorf(name, "[%d] must be a string, not %s", len(out), friendlyValue(e))
		}
		out = append(out, s.AsString())
	}
	return out, nil
}

// Pair is one entry of a map of strings.
type Pair struct {
	Key, Value string
}

// StringMapAttr returns obj's attribute name, a map or an object of
// strings (numbers and bools convert as HCL would), as pairs sorted by
// key; nil when it is absent or null. Null entries are left out. An object
// is accepted as well as a map because a value that crossed the plugin
// wire, or came from an HCL object literal, may not have been converted.
func StringMapAttr(obj cty.Value, name string) ([]Pair, error) {
	v := Attr(obj, name)
	if v.IsNull() {
		return nil, nil
	}
	if !v.IsKnown() {
		return nil, AttrErrorf(name, "is not known")
	}
	if t := v.Type(); !t.IsMapType() && !t.IsObjectType() {
		return nil, AttrErrorf(name, "must be a map of strings, such as { key = \"value\" }, not %s", friendlyType(v))
	}
	out := make([]Pair, 0, v.LengthInt())
	for it := v.ElementIterator(); it.Next(); {
		k, e := it.Element()
		e, _ = e.Unmark()
		if e.IsNull() {
			continue
		}
		s, err := convert.Convert(e, cty.String)
		if err != nil || !s.IsKnown() {
			return nil, AttrErrorf(name, "[%q] must be a string, not %s", k.AsString(), friendlyValue(e))
		}
		out = append(out, Pair{Key: k.AsString(), Value: s.AsString()})
	}
	return out, nil
}

// friendlyType names v's type as the HCL user writes it.
func friendlyType(v cty.Value) string {
	t := v.Type()
	switch {
	case t == cty.String:
		return "a string"
	case t == cty.Number:
		return "a number"
	case t == cty.Bool:
		return "a bool"
	case t.IsListType() || t.IsTupleType() || t.IsSetType():
		return "a list"
	case t.IsMapType() || t.IsObjectType():
		return "an object"
	}
	return t.FriendlyName()
}

// friendlyValue shows a short value as the user wrote it, else its type.
func friendlyValue(v cty.Value) string {
	if !v.IsKnown() || v.IsNull() {
		return friendlyType(v)
	}
	switch v.Type() {
	case cty.String:
		return strconv.Quote(v.AsString())
	case cty.Number:
		return v.AsBigFloat().Text('g', -1)
	case cty.Bool:
		return strconv.FormatBool(v.True())
	}
	return friendlyType(v)
}
