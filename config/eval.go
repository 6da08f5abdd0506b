package config

import (
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
)

// checkStatic reports each use of a per-iteration value (vu, scenario,
// data) in traversals that are evaluated once at load. where names the
// place for the message, such as "a target block".
func checkStatic(traversals []hcl.Traversal, where string) hcl.Diagnostics {
	var diags hcl.Diagnostics
	for _, t := range traversals {
		switch t.RootName() {
		case rootVU, rootScenario, rootData:
			diags = append(diags, errorDiag(t.SourceRange(), "Per-iteration value not allowed here",
				"%s changes with every iteration, so only request attributes can use it. %s is evaluated once, when the test is loaded.",
				traversalString(t), where))
		}
	}
	return diags
}

// evalStatic evaluates an expression that is fixed for the whole run. The
// value is plain: its sensitive parts are recorded and unmarked.
func (l *loader) evalStatic(expr hcl.Expression, where string) (cty.Value, hcl.Diagnostics) {
	diags := checkStatic(expr.Variables(), where)
	if diags.HasErrors() {
		return cty.DynamicVal, diags
	}
	v, more := expr.Value(l.static)
	return l.secrets.plain(v), append(diags, more...)
}

// staticValue evaluates attr once and converts it to ty. ok is false when
// the attribute is unusable: an error was reported, or the value is null
// (which means "not set").
func (l *loader) staticValue(attr *hcl.Attribute, ty cty.Type, where string) (v cty.Value, ok bool, diags hcl.Diagnostics) {
	v, diags = l.evalStatic(attr.Expr, where)
	if diags.HasErrors() || !v.IsWhollyKnown() || v.IsNull() {
		// Unknown values come only from mistakes already reported.
		return cty.NilVal, false, diags
	}
	v, err := convert.Convert(v, ty)
	if err != nil {
		return cty.NilVal, false, append(diags, typeDiag(attr, err))
	}
	return v, true, diags
}

// stringAttr evaluates a static string attribute.
func (l *loader) stringAttr(attr *hcl.Attribute, where string) (string, bool, hcl.Diagnostics) {
	v, ok, diags := l.staticValue(attr, cty.String, where)
	if !ok {
		return "", false, diags
	}
	return v.AsString(), true, diags
}

// boolAttr evaluates a static bool attribute.
func (l *loader) boolAttr(attr *hcl.Attribute, where string) (bool, bool, hcl.Diagnostics) {
	v, ok, diags := l.staticValue(attr, cty.Bool, where)
	if !ok {
		return false, false, diags
	}
	return v.True(), true, diags
}

// intAttr evaluates a static whole-number attribute that must be at least
// minimum. what describes the number for the message.
func (l *loader) intAttr(attr *hcl.Attribute, minimum int, what, where string) (int, bool, hcl.Diagnostics) {
	v, ok, diags := l.staticValue(attr, cty.Number, where)
	if !ok {
		return 0, false, diags
	}
	n, whole := wholeNumber(v)
	if !whole || n < int64(minimum) || n > maxInt {
		return 0, false, append(diags, errorDiag(attr.Expr.Range(), "Invalid "+attr.Name,
			"%s must be a whole number from %d to %d (%s); got %s.", attr.Name, minimum, maxInt, what, numberString(v)))
	}
	return int(n), true, diags
}

// maxInt bounds every whole number a config sets, far above any sane value,
// so that conversions never overflow.
const maxInt = 1 << 31

// durationAttr evaluates a static duration attribute that must not be
// negative, or must be positive when positive is set.
func (l *loader) durationAttr(attr *hcl.Attribute, positive bool, where string) (time.Duration, bool, hcl.Diagnostics) {
	v, diags := l.evalStatic(attr.Expr, where)
	if diags.HasErrors() || !v.IsWhollyKnown() || v.IsNull() {
		return 0, false, diags
	}
	d, err := durationFromValue(v)
	if err != nil {
		return 0, false, append(diags, errorDiag(attr.Expr.Range(), "Invalid duration",
			"Invalid value for %s: %s.", attr.Name, err))
	}
	return d, checkDuration(d, positive, attr.Name, attr.Expr.Range(), &diags), diags
}

// checkDuration reports a negative duration, or a zero one when positive is
// set, and returns whether d is fine.
func checkDuration(d time.Duration, positive bool, name string, rng hcl.Range, diags *hcl.Diagnostics) bool {
	switch {
	case d < 0:
		*diags = append(*diags, errorDiag(rng, "Invalid duration", "%s must not be negative; got %s.", name, d))
		return false
	case d == 0 && positive:
		*diags = append(*diags, errorDiag(rng, "Invalid duration", "%s must be longer than zero.", name))
		return false
	}
	return true
}
