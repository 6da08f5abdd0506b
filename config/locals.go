package config

import (
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
)

// localsWhere names locals in messages about per-iteration values.
const localsWhere = "A local value"

// decodeLocals is the second phase. Locals may use variables and each other
// in any order, so they are evaluated in dependency order; a cycle is an
// error. Locals are evaluated once: a local that calls random_int() keeps
// one value for the whole run.
func (l *loader) decodeLocals(blocks []*hcl.Block) hcl.Diagnostics {
	var diags hcl.Diagnostics
	attrs := map[string]*hcl.Attribute{}
	var order []*hcl.Attribute
	for _, b := range blocks {
		as, d := b.Body.JustAttributes()
		diags = append(diags, d...)
		for _, a := range sortedAttributes(as) {
			if earlier, dup := attrs[a.Name]; dup {
				diags = append(diags, duplicateDiag("local value", a.Name, a.NameRange, earlier.NameRange))
				continue
			}
			attrs[a.Name] = a
			order = append(order, a)
		}
	}

	e := &localsEvaluator{
		l:     l,
		attrs: attrs,
		state: map[string]int{},
		vals:  map[string]cty.Value{},
		ctx: &hcl.EvalContext{
			Variables: map[string]cty.Value{
				"var":        cty.ObjectVal(l.variables),
				rootVU:       cty.DynamicVal,
				rootScenario: cty.DynamicVal,
				rootData:     cty.DynamicVal,
			},
			Functions: l.funcs,
		},
	}
	for _, a := range order {
		e.visit(a.Name, nil)
	}
	// Every local, for the messages about a name that is not one of them
	// (see withAttributeHints), which read this context after the fact.
	e.ctx.Variables["local"] = cty.ObjectVal(e.vals)
	diags = append(diags, e.diags...)
	l.makeContexts(cty.ObjectVal(e.vals))
	return diags
}

// The states of a local during the depth-first evaluation.
const (
	localUnvisited = iota
	localVisiting
	localDone
)

// localsEvaluator evaluates locals depth first, detecting cycles.
type localsEvaluator struct {
	l     *loader
	attrs map[string]*hcl.Attribute
	state map[string]int
	vals  map[string]cty.Value
	ctx   *hcl.EvalContext
	diags hcl.Diagnostics
}

// visit evaluates the local name after the locals it uses. stack holds the
// locals being evaluated, to name the cycle when there is one.
func (e *localsEvaluator) visit(name string, stack []string) {
	if e.state[name] == localDone {
		return
	}
	e.state[name] = localVisiting
	stack = append(stack, name)
	attr := e.attrs[name]
	for _, t := range attr.Expr.Variables() {
		if t.RootName() != "local" || len(t) < 2 {
			continue
		}
		dep := stepName(t[1])
		if _, ok := e.attrs[dep]; !ok {
			continue // evaluation reports the unknown name
		}
		switch e.state[dep] {
		case localVisiting:
			e.reportCycle(stack, dep, t.SourceRange())
		case localUnvisited:
			e.visit(dep, stack)
		}
		if e.state[name] == localDone {
			return // part of a cycle, already reported
		}
	}

	diags := checkStatic(attr.Expr.Variables(), localsWhere)
	v := cty.DynamicVal
	if !diags.HasErrors() {
		e.ctx.Variables["local"] = cty.ObjectVal(e.vals)
		var d hcl.Diagnostics
		v, d = attr.Expr.Value(e.ctx)
		diags = append(diags, d...)
		if d.HasErrors() {
			v = cty.DynamicVal
		}
	}
	e.diags = append(e.diags, diags...)
	e.vals[name] = v
	e.state[name] = localDone
}

// reportCycle reports the cycle that closes at dep, and marks its members
// done with unknown values so that nothing else reports them.
func (e *localsEvaluator) reportCycle(stack []string, dep string, rng hcl.Range) {
	start := 0
	for i, n := range stack {
		if n == dep {
			start = i
		}
	}
	cycle := append(append([]string{}, stack[start:]...), dep)
	for i := range cycle {
		cycle[i] = "local." + cycle[i]
	}
	e.diags = append(e.diags, errorDiag(rng, "Cycle in locals",
		"These locals use each other in a loop, so none of them has a value: %s.", strings.Join(cycle, " -> ")))
	for _, n := range stack[start:] {
		e.vals[n] = cty.DynamicVal
		e.state[n] = localDone
	}
}
