package compare

import (
	"fmt"
	"strings"
)

// Breach is a rule that broke on one request.
type Breach struct {
	Rule     Rule
	Scenario string
	Request  string
	// Base is the figure in the base run (absent from a Level rule on a
	// request only the new run has: HasBase is then false); New is the
	// figure in the new run.
	Base    float64
	HasBase bool
	New     float64
}

// String says which rule broke, on which request, with both values and
// the change.
func (b Breach) String() string {
	f := b.Rule.Figure
	s := fmt.Sprintf("%q broke on %s/%s: %s ", b.Rule.Text, b.Scenario, b.Request, f)
	if !b.HasBase {
		return s + Format(f, b.New) + " in the new run (the base run does not have this request)"
	}
	return s + fmt.Sprintf("%s in the base run, %s in the new run (%s)",
		Format(f, b.Base), Format(f, b.New), FormatPercent(percent(b.Base, b.New)))
}

// Check judges every rule on each request in its scope: a change (a
// Relative or Delta rule) on the requests both runs have, a Level rule on
// the new run's. It returns the breaches, in the order of the rules then
// the requests. A rule that has no request to judge is an error: a gate
// that checks nothing must not pass.
func (c *Comparison) Check(rules []Rule) ([]Breach, error) {
	var out []Breach
	for _, rule := range rules {
		judged := 0
		for _, r := range c.Requests {
			if !rule.matches(r) || r.New == nil || (r.Base == nil && rule.Kind != Level) {
				continue
			}
			judged++
			b := Breach{Rule: rule, Scenario: r.Scenario, Request: r.Request, New: rule.Figure.Of(r.New)}
			if r.Base != nil {
				b.Base, b.HasBase = rule.Figure.Of(r.Base), true
			}
			if rule.breaks(b.Base, b.New) {
				out = append(out, b)
			}
		}
		if judged == 0 {
			return out, c.nothingToJudge(rule)
		}
	}
	return out, nil
}

// matches reports whether the request is in the rule's scope.
func (rule Rule) matches(r Request) bool {
	return (rule.Scenario == "" || rule.Scenario == r.Scenario) && (rule.Request == "" || rule.Request == r.Request)
}

// breaks reports whether the rule's condition holds for the figure's
// values in the two runs.
func (rule Rule) breaks(base, new float64) bool {
	x := new
	switch rule.Kind {
	case Relative:
		x = percent(base, new)
	case Delta:
		x = new - base
	}
	switch rule.Op {
	case ">":
		return x > rule.Value
	case ">=":
		return x >= rule.Value
	case "<":
		return x < rule.Value
	case "<=":
		return x <= rule.Value
	}
	panic("compare: unknown operator " + rule.Op)
}

// nothingToJudge explains a rule that matched no request it could judge,
// naming the requests it could have.
func (c *Comparison) nothingToJudge(rule Rule) error {
	where, need := "both runs", func(r Request) bool { return r.Base != nil && r.New != nil }
	if rule.Kind == Level {
		where, need = "the new run", func(r Request) bool { return r.New != nil }
	}
	var names []string
	for _, r := range c.Requests {
		if need(r) {
			names = append(names, r.Name())
		}
	}
	scope := "any request"
	if rule.Scenario != "" {
		scope = rule.Scenario
		if rule.Request != "" {
			scope += "/" + rule.Request
		}
	}
	list := "none"
	if len(names) > 0 {
		list = strings.Join(names, ", ")
	}
	return fmt.Errorf("%q has nothing to judge: %s is not in %s (requests in %s: %s)", rule.Text, scope, where, where, list)
}
