package config

import (
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

// Sensitive values.
//
// A variable with sensitive = true, a variable set from HLOAD_VAR_<name>
// (unless it says sensitive = false) and every value env() returns are
// sensitive. Their values carry sensitiveMark, which hcl and cty pass on
// to every value computed from them, through operators, templates and
// functions. hcl's diagnostic writer skips a marked value where it would
// otherwise say "with var.pw as ...".
//
// Go code cannot read a marked value (cty panics), and a protocol gets
// plain values: each value leaves HCL through plain, which records the
// sensitive strings in it and unmarks it. The strings recorded are then
// searched for in every text hload writes that a value could reach:
// diagnostics whose text a function or a protocol's validator wrote, the
// messages of failed calls (a server may echo a token), warnings and run
// failures. Test.Redact replaces them there.

// markSensitive is the cty mark of a sensitive value.
const markSensitive = sensitiveMark("sensitive")

// sensitiveMark is the type of markSensitive, so that no other package's
// mark can be taken for it.
type sensitiveMark string

// Redacted stands in for a sensitive value in any text hload writes.
const Redacted = "(sensitive value)"

// minSecret is the shortest string searched for in free text: a shorter
// one would garble every message that happens to hold it. Such a value
// is still marked, so diagnostics do not print it from an expression.
const minSecret = 4

// secrets collects the sensitive strings of a load. env() adds to it from
// the VUs' goroutines too, so it is safe for concurrent use.
type secrets struct {
	mu  sync.Mutex
	set map[string]bool
}

// add records s.
func (s *secrets) add(str string) {
	if s == nil || len(str) < minSecret {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.set == nil {
		s.set = map[string]bool{}
	}
	s.set[str] = true
	// Messages quote values with %q: the quoted form of a value with a
	// quote, a backslash or a control character differs from it.
	if q := strconv.Quote(str); q[1:len(q)-1] != str {
		s.set[q[1:len(q)-1]] = true
	}
}

// addMarked records every string of v under a sensitive mark.
func (s *secrets) addMarked(v cty.Value) {
	if !v.ContainsMarked() {
		return
	}
	plain, marked := v.UnmarkDeepWithPaths()
	for _, pm := range marked {
		if _, ok := pm.Marks[markSensitive]; !ok {
			continue
		}
		sub, err := pm.Path.Apply(plain)
		if err != nil {
			continue
		}
		_ = cty.Walk(sub, func(_ cty.Path, x cty.Value) (bool, error) {
			if x.Type() == cty.String && x.IsKnown() && !x.IsNull() {
				s.add(x.AsString())
			}
			return true, nil
		})
	}
}

// plain records the sensitive strings of v and returns it unmarked, for
// the Go code that reads it and for the protocols.
func (s *secrets) plain(v cty.Value) cty.Value {
	if !v.ContainsMarked() {
		return v
	}
	if s != nil {
		s.addMarked(v)
	}
	v, _ = v.UnmarkDeep()
	return v
}

// list returns the strings recorded, longest first, so that a secret is
// replaced before any shorter one it contains.
func (s *secrets) list() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.set))
	for str := range s.set {
		out = append(out, str)
	}
	slices.SortFunc(out, func(a, b string) int {
		if len(a) != len(b) {
			return len(b) - len(a)
		}
		return strings.Compare(a, b)
	})
	return out
}

// recordSensitiveParts records the sensitive strings of the static parts
// of r's dynamic expression expr, such as upper(var.token) in
// "${upper(var.token)}-${vu.id}": a call computes them again, through HCL
// or compiled, and a server may echo them.
func (l *loader) recordSensitiveParts(r *Request, expr hcl.Expression) {
	syntax, ok := expr.(hclsyntax.Expression)
	if !ok {
		return
	}
	_ = hclsyntax.VisitAll(syntax, func(n hclsyntax.Node) hcl.Diagnostics {
		e, ok := n.(hclsyntax.Expression)
		if !ok || r.isDynamicIn(e) || !mayBeSensitive(e) {
			return nil
		}
		v, _ := e.Value(r.base)
		l.secrets.addMarked(v)
		return nil
	})
}

// mayBeSensitive reports whether expr reads a value that may be sensitive:
// a variable, a local, let, or env().
func mayBeSensitive(expr hcl.Expression) bool {
	return readsConstants(expr) || callsEnv(expr)
}

// readsConstants reports whether expr reads a variable, a local or let.
func readsConstants(expr hcl.Expression) bool {
	for _, t := range expr.Variables() {
		switch t.RootName() {
		case "var", "local", rootLet:
			return true
		}
	}
	return false
}

// callsEnv reports whether expr calls env().
func callsEnv(expr hcl.Expression) bool {
	syntax, ok := expr.(hclsyntax.Expression)
	if !ok {
		return true // it cannot be told: as if it did
	}
	env := false
	_ = hclsyntax.VisitAll(syntax, func(n hclsyntax.Node) hcl.Diagnostics {
		if call, ok := n.(*hclsyntax.FunctionCallExpr); ok && call.Name == "env" {
			env = true
		}
		return nil
	})
	return env
}

// mayMark reports whether a per-call value of expr, a dynamic expression
// of a request, may be marked: it calls env(), or it reads a variable, a
// local or let when one of them holds a sensitive value. Only such values
// pay for the walk that finds marks (call.eval).
func (l *loader) mayMark(expr hcl.Expression) bool {
	return callsEnv(expr) || readsConstants(expr) && l.constantsMarked
}

// shownStringAttr is stringAttr for a value hload writes as it is in the
// summary and the report, such as a threshold's condition: a sensitive
// value there is refused, with the way out, rather than written or hidden.
func (l *loader) shownStringAttr(attr *hcl.Attribute, where string) (string, bool, hcl.Diagnostics) {
	if mayBeSensitive(attr.Expr) && checkStatic(attr.Expr.Variables(), where) == nil {
		if v, _ := attr.Expr.Value(l.static); len(sensitivePaths(v)) > 0 {
			return "", false, hcl.Diagnostics{errorDiag(attr.Expr.Range(), "Sensitive value in "+attr.Name,
				"%s uses a sensitive value (from env(), HLOAD_VAR_ or a variable with sensitive = true), and hload writes a threshold's %s as it is in the summary and the report. "+
					"If the value is not secret, set it through a variable that says sensitive = false.", attr.Name, attr.Name)}
		}
	}
	return l.stringAttr(attr, where)
}

// sensitivePaths returns the paths of v's sensitive parts.
func sensitivePaths(v cty.Value) []cty.Path {
	if !v.ContainsMarked() {
		return nil
	}
	var paths []cty.Path
	_, marked := v.UnmarkDeepWithPaths()
	for _, pm := range marked {
		if _, ok := pm.Marks[markSensitive]; ok {
			paths = append(paths, pm.Path)
		}
	}
	return paths
}

// Redact returns s with every sensitive string of the test replaced by
// Redacted. It is safe for concurrent use, and returns s itself, without
// allocating, when s holds none.
func (t *Test) Redact(s string) string {
	for _, secret := range t.secrets {
		if strings.Contains(s, secret) {
			s = strings.ReplaceAll(s, secret, Redacted)
		}
	}
	return s
}

// RedactDiagnostics redacts the summary and the detail of each of diags,
// in place, and returns them: a function's or a protocol's message may
// quote a value. t may be nil, when no file could be read.
func (t *Test) RedactDiagnostics(diags hcl.Diagnostics) hcl.Diagnostics {
	if t == nil {
		return diags
	}
	for _, d := range diags {
		d.Summary, d.Detail = t.Redact(d.Summary), t.Redact(d.Detail)
	}
	return diags
}

// RedactVariables returns vars, the values given with --var by name, with
// the value of each sensitive variable replaced by Redacted, for the
// summary and the report, which record them.
func (t *Test) RedactVariables(vars map[string]string) map[string]string {
	if len(vars) == 0 {
		return vars
	}
	out := make(map[string]string, len(vars))
	for k, v := range vars {
		if t.sensitiveVars[k] {
			v = Redacted
		}
		out[k] = t.Redact(v)
	}
	return out
}

// SensitiveVariable reports whether the variable name is sensitive.
func (t *Test) SensitiveVariable(name string) bool { return t.sensitiveVars[name] }
