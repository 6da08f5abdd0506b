package protocols

import (
	"fmt"

	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
)

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
		return "", fmt.Errorf("%s is not known", name)
	}
	if v.Type() != cty.String {
		c, err := convert.Convert(v, cty.String)
		if err != nil {
			return "", fmt.Errorf("%s must be a string: %v", name, err)
		}
		v = c
	}
	return v.AsString(), nil
}
