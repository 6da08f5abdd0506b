package sdk

import (
	"time"

	"github.com/zclconf/go-cty/cty"

	"github.com/hload/hload/protocols"
)

// The attribute helpers read one attribute of the target or request value
// a plugin's Open, Do and validators receive. They are hload's own, the
// ones its built-in protocols use, so a plugin accepts and refuses values
// as they do: a duration is "10s" or a number of seconds, a number that is
// not whole is refused where a whole one is wanted, and so on. Each returns
// its default when the attribute is absent or null, and on a bad value an
// *AttrError whose message starts with the attribute's name, ready for a
// validator's (attr, err). Go has no alias for a function, so each is a
// function of its own that calls hload's, as io/ioutil's call io's.

// AttrError is a value that does not fit its attribute; AttrName finds the
// attribute in an error that wraps one.
type AttrError = protocols.AttrError

// Pair is one entry of a map of strings, as StringMapAttr returns them.
type Pair = protocols.Pair

// AttrErrorf returns an *AttrError for attr whose message is attr followed
// by the formatted text.
func AttrErrorf(attr, format string, args ...any) *AttrError {
	return protocols.AttrErrorf(attr, format, args...)
}

// AttrName returns the attribute an error names, or "" when it wraps no
// *AttrError.
func AttrName(err error) string { return protocols.AttrName(err) }

// Attr returns obj's attribute name, unmarked, or null when obj has no such
// attribute.
func Attr(obj cty.Value, name string) cty.Value { return protocols.Attr(obj, name) }

// StringAttr returns obj's attribute name as a string, converting a number
// or bool as HCL would; "" when it is absent or null.
func StringAttr(obj cty.Value, name string) (string, error) {
	return protocols.StringAttr(obj, name)
}

// DurationAttr returns obj's attribute name as a positive duration, written
// as "10s", "1m30s" or a number of seconds (2, 0.5, or "2" from a string
// attribute); def when it is absent or null.
func DurationAttr(obj cty.Value, name string, def time.Duration) (time.Duration, error) {
	return protocols.DurationAttr(obj, name, def)
}

// IntAttr returns obj's attribute name as a whole number from lo to hi; def
// when it is absent or null.
func IntAttr(obj cty.Value, name string, lo, hi, def int) (int, error) {
	return protocols.IntAttr(obj, name, lo, hi, def)
}

// NumberAttr returns obj's attribute name as a number from lo to hi; def
// when it is absent or null.
func NumberAttr(obj cty.Value, name string, lo, hi, def float64) (float64, error) {
	return protocols.NumberAttr(obj, name, lo, hi, def)
}

// BoolAttr returns obj's attribute name as a bool; def when it is absent or
// null.
func BoolAttr(obj cty.Value, name string, def bool) (bool, error) {
	return protocols.BoolAttr(obj, name, def)
}

// StringListAttr returns obj's attribute name, a list, set or tuple of
// strings, in order; nil when it is absent or null.
func StringListAttr(obj cty.Value, name string) ([]string, error) {
	return protocols.StringListAttr(obj, name)
}

// StringMapAttr returns obj's attribute name, a map or object of strings,
// as pairs sorted by key; nil when it is absent or null.
func StringMapAttr(obj cty.Value, name string) ([]Pair, error) {
	return protocols.StringMapAttr(obj, name)
}
