package config

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
)

// blockCapture is the type of the capture block inside a request.
const blockCapture = "capture"

// captureWhere names a capture's argument in messages about per-iteration
// values.
const captureWhere = "A capture's argument"

// captureFunction is one capture function: where it reads, and what its
// argument is ("" for none), for messages.
type captureFunction struct {
	source  CaptureSource
	arg     string
	example string
}

// captureFunctions are the capture functions, in the order messages show
// them, with the argument each takes ("" for none).
var captureFunctions = []captureFunction{
	{CaptureJSON, "a JSON path", `json("items.0.id")`},
	{CaptureRegex, "a regular expression", `regex("id=(\\d+)")`},
	{CaptureHeader, "a header name", `header("Location")`},
	{CaptureCookie, "a cookie name", `cookie("session")`},
	{CaptureStatus, "", `status()`},
}

// captureForms lists the capture functions as written, for messages.
func captureForms() string {
	forms := make([]string, len(captureFunctions))
	for i, f := range captureFunctions {
		forms[i] = f.example
	}
	return strings.Join(forms[:len(forms)-1], ", ") + " or " + forms[len(forms)-1]
}

// captureNames returns the names of the capture functions.
func captureNames() []string {
	names := make([]string, len(captureFunctions))
	for i, f := range captureFunctions {
		names[i] = string(f.source)
	}
	return names
}

// decodeCaptures decodes the capture blocks of a request (at most one)
// into r.Captures, in source order.
func (l *loader) decodeCaptures(r *Request, blocks []*hcl.Block) hcl.Diagnostics {
	var diags hcl.Diagnostics
	var first *hcl.Block
	for _, b := range blocks {
		if b.Type != blockCapture {
			continue
		}
		if first != nil {
			diags = append(diags, errorDiag(b.DefRange, "Duplicate capture block",
				"Request %q already has a capture block at %s. Put all its captures in that one block.",
				r.Name, position(first.DefRange)))
			continue
		}
		first = b
		attrs, d := b.Body.JustAttributes()
		diags = append(diags, d...)
		for _, attr := range sortedAttributes(attrs) {
			c, d := l.decodeCapture(attr)
			diags = append(diags, d...)
			if !d.HasErrors() {
				r.Captures = append(r.Captures, c)
			}
		}
	}
	return diags
}

// decodeCapture decodes one capture, such as token = json("token"). The
// call is read, not evaluated: json and regex also name functions of the
// config language, and a capture's argument must be known at load.
func (l *loader) decodeCapture(attr *hcl.Attribute) (Capture, hcl.Diagnostics) {
	c := Capture{Name: attr.Name, DeclRange: attr.Range}
	call, ok := attr.Expr.(*hclsyntax.FunctionCallExpr)
	if !ok {
		return c, hcl.Diagnostics{errorDiag(attr.Expr.Range(), "Invalid capture",
			"A capture says where in the response its value is, with one of the capture functions: %s, such as %s = json(\"id\").",
			captureForms(), attr.Name)}
	}
	i := slices.IndexFunc(captureFunctions, func(f captureFunction) bool {
		return string(f.source) == call.Name
	})
	if i < 0 {
		return c, hcl.Diagnostics{errorDiag(call.NameRange, fmt.Sprintf("Unknown capture function %q", call.Name),
			"%s is not a capture function.%s The capture functions are %s.",
			call.Name, didYouMean(call.Name, captureNames()), captureForms())}
	}
	f := captureFunctions[i]
	c.Source = f.source
	want := 1
	if f.arg == "" {
		want = 0
	}
	if call.ExpandFinal {
		return c, hcl.Diagnostics{errorDiag(call.Range(), "Invalid capture",
			"A capture function takes its argument as written, not expanded with ...; write %s.", f.example)}
	}
	if len(call.Args) != want {
		rng := call.Range()
		if len(call.Args) > want {
			rng = call.Args[want].Range()
		}
		what := "no argument"
		if want == 1 {
			what = "one argument, " + f.arg
		}
		return c, hcl.Diagnostics{errorDiag(rng, fmt.Sprintf("Wrong number of arguments to %s()", call.Name),
			"The capture function %s takes %s, such as %s; got %d arguments.", call.Name, what, f.example, len(call.Args))}
	}
	if want == 0 {
		return c, nil
	}
	arg := call.Args[0]
	v, diags := l.evalStatic(arg, captureWhere)
	if diags.HasErrors() {
		return c, diags
	}
	str := v
	if v.IsKnown() && !v.IsNull() {
		if sv, err := convert.Convert(v, cty.String); err == nil {
			str = sv
		}
	}
	if !str.IsWhollyKnown() || str.IsNull() || str.Type() != cty.String {
		return c, append(diags, errorDiag(arg.Range(), "Invalid capture argument",
			"The argument of %s is %s, a string known when the test is loaded, such as %s; got %s.",
			call.Name, f.arg, f.example, friendlyValue(v)))
	}
	c.Arg = str.AsString()
	switch c.Source {
	case CaptureRegex:
		re, err := regexp.Compile(c.Arg)
		if err != nil {
			return c, append(diags, errorDiag(arg.Range(), "Invalid regular expression",
				"The pattern of regex() does not compile: %s. It uses Go's RE2 syntax; its first group, else the whole match, is captured.", err))
		}
		c.Regexp = re
	case CaptureJSON, CaptureHeader, CaptureCookie:
		if strings.TrimSpace(c.Arg) == "" {
			return c, append(diags, errorDiag(arg.Range(), "Invalid capture argument",
				"The argument of %s is %s and must not be empty, such as %s.", call.Name, f.arg, f.example))
		}
	}
	return c, diags
}

// captureBlockNames returns the names a request block captures, in source
// order, without checking them: the scope of vu.vars is known before any
// request is decoded, whatever the order of the blocks. decodeCaptures
// reports the mistakes.
func captureBlockNames(b *hcl.Block) []string {
	content, _, _ := b.Body.PartialContent(&hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{{Type: blockCapture}}})
	if content == nil || len(content.Blocks) == 0 {
		return nil
	}
	attrs, _ := content.Blocks[0].Body.JustAttributes()
	var names []string
	for _, a := range sortedAttributes(attrs) {
		names = append(names, a.Name)
	}
	return names
}
