package config

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

// errorDiag returns an error diagnostic on rng.
func errorDiag(rng hcl.Range, summary, detail string, args ...any) *hcl.Diagnostic {
	return &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  summary,
		Detail:   fmt.Sprintf(detail, args...),
		Subject:  rng.Ptr(),
	}
}

// duplicateDiag reports a second definition of name and says where the
// first one is, so the user can pick which to rename.
func duplicateDiag(kind, name string, rng, earlier hcl.Range) *hcl.Diagnostic {
	return errorDiag(rng, fmt.Sprintf("Duplicate %s %q", kind, name),
		"A %s named %q is already defined at %s. Each %s needs its own name.",
		kind, name, position(earlier), kind)
}

// typeDiag reports a value that cannot be converted to the wanted type.
func typeDiag(attr *hcl.Attribute, err error) *hcl.Diagnostic {
	return errorDiag(attr.Expr.Range(), "Incorrect attribute value type",
		"Inappropriate value for attribute %q: %s.", attr.Name, err)
}

// position formats a range start as file:line,column, as hcl does.
func position(rng hcl.Range) string {
	return fmt.Sprintf("%s:%d,%d", rng.Filename, rng.Start.Line, rng.Start.Column)
}

// quoteList formats names as "a", "b" and "c" for a message.
func quoteList(names []string) string {
	switch len(names) {
	case 0:
		return "(none)"
	case 1:
		return fmt.Sprintf("%q", names[0])
	}
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(q[:len(q)-1], ", ") + " and " + q[len(q)-1]
}

// didYouMean returns ` Did you mean "x"?` when one of options is close to
// name, or "".
func didYouMean(name string, options []string) string {
	best, bestDist := "", 3 // further than 2 edits is rarely a typo
	for _, o := range options {
		if d := editDistance(strings.ToLower(name), strings.ToLower(o)); d < bestDist {
			best, bestDist = o, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" Did you mean %q?", best)
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}

// sortedAttributes returns attrs in source order, so that diagnostics come
// out in the order the user wrote things.
func sortedAttributes(attrs hcl.Attributes) []*hcl.Attribute {
	list := make([]*hcl.Attribute, 0, len(attrs))
	for _, a := range attrs {
		list = append(list, a)
	}
	sort.Slice(list, func(i, j int) bool {
		a, b := list[i].Range, list[j].Range
		if a.Filename != b.Filename {
			return a.Filename < b.Filename
		}
		return a.Start.Byte < b.Start.Byte
	})
	return list
}

// traversalString renders a traversal such as vu.id for a message.
func traversalString(t hcl.Traversal) string {
	var b strings.Builder
	for _, step := range t {
		switch s := step.(type) {
		case hcl.TraverseRoot:
			b.WriteString(s.Name)
		case hcl.TraverseAttr:
			b.WriteString("." + s.Name)
		case hcl.TraverseIndex:
			if s.Key.Type() == cty.String && s.Key.IsKnown() && !s.Key.IsNull() {
				fmt.Fprintf(&b, "[%q]", s.Key.AsString())
			} else {
				b.WriteString("[...]")
			}
		default:
			b.WriteString("[...]")
		}
	}
	return b.String()
}

// stepName returns the attribute name of a traversal step such as .id or
// ["id"], or "" when the step is something else.
func stepName(step hcl.Traverser) string {
	switch s := step.(type) {
	case hcl.TraverseAttr:
		return s.Name
	case hcl.TraverseIndex:
		if s.Key.Type() == cty.String && s.Key.IsKnown() && !s.Key.IsNull() {
			return s.Key.AsString()
		}
	}
	return ""
}

// hclNoAttribute is how hcl details a traversal to an attribute that an
// object does not have.
const hclNoAttribute = "This object does not have an attribute named "

// withAttributeHints rewrites hcl's "Unsupported attribute" errors on a
// traversal, such as var.base_ur or local.obj.nme, to say what the object
// has and which name is close, as hload's own errors about vu and data
// do. hcl's text names neither.
func withAttributeHints(diags hcl.Diagnostics) hcl.Diagnostics {
	for _, d := range diags {
		if d.Summary != "Unsupported attribute" || d.EvalContext == nil {
			continue
		}
		rest, ok := strings.CutPrefix(d.Detail, hclNoAttribute)
		if !ok {
			continue
		}
		name, err := strconv.Unquote(strings.TrimSuffix(rest, "."))
		expr, isTraversal := d.Expression.(*hclsyntax.ScopeTraversalExpr)
		if err != nil || !isTraversal {
			continue
		}
		if detail := attributeHint(expr.Traversal, name, d.EvalContext); detail != "" {
			d.Detail = detail
		}
	}
	return diags
}

// attributeHint details the missing attribute name of traversal t, or
// returns "" when the object before it cannot be found again.
func attributeHint(t hcl.Traversal, name string, ctx *hcl.EvalContext) string {
	at := -1
	for i := 1; i < len(t); i++ {
		if stepName(t[i]) == name {
			at = i
			break
		}
	}
	if at < 0 {
		return ""
	}
	obj, diags := t[:at].TraverseAbs(ctx)
	if diags.HasErrors() || !obj.Type().IsObjectType() {
		return ""
	}
	var names []string
	for n := range obj.Type().AttributeTypes() {
		names = append(names, n)
	}
	sort.Strings(names)
	hint := didYouMean(name, names)
	switch {
	case at == 1 && t.RootName() == "var":
		return fmt.Sprintf("No variable block declares %q.%s Declared variables: %s.", name, hint, shortList(names))
	case at == 1 && t.RootName() == "local":
		return fmt.Sprintf("No locals block sets %q.%s Local values: %s.", name, hint, shortList(names))
	}
	return fmt.Sprintf("%s has no attribute %q.%s It has %s.", traversalString(t[:at]), name, hint, shortList(names))
}

// shortList is quoteList for lists that may be long: past a screen's
// width, it names the first few and counts the rest.
func shortList(names []string) string {
	const shown = 12
	if len(names) <= shown {
		return quoteList(names)
	}
	return fmt.Sprintf("%s and %d more", strings.Join(quoteAll(names[:shown]), ", "), len(names)-shown)
}

// quoteAll quotes each of names.
func quoteAll(names []string) []string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = strconv.Quote(n)
	}
	return q
}
