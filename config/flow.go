package config

import (
	"fmt"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hload/hload/metrics"
	"github.com/zclconf/go-cty/cty"
)

// The block types inside a scenario besides request.
const (
	blockSetup = "setup"
	blockFlow  = "flow"
)

// requestBlocks is the request block as setup and flow hold it.
var requestBlocks = []hcl.BlockHeaderSchema{{Type: blockRequest, LabelNames: []string{"name"}}}

// setupSchema and flowSchema are the schemas of the setup and flow blocks.
var (
	setupSchema = &hcl.BodySchema{
		Attributes: []hcl.AttributeSchema{{Name: "think_time"}},
		Blocks:     requestBlocks,
	}
	flowSchema = &hcl.BodySchema{
		Attributes: []hcl.AttributeSchema{{Name: "weight"}, {Name: "think_time"}},
		Blocks:     requestBlocks,
	}
)

// groupKind is what holds a request block in a scenario.
type groupKind int

const (
	groupBare  groupKind = iota // the scenario itself: a bare request
	groupSetup                  // the setup block
	groupFlow                   // a flow block
)

// stepGroup is a setup block, a flow block, or a bare request seen as a
// flow of one step.
type stepGroup struct {
	kind  groupKind
	flow  *Flow
	steps []*stepDecl
}

// stepDecl is one request block of a scenario, before it is decoded.
type stepDecl struct {
	block    *hcl.Block
	group    *stepGroup
	index    int      // within its group
	captures []string // the names its capture block sets, unchecked
}

// where describes where a step sits, for messages: ` in flow "order"`,
// " in setup" or "" for a bare request.
func (st *stepDecl) where() string {
	switch st.group.kind {
	case groupSetup:
		return " in setup"
	case groupFlow:
		return fmt.Sprintf(" in flow %q", st.group.flow.Name)
	}
	return ""
}

// place describes where a step sits, for messages: `in flow "order"`,
// "in setup" or "a bare request".
func (st *stepDecl) place() string {
	if st.group.kind == groupBare {
		return "a bare request"
	}
	return strings.TrimPrefix(st.where(), " ")
}

// varScope is what a request may read of vu.vars: the names captured
// before it runs, and every capture of its scenario, to say where the
// others are.
type varScope struct {
	step  *stepDecl
	valid []string
	steps []*stepDecl // every request block of the scenario, in file order
}

// scenarioShape is where each request block of a scenario sits.
type scenarioShape struct {
	steps    []*stepDecl  // every request block, in file order
	mix      []*stepGroup // the flows and bare requests, in file order
	setup    *stepGroup   // nil when there is none
	runnable bool         // a flow block or a bare request
}

// decodeSteps decodes the setup, flow and request blocks of scenario s
// into s.Setup, s.Mix and s.Requests, and returns whether s has anything
// for an iteration to run (a flow block or a bare request).
func (l *loader) decodeSteps(s *Scenario, blocks []*hcl.Block, def scenarioTarget) (hcl.Diagnostics, bool) {
	// First the shape, so that the scope of vu.vars is known before any
	// request is decoded, whatever the order of the blocks.
	shape, diags := l.decodeShape(s, blocks)
	seen := map[string]*stepDecl{}
	sample := l.sampleContext(s.Name)
	for _, st := range shape.steps {
		b := st.block
		name := b.Labels[0]
		if name == "" {
			diags = append(diags, errorDiag(b.LabelRanges[0], "Empty request name", `A request needs a name, such as request "home".`))
			continue
		}
		if earlier, dup := seen[name]; dup {
			places := ""
			if earlier.group.kind != groupBare || st.group.kind != groupBare {
				places = fmt.Sprintf(", %s; this one is %s", earlier.place(), st.place())
			}
			diags = append(diags, errorDiag(b.DefRange, fmt.Sprintf("Duplicate request %q", name),
				"A request named %q is already defined at %s%s. Request names are unique within a scenario, here %q, across its setup, its flows and its bare requests, so that each request has figures of its own.",
				name, position(earlier.block.DefRange), places, s.Name))
			continue
		}
		seen[name] = st
		scope := &varScope{step: st, valid: validVars(st, shape.setup), steps: shape.steps}
		// Each request draws its sample values from its own fixed seed,
		// and sees as vu.vars the names captured before it runs.
		draws := sample.NewChild()
		draws.Functions = loadFunctions()
		draws.Variables = map[string]cty.Value{rootVU: sampleVU(scope.valid)}
		r, d := l.decodeRequest(s.Name, b, def, draws, scope)
		diags = append(diags, d...)
		s.Requests = append(s.Requests, r)
		if st.group.kind == groupBare {
			st.group.flow = &Flow{Name: r.Name, Weight: r.Weight, Single: true, DeclRange: r.DeclRange}
		}
		st.group.flow.Steps = append(st.group.flow.Steps, r)
	}
	if shape.setup != nil && len(shape.setup.flow.Steps) > 0 {
		s.Setup = shape.setup.flow
	}
	for _, g := range shape.mix {
		// A request that was not decoded is reported; the mix keeps what
		// the core can run.
		if g.flow != nil && len(g.flow.Steps) > 0 {
			s.Mix = append(s.Mix, g.flow)
		}
	}
	return diags, shape.runnable
}

// decodeShape decodes the setup and flow blocks of scenario s, without
// their requests, and says where each request block sits.
func (l *loader) decodeShape(s *Scenario, blocks []*hcl.Block) (*scenarioShape, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	shape := &scenarioShape{}
	var setupBlock *hcl.Block
	flows := map[string]*hcl.Block{}
	add := func(g *stepGroup, b *hcl.Block) {
		st := &stepDecl{block: b, group: g, index: len(g.steps), captures: captureBlockNames(b)}
		g.steps = append(g.steps, st)
		shape.steps = append(shape.steps, st)
	}
	for _, b := range blocks {
		switch b.Type {
		case blockRequest:
			shape.runnable = true
			g := &stepGroup{kind: groupBare}
			shape.mix = append(shape.mix, g)
			add(g, b)
		case blockSetup:
			if setupBlock != nil {
				diags = append(diags, errorDiag(b.DefRange, "Duplicate setup block",
					"Scenario %q already has a setup block at %s. Put all the steps of its setup in that one block, in order.",
					s.Name, position(setupBlock.DefRange)))
				continue
			}
			setupBlock = b
			content, d := b.Body.Content(setupSchema)
			diags = append(diags, d...)
			shape.setup = &stepGroup{kind: groupSetup, flow: &Flow{Name: metrics.SetupFlow, Weight: 1, DeclRange: b.DefRange}}
			diags = append(diags, l.decodeStepsThinkTime(shape.setup.flow, content)...)
			for _, rb := range content.Blocks {
				add(shape.setup, rb)
			}
			if len(content.Blocks) == 0 && !d.HasErrors() {
				diags = append(diags, errorDiag(b.DefRange, "Setup without steps",
					`The setup of scenario %q has no request block, so it would do nothing. Add the requests each virtual user runs once before its first iteration, such as request "login" { ... }, or remove the setup block.`,
					s.Name))
			}
		case blockFlow:
			shape.runnable = true
			g, content, d := l.decodeFlowBlock(s, b, flows)
			diags = append(diags, d...)
			if g == nil {
				continue
			}
			shape.mix = append(shape.mix, g)
			for _, rb := range content.Blocks {
				add(g, rb)
			}
		}
	}
	return shape, diags
}

// decodeFlowBlock decodes a flow block's name and attributes; its steps
// are decoded with the other requests. It returns nil when the flow cannot
// take part in the mix.
func (l *loader) decodeFlowBlock(s *Scenario, b *hcl.Block, seen map[string]*hcl.Block) (*stepGroup, *hcl.BodyContent, hcl.Diagnostics) {
	name := b.Labels[0]
	content, diags := b.Body.Content(flowSchema)
	contentOK := !diags.HasErrors()
	switch {
	case name == "":
		return nil, nil, append(diags, errorDiag(b.LabelRanges[0], "Empty flow name", `A flow needs a name, such as flow "order".`))
	case name == metrics.SetupFlow:
		return nil, nil, append(diags, errorDiag(b.LabelRanges[0], "Reserved flow name",
			`The flow name %q is reserved for the scenario's setup block, whose figures are shown under that name. To run requests once per virtual user before its first iteration, write them in setup { ... }; otherwise give this flow another name.`,
			metrics.SetupFlow))
	}
	if earlier := seen[name]; earlier != nil {
		d := duplicateDiag("flow", name, b.DefRange, earlier.DefRange)
		d.Detail += fmt.Sprintf(" Flow names are unique within a scenario, here %q.", s.Name)
		return nil, nil, append(diags, d)
	}
	seen[name] = b
	f := &Flow{Name: name, Weight: 1, DeclRange: b.DefRange}
	if attr := content.Attributes["weight"]; attr != nil {
		w, ok, d := l.intAttr(attr, 1, "the flow's share of the scenario's mix", "A flow block")
		diags = append(diags, d...)
		if ok {
			f.Weight = w
		}
	}
	diags = append(diags, l.decodeStepsThinkTime(f, content)...)
	if len(content.Blocks) == 0 {
		if !contentOK {
			return nil, nil, diags // an unknown block, maybe a misspelled request
		}
		diags = append(diags, errorDiag(b.DefRange, "Flow without steps",
			`Flow %q of scenario %q has no request block, so an iteration that picks it would send nothing. Add its steps in the order they run, such as request "list" { ... }, or remove the flow.`,
			name, s.Name))
		return nil, nil, diags
	}
	return &stepGroup{kind: groupFlow, flow: f}, content, diags
}

// decodeStepsThinkTime reads the think_time of a setup or flow block: the
// pause between two of its steps.
func (l *loader) decodeStepsThinkTime(f *Flow, content *hcl.BodyContent) hcl.Diagnostics {
	attr := content.Attributes["think_time"]
	if attr == nil {
		return nil
	}
	var diags hcl.Diagnostics
	f.ThinkTime, diags = l.decodeThinkTime(attr)
	return diags
}

// validVars returns the names st may read as vu.vars: those captured by
// the setup steps before it, or, for a flow step or a bare request, by the
// whole setup and by the earlier steps of its own flow.
func validVars(st *stepDecl, setup *stepGroup) []string {
	var names []string
	addFrom := func(g *stepGroup, before int) {
		for _, other := range g.steps[:before] {
			for _, n := range other.captures {
				if !slices.Contains(names, n) {
					names = append(names, n)
				}
			}
		}
	}
	if st.group.kind != groupSetup {
		if setup != nil {
			addFrom(setup, len(setup.steps))
		}
	}
	addFrom(st.group, st.index)
	return names
}

// check returns a diagnostic when t, such as vu.vars.token, reads a name
// that is not captured before the request runs, or nil. The message says
// where the name is captured, if anywhere, and where it should be.
func (sc *varScope) check(t hcl.Traversal) *hcl.Diagnostic {
	if sc == nil || len(t) < 3 {
		return nil
	}
	name := stepName(t[2])
	if name == "" || slices.Contains(sc.valid, name) {
		return nil // a computed key is checked at run time
	}
	st := sc.step
	readable := "This step can read no captured value yet."
	if len(sc.valid) > 0 {
		readable = fmt.Sprintf("This step can read %s.", quoteList(sc.valid))
	}
	var fix string
	switch st.group.kind {
	case groupSetup:
		fix = "capture it in an earlier step of the setup"
	case groupFlow:
		fix = "capture it in setup or in an earlier step of this flow"
	default:
		fix = "capture it in setup, or make this request a step of a flow after the step that captures it: a bare request is an iteration of its own, after only the setup"
	}
	var sites []string
	var all []string
	for _, other := range sc.steps {
		for _, n := range other.captures {
			if !slices.Contains(all, n) {
				all = append(all, n)
			}
		}
		if slices.Contains(other.captures, name) {
			sites = append(sites, st.describe(other))
		}
	}
	ref := traversalString(t)
	if len(sites) == 0 {
		hint := didYouMean(name, sc.valid)
		if hint == "" {
			hint = didYouMean(name, all)
		}
		return errorDiag(t.SourceRange(), fmt.Sprintf("Nothing captures %q", name),
			"%s reads a value captured from an earlier response, but no capture block of this scenario sets %q.%s %s To read a new value, %s, such as capture { %s = json(\"...\") }.",
			ref, name, hint, readable, fix, name)
	}
	which := "which does not run before this step"
	switch {
	case len(sites) > 1:
		which = "none of which runs before this step"
	case sites[0] == selfCapture:
		which = "which sets it only once its response is in"
	}
	return errorDiag(t.SourceRange(), fmt.Sprintf("%q is not captured before this step", name),
		"%s is captured by %s, %s; %s.%s %s",
		ref, joinAnd(sites), which, fix, didYouMean(name, sc.valid), readable)
}

// describe names other, a step that captures a value st reads, as seen
// from st, for a message.
func (st *stepDecl) describe(other *stepDecl) string {
	name := fmt.Sprintf("request %q", other.block.Labels[0])
	switch {
	case other == st:
		return selfCapture
	case other.group == st.group && other.group.kind == groupFlow:
		return name + ", a later step of this flow"
	case other.group == st.group && other.group.kind == groupSetup:
		return name + ", a later step of the setup"
	case other.group.kind == groupBare:
		return "the bare " + name + ", an iteration of its own"
	}
	return name + other.where()
}

// selfCapture is how describe names the step itself.
const selfCapture = "this request itself"

// joinAnd joins phrases as "a", "a and b" or "a, b and c".
func joinAnd(items []string) string {
	if len(items) <= 1 {
		return strings.Join(items, "")
	}
	return strings.Join(items[:len(items)-1], ", ") + " and " + items[len(items)-1]
}
