package config

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
)

// blockRequest is the type of the request blocks inside a scenario.
const blockRequest = "request"

// scenarioWhere names scenario blocks in messages about per-iteration values.
const scenarioWhere = "A scenario block"

// defaultGracefulStop is how long in-flight iterations may finish after a
// scenario ends, as in k6.
const defaultGracefulStop = 30 * time.Second

// The executors.
const (
	executorConstantVUs = "constant-vus"
	executorRampingVUs  = "ramping-vus"
	executorIterations  = "iterations"

	executorConstantArrivalRate = "constant-arrival-rate"
	executorRampingArrivalRate  = "ramping-arrival-rate"

	executorCapacitySearch = "capacity-search"
)

// executors lists the supported executors, in the order messages show them.
var executors = []string{
	executorConstantVUs, executorRampingVUs, executorIterations,
	executorConstantArrivalRate, executorRampingArrivalRate, executorCapacitySearch,
}

// openExecutors start iterations at a rate (the open model) rather than
// looping a fixed set of VUs.
var openExecutors = []string{executorConstantArrivalRate, executorRampingArrivalRate}

// futureExecutors are part of the language but not implemented yet. Naming
// one gets a clear message rather than "unknown".
var futureExecutors []string

// executorAttributes says which attributes each executor requires and which
// it may take. Any other attribute of executorOnlyAttributes is a mistake.
var executorAttributes = map[string]struct{ required, optional []string }{
	executorConstantVUs: {required: []string{"vus", "duration"}},
	executorRampingVUs:  {required: []string{"stages"}, optional: []string{"start_vus"}},
	executorIterations:  {required: []string{"vus", "iterations"}, optional: []string{"ramp_up", "max_duration"}},
	executorConstantArrivalRate: {
		required: []string{"rate", "duration"},
		optional: []string{"time_unit", "pre_allocated_vus", "max_vus", "max_queue_wait"},
	},
	executorRampingArrivalRate: {
		required: []string{"stages"},
		optional: []string{"start_rate", "time_unit", "pre_allocated_vus", "max_vus", "max_queue_wait"},
	},
	executorCapacitySearch: {required: []string{"step_duration"}, optional: capacityOptional},
}

// executorOnlyAttributes belong to some executor, including the future
// ones, so that using one with the wrong executor says so.
var executorOnlyAttributes = []string{
	"vus", "duration", "start_vus", "stages", "iterations", "ramp_up", "max_duration",
	"rate", "start_rate", "time_unit", "max_vus", "pre_allocated_vus", "max_queue_wait",
	"model", "steps", "step_factor", "step_duration", "min_gain", "max_error_rate", "max_p95", "max_rate",
}

// attributeHelp explains the required executor attributes when missing.
var attributeHelp = map[string]string{
	"vus":           "the number of virtual users, such as vus = 10",
	"duration":      `how long the scenario runs, such as duration = "5m"`,
	"stages":        `the ramps to follow, such as stages = [{ duration = "1m", target = 10 }]`,
	"iterations":    "how many iterations each virtual user runs, such as iterations = 100",
	"rate":          "how many iterations start per time_unit (1s by default), such as rate = 100",
	"step_duration": `how long each step of the search holds its load, such as step_duration = "30s"`,
}

// scenarioSchema is the schema of a scenario block.
var scenarioSchema = func() *hcl.BodySchema {
	s := &hcl.BodySchema{
		Attributes: []hcl.AttributeSchema{
			{Name: "executor", Required: true},
			{Name: "think_time"},
			{Name: "graceful_stop"},
			{Name: "target"},
		},
		Blocks: []hcl.BlockHeaderSchema{
			{Type: blockRequest, LabelNames: []string{"name"}},
			{Type: blockSetup},
			{Type: blockFlow, LabelNames: []string{"name"}},
		},
	}
	for _, name := range executorOnlyAttributes {
		s.Attributes = append(s.Attributes, hcl.AttributeSchema{Name: name})
	}
	return s
}()

// scenarioTarget is a scenario's default target for its requests.
type scenarioTarget struct {
	name string
	set  bool // the scenario has a target attribute
	ok   bool // and it names a declared target
}

// decodeScenarios is the fourth phase. It needs the targets.
func (l *loader) decodeScenarios(blocks []*hcl.Block) hcl.Diagnostics {
	var diags hcl.Diagnostics
	for _, b := range blocks {
		name := b.Labels[0]
		if name == "" {
			diags = append(diags, errorDiag(b.LabelRanges[0], "Empty scenario name", `A scenario needs a name, such as scenario "browse".`))
			continue
		}
		if earlier, dup := l.scenarios[name]; dup {
			diags = append(diags, duplicateDiag("scenario", name, b.DefRange, earlier.DeclRange))
			continue
		}
		s, d := l.decodeScenario(b)
		diags = append(diags, d...)
		l.scenarios[name] = s
		l.test.Scenarios = append(l.test.Scenarios, s)
	}
	return diags
}

func (l *loader) decodeScenario(b *hcl.Block) (*Scenario, hcl.Diagnostics) {
	s := &Scenario{Name: b.Labels[0], GracefulStop: defaultGracefulStop, DeclRange: b.DefRange}
	content, diags := b.Body.Content(scenarioSchema)

	if attr := content.Attributes["executor"]; attr != nil {
		name, ok, d := l.stringAttr(attr, scenarioWhere)
		diags = append(diags, d...)
		if !ok && !d.HasErrors() {
			diags = append(diags, errorDiag(attr.Expr.Range(), "Missing executor",
				"executor must not be null; name one of %s.", quoteList(executors)))
		}
		if ok {
			if d := checkExecutorName(name, attr.Expr.Range()); d != nil {
				diags = append(diags, d)
			} else {
				var d hcl.Diagnostics
				s.Executor, d = l.decodeExecutor(name, b, content)
				diags = append(diags, d...)
				s.VUsRange = vusRange(name, content.Attributes, b.DefRange)
			}
		}
	}
	if attr := content.Attributes["think_time"]; attr != nil {
		var d hcl.Diagnostics
		s.ThinkTime, d = l.decodeThinkTime(attr)
		diags = append(diags, d...)
	}
	if attr := content.Attributes["graceful_stop"]; attr != nil {
		d, ok, more := l.durationAttr(attr, false, scenarioWhere)
		diags = append(diags, more...)
		if ok {
			s.GracefulStop = d
		}
	}
	var def scenarioTarget
	if attr := content.Attributes["target"]; attr != nil {
		def.set = true
		name, ok, d := l.stringAttr(attr, scenarioWhere)
		diags = append(diags, d...)
		if ok {
			_, d := l.lookupTarget(name, attr.Expr.Range())
			diags = append(diags, d...)
			def.name, def.ok = name, !d.HasErrors()
		}
	}

	d, runnable := l.decodeSteps(s, content.Blocks, def)
	diags = append(diags, d...)
	if cycle := WeightCycle(s.Mix); cycle > MaxWeightCycle {
		diags = append(diags, errorDiag(b.DefRange, "Weights too fine-grained",
			"The weights of scenario %q (of its flows and bare requests) repeat only every %d iterations once reduced by their common divisor; "+
				"hload holds the mix exactly over each cycle and allows at most %d. Use smaller weights with the same ratios, such as percentages.",
			s.Name, cycle, MaxWeightCycle))
	}
	if !runnable {
		what := "has no request or flow block, so it would send nothing"
		if s.Setup != nil {
			what = "has no request or flow block besides its setup, so its iterations would send nothing"
		}
		diags = append(diags, errorDiag(b.DefRange, "Scenario without requests",
			`Scenario %q %s. Add one, such as request "home" { path = "/" }, or flow "order" { ... } with its steps in order.`, s.Name, what))
	}
	return s, diags
}

// vusAttributes are, per executor, the attributes that decide how many VUs
// a scenario may run at once, the first one set deciding.
var vusAttributes = map[string][]string{
	executorConstantVUs:         {"vus"},
	executorIterations:          {"vus"},
	executorRampingVUs:          {"stages", "start_vus"},
	executorConstantArrivalRate: {"max_vus", "rate"},
	executorRampingArrivalRate:  {"max_vus", "stages", "start_rate"},
	executorCapacitySearch:      {"max_vus", "steps", "max_rate"},
}

// vusRange returns the range of the attribute that sets the most VUs of a
// scenario of executor kind, or def.
func vusRange(kind string, attrs hcl.Attributes, def hcl.Range) hcl.Range {
	for _, name := range vusAttributes[kind] {
		if a := attrs[name]; a != nil {
			return a.Expr.Range()
		}
	}
	return def
}

// checkExecutorName returns a diagnostic when name is not a supported
// executor, or nil.
func checkExecutorName(name string, rng hcl.Range) *hcl.Diagnostic {
	if _, ok := executorAttributes[name]; ok {
		return nil
	}
	if slices.Contains(futureExecutors, name) {
		return errorDiag(rng, fmt.Sprintf("Executor %q is not supported yet", name),
			"This version of hload runs the executors %s. %s comes in a later version.",
			quoteList(executors), name)
	}
	hint := strings.TrimSpace(didYouMean(name, executors))
	if hint != "" {
		hint += " "
	}
	if len(futureExecutors) == 0 {
		return errorDiag(rng, fmt.Sprintf("Unknown executor %q", name), "%sValid executors are %s.", hint, quoteList(executors))
	}
	verb := "are"
	if len(futureExecutors) == 1 {
		verb = "is"
	}
	return errorDiag(rng, fmt.Sprintf("Unknown executor %q", name),
		"%sValid executors are %s (%s %s not supported yet).",
		hint, quoteList(executors), quoteList(futureExecutors), verb)
}

// decodeExecutor builds the executor config and checks that the scenario
// sets exactly the attributes this executor uses.
func (l *loader) decodeExecutor(kind string, b *hcl.Block, content *hcl.BodyContent) (Executor, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	spec := executorAttributes[kind]
	takes := append(slices.Clone(spec.required), spec.optional...)
	for _, attr := range sortedAttributes(content.Attributes) {
		if slices.Contains(executorOnlyAttributes, attr.Name) && !slices.Contains(takes, attr.Name) {
			diags = append(diags, errorDiag(attr.NameRange, fmt.Sprintf("%s is not used by the %s executor", attr.Name, kind),
				"The %s executor takes %s.%s Remove %s, or choose an executor that uses it.",
				kind, quoteList(takes), usedBy(attr.Name), attr.Name))
		}
	}
	if attr := content.Attributes["think_time"]; attr != nil && slices.Contains(openExecutors, kind) {
		diags = append(diags, errorDiag(attr.NameRange, fmt.Sprintf("think_time is not used by the %s executor", kind),
			"In the open model the rate decides when iterations start, so a pause after each iteration would only hold a virtual user longer. "+
				"Remove think_time, or choose a closed executor such as %q to model users who pause.", executorConstantVUs))
	}
	for _, name := range spec.required {
		attr := content.Attributes[name]
		if attr == nil {
			diags = append(diags, errorDiag(b.DefRange, fmt.Sprintf("Missing %s for the %s executor", name, kind),
				"Scenario %q uses the %s executor, which needs %s: %s.", b.Labels[0], kind, name, attributeHelp[name]))
			continue
		}
		// null reads as "not set", which a required attribute cannot be.
		if v, d := l.evalStatic(attr.Expr, scenarioWhere); !d.HasErrors() && v.IsKnown() && v.IsNull() {
			diags = append(diags, errorDiag(attr.Expr.Range(), fmt.Sprintf("Missing %s for the %s executor", name, kind),
				"%s must not be null: the %s executor needs %s.", name, kind, attributeHelp[name]))
		}
	}
	if diags.HasErrors() {
		return nil, diags
	}

	attr := content.Attributes
	var d hcl.Diagnostics
	switch kind {
	case executorConstantVUs:
		var e ConstantVUs
		e.VUs, _, d = l.intAttr(attr["vus"], 1, "the number of virtual users", scenarioWhere)
		diags = append(diags, d...)
		e.Duration, _, d = l.durationAttr(attr["duration"], true, scenarioWhere)
		return e, append(diags, d...)

	case executorRampingVUs:
		var e RampingVUs
		if a := attr["start_vus"]; a != nil {
			e.StartVUs, _, d = l.intAttr(a, 0, "the virtual users at the start", scenarioWhere)
			diags = append(diags, d...)
		}
		e.Stages, d = l.decodeStages(attr["stages"], e.StartVUs)
		return e, append(diags, d...)

	case executorConstantArrivalRate, executorRampingArrivalRate:
		return l.decodeArrivalRate(kind, attr)

	case executorCapacitySearch:
		return l.decodeCapacitySearch(attr)

	default: // executorIterations
		var e Iterations
		e.VUs, _, d = l.intAttr(attr["vus"], 1, "the number of virtual users", scenarioWhere)
		diags = append(diags, d...)
		e.Iterations, _, d = l.intAttr(attr["iterations"], 1, "the iterations of each virtual user", scenarioWhere)
		diags = append(diags, d...)
		if a := attr["ramp_up"]; a != nil {
			e.RampUp, _, d = l.durationAttr(a, false, scenarioWhere)
			diags = append(diags, d...)
		}
		if a := attr["max_duration"]; a != nil {
			e.MaxDuration, _, d = l.durationAttr(a, false, scenarioWhere)
			diags = append(diags, d...)
		}
		return e, diags
	}
}

// usedBy names the executors that take attribute name, for a message.
func usedBy(name string) string {
	var users []string
	for _, e := range executors {
		spec := executorAttributes[e]
		if slices.Contains(spec.required, name) || slices.Contains(spec.optional, name) {
			users = append(users, e)
		}
	}
	if len(users) == 0 {
		return fmt.Sprintf(" %s belongs to executors that are not supported yet.", name)
	}
	return fmt.Sprintf(" %s is used by %s.", name, quoteList(users))
}

// stageKind says what the targets of a ramp count, for reading them and
// for messages.
type stageKind struct {
	executor string
	whole    bool   // virtual users come whole; a rate may be a fraction
	target   string // what a target is
	example  string // a stage, as the user would write it
}

// The two kinds of ramps.
var (
	vuStages = stageKind{
		executor: executorRampingVUs,
		whole:    true,
		target:   fmt.Sprintf("the number of virtual users to reach by its end, a whole number from 0 to %d", maxInt),
		example:  `{ duration = "1m", target = 10 }`,
	}
	rateStages = stageKind{
		executor: executorRampingArrivalRate,
		target:   fmt.Sprintf("the rate to reach by its end, in iterations per time_unit, a number from 0 to %d", maxInt),
		example:  `{ duration = "1m", target = 100 }`,
	}
)

// rampStage is one stage as read by decodeRamp, before the executor types
// its target.
type rampStage struct {
	duration time.Duration
	target   float64
}

// decodeStages reads the stages of a ramping-vus scenario.
func (l *loader) decodeStages(attr *hcl.Attribute, startVUs int) ([]Stage, hcl.Diagnostics) {
	ramp, ok, diags := l.decodeRamp(attr, vuStages)
	stages := make([]Stage, len(ramp))
	peak := startVUs
	for i, st := range ramp {
		stages[i] = Stage{Duration: st.duration, Target: int(st.target)}
		peak = max(peak, stages[i].Target)
	}
	if ok && peak == 0 {
		diags = append(diags, errorDiag(attr.Expr.Range(), "Stages start no virtual user",
			"start_vus and every stage target are 0, so no virtual user would ever run. Give at least one stage a target of 1 or more."))
	}
	return stages, diags
}

// decodeRamp reads a list of stages. ok is false when a stage is invalid or
// when the stages take no time, both reported.
func (l *loader) decodeRamp(attr *hcl.Attribute, kind stageKind) (stages []rampStage, ok bool, diags hcl.Diagnostics) {
	v, diags := l.evalStatic(attr.Expr, scenarioWhere)
	if diags.HasErrors() || !v.IsWhollyKnown() {
		return nil, false, diags
	}
	rng := attr.Expr.Range()
	ty := v.Type()
	if v.IsNull() || !(ty.IsListType() || ty.IsTupleType()) {
		return nil, false, append(diags, errorDiag(rng, "Invalid stages",
			`stages must be a list, such as [%s]; got %s.`, kind.example, friendlyValue(v)))
	}
	if v.LengthInt() == 0 {
		return nil, false, append(diags, errorDiag(rng, "Empty stages",
			`The %s executor needs at least one stage, such as stages = [%s].`, kind.executor, kind.example))
	}

	var elems []hclsyntax.Expression
	if tuple, ok := attr.Expr.(*hclsyntax.TupleConsExpr); ok {
		elems = tuple.Exprs
	}
	var total time.Duration
	valid := true
	for i, it := 0, v.ElementIterator(); it.Next(); i++ {
		_, ev := it.Element()
		var expr hcl.Expression = attr.Expr
		if i < len(elems) {
			expr = elems[i]
		}
		st, ok, d := decodeStage(ev, expr, i+1, kind)
		diags = append(diags, d...)
		valid = valid && ok
		stages = append(stages, st)
		total = min(total+st.duration, math.MaxInt64/2) // saturate instead of overflowing
	}
	if !valid {
		return stages, false, diags
	}
	if total == 0 {
		return stages, false, append(diags, errorDiag(rng, "Stages take no time",
			"Every stage has a duration of 0, so the scenario would end at once. Give at least one stage a duration longer than zero."))
	}
	return stages, true, diags
}

// decodeStage reads stage number n (from 1), written as expr.
func decodeStage(v cty.Value, expr hcl.Expression, n int, kind stageKind) (rampStage, bool, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	var st rampStage
	rng := expr.Range()
	ty := v.Type()
	if v.IsNull() || !(ty.IsObjectType() || ty.IsMapType()) {
		return st, false, hcl.Diagnostics{errorDiag(rng, "Invalid stage",
			`Stage %d must be an object such as %s; got %s.`, n, kind.example, friendlyValue(v))}
	}
	var hasDuration, hasTarget bool
	for it := v.ElementIterator(); it.Next(); {
		k, fv := it.Element()
		key := k.AsString()
		frng := objectItemRange(expr, key, rng)
		switch key {
		case "duration":
			hasDuration = true
			if fv.IsNull() {
				diags = append(diags, errorDiag(frng, "Invalid duration", "The duration of stage %d must not be null.", n))
				continue
			}
			d, err := durationFromValue(fv)
			if err != nil {
				diags = append(diags, errorDiag(frng, "Invalid duration", "Invalid duration for stage %d: %s.", n, err))
				continue
			}
			if d < 0 {
				diags = append(diags, errorDiag(frng, "Invalid duration", "The duration of stage %d must not be negative; got %s.", n, d))
				continue
			}
			st.duration = d
		case "target":
			hasTarget = true
			t, ok := stageTarget(fv, kind.whole)
			if !ok {
				diags = append(diags, errorDiag(frng, "Invalid stage target",
					"The target of stage %d is %s; got %s.", n, kind.target, friendlyValue(fv)))
				continue
			}
			st.target = t
		default:
			diags = append(diags, errorDiag(frng, fmt.Sprintf("Unknown stage attribute %q", key),
				"A stage has duration and target.%s", didYouMean(key, []string{"duration", "target"})))
		}
	}
	if !hasDuration || !hasTarget {
		diags = append(diags, errorDiag(rng, "Incomplete stage",
			`Stage %d needs both duration and target, such as %s.`, n, kind.example))
	}
	return st, !diags.HasErrors(), diags
}

// stageTarget reads a stage target: a number from 0 to maxInt, and a whole
// one when whole is set.
func stageTarget(v cty.Value, whole bool) (float64, bool) {
	nv, err := convert.Convert(v, cty.Number)
	if err != nil || nv.IsNull() || !nv.IsKnown() {
		return 0, false
	}
	if whole {
		t, ok := wholeNumber(nv)
		return float64(t), ok && t >= 0 && t <= maxInt
	}
	f, _ := nv.AsBigFloat().Float64()
	return f, f >= 0 && f <= maxInt
}

// decodeThinkTime reads think_time: a duration or uniform(min, max).
func (l *loader) decodeThinkTime(attr *hcl.Attribute) (ThinkTime, hcl.Diagnostics) {
	v, diags := l.evalStatic(attr.Expr, scenarioWhere)
	if diags.HasErrors() || !v.IsWhollyKnown() || v.IsNull() {
		return ThinkTime{}, diags
	}
	if v.Type() == uniformType {
		return *v.EncapsulatedValue().(*ThinkTime), diags
	}
	d, err := durationFromValue(v)
	if err != nil {
		return ThinkTime{}, append(diags, errorDiag(attr.Expr.Range(), "Invalid think_time",
			`Invalid value for think_time: %s; or uniform("0.5s", "1.5s") for a random pause.`, err))
	}
	checkDuration(d, false, "think_time", attr.Expr.Range(), &diags)
	return ThinkTime{Min: d, Max: d}, diags
}

// objectItemRange returns the range of the value of key in an object
// constructor, or fallback, so that a message can point at the exact item.
func objectItemRange(expr hcl.Expression, key string, fallback hcl.Range) hcl.Range {
	obj, ok := expr.(*hclsyntax.ObjectConsExpr)
	if !ok {
		return fallback
	}
	for _, item := range obj.Items {
		k, diags := item.KeyExpr.Value(nil)
		if !diags.HasErrors() && k.Type() == cty.String && k.IsKnown() && !k.IsNull() && k.AsString() == key {
			return item.ValueExpr.Range()
		}
	}
	return fallback
}

// friendlyValue describes a value for a message: the value itself when it
// is a short primitive, its type otherwise.
func friendlyValue(v cty.Value) string {
	if v.ContainsMarked() {
		v, _ = v.UnmarkDeep()
		if v.Type().IsPrimitiveType() {
			return "a sensitive " + v.Type().FriendlyName()
		}
	}
	switch {
	case v.IsNull():
		return "null"
	case !v.IsKnown():
		return "an unknown value"
	case v.Type() == cty.Number:
		return numberString(v)
	case v.Type() == cty.String && len(v.AsString()) <= 40:
		return fmt.Sprintf("%q", v.AsString())
	case v.Type() == cty.Bool:
		return fmt.Sprint(v.True())
	}
	return "a " + v.Type().FriendlyName()
}

// MaxWeightCycle bounds WeightCycle: the core precomputes one cycle of the
// weighted mix, so that every cycle holds the weights exactly.
const MaxWeightCycle = 1 << 20

// WeightCycle is the length of a scenario's weighted mix cycle: the sum of
// its requests' weights divided by their greatest common divisor.
func WeightCycle(mix []*Flow) int {
	weights := make([]int, len(mix))
	for i, f := range mix {
		weights[i] = f.Weight
	}
	_, cycle := ReduceWeights(weights)
	return cycle
}

// ReduceWeights divides positive weights by their greatest common divisor
// and returns them with their sum, the length of one cycle of the mix.
func ReduceWeights(weights []int) (reduced []int, cycle int) {
	g := 0
	for _, w := range weights {
		for b := w; b != 0; {
			g, b = b, g%b
		}
	}
	if g == 0 {
		return nil, 0
	}
	reduced = make([]int, len(weights))
	for i, w := range weights {
		reduced[i] = w / g
		cycle += reduced[i]
	}
	return reduced, cycle
}
