package config

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
)

// The load models of a capacity search.
const (
	ModelOpen   = "open"
	ModelClosed = "closed"
)

// Defaults of a capacity search.
const (
	defaultStepFactor = 1.25
	defaultMinGain    = 50.0
	// maxCapacitySteps bounds the steps a search may plan, so that a
	// step_factor barely above 1 is an error at load, not a run of days.
	maxCapacitySteps = 100
)

// capacityOptional are the optional attributes of a capacity search; which
// apply depends on its model, checked by decodeCapacitySearch.
var capacityOptional = []string{
	"model", "steps", "step_factor", "min_gain", "max_error_rate", "max_p95",
	"start_rate", "max_rate", "time_unit", "pre_allocated_vus", "max_vus", "max_queue_wait",
	"start_vus",
}

// Attributes of a capacity search that only one model takes.
var (
	capacityOpenOnly   = []string{"start_rate", "max_rate", "time_unit", "pre_allocated_vus", "max_queue_wait"}
	capacityClosedOnly = []string{"start_vus"}
)

// CapacitySearch steps the load up, holding each step for StepDuration,
// and stops at the saturation point: the first step whose throughput gain
// is below MinGain percent of its load gain while its latency grows, or
// whose error rate or p95 breaks its bound, or after the last step.
type CapacitySearch struct {
	// Model is ModelOpen (the steps are arrival rates per TimeUnit) or
	// ModelClosed (the steps are VUs).
	Model string
	// Steps are the loads in order, strictly increasing: rates per
	// TimeUnit in the open model, whole numbers of VUs in the closed one.
	Steps        []float64
	StepDuration time.Duration
	// MinGain is a percentage: a step whose throughput grew by less than
	// MinGain percent of its load's growth, while its p95 grew, is past
	// the saturation point.
	MinGain float64
	// MaxErrorRate (a fraction, 0 for none) and MaxP95 (0 for none) stop
	// the search at the first step that passes them.
	MaxErrorRate float64
	MaxP95       time.Duration

	// The open model's pacing and VU pool, as the arrival-rate executors
	// have them; MaxVUs is sized for the last step.
	TimeUnit        time.Duration
	PreAllocatedVUs int
	MaxVUs          int
	MaxVUsDefault   bool // the open model's max_vus was not set
	MaxQueueWait    time.Duration
}

// Name implements Executor.
func (CapacitySearch) Name() string { return executorCapacitySearch }

// decodeCapacitySearch builds a capacity-search executor. The caller has
// checked that only executor attributes of capacity-search are set.
func (l *loader) decodeCapacitySearch(attrs hcl.Attributes) (Executor, hcl.Diagnostics) {
	e := CapacitySearch{Model: ModelOpen, MinGain: defaultMinGain, TimeUnit: defaultTimeUnit}
	model, ok, diags := l.capacityModel(attrs["model"])
	if !ok {
		return nil, diags
	}
	e.Model = model
	diags = append(diags, checkModelAttributes(e.Model, attrs)...)
	if diags.HasErrors() {
		return nil, diags
	}

	var d hcl.Diagnostics
	e.StepDuration, _, d = l.durationAttr(attrs["step_duration"], true, scenarioWhere)
	diags = append(diags, d...)
	diags = append(diags, l.decodeStopRules(&e, attrs)...)

	steps, stepsOK, d := l.capacitySteps(e.Model, attrs)
	diags = append(diags, d...)
	e.Steps = steps
	if e.Model == ModelClosed {
		return e, diags
	}
	if a := attrs["time_unit"]; a != nil {
		if tu, ok, d := l.durationAttr(a, true, scenarioWhere); ok {
			e.TimeUnit = tu
		} else {
			diags = append(diags, d...)
		}
	}
	if a := attrs["max_queue_wait"]; a != nil {
		e.MaxQueueWait, _, d = l.durationAttr(a, false, scenarioWhere)
		diags = append(diags, d...)
	}
	if stepsOK && !diags.HasErrors() {
		peakAttr := attrs["steps"]
		if peakAttr == nil {
			peakAttr = attrs["max_rate"]
		}
		e.PreAllocatedVUs, e.MaxVUs, d = l.vuPool(attrs, peakAttr, steps[len(steps)-1], e.TimeUnit)
		e.MaxVUsDefault = attrs["max_vus"] == nil
		diags = append(diags, d...)
	}
	return e, diags
}

// capacityModel reads the model of a search, open by default. ok is
// false when the model is unknown, reported.
func (l *loader) capacityModel(a *hcl.Attribute) (model string, ok bool, diags hcl.Diagnostics) {
	if a == nil {
		return ModelOpen, true, nil
	}
	m, ok, diags := l.stringAttr(a, scenarioWhere)
	switch {
	case !ok:
		return ModelOpen, true, diags
	case m == ModelOpen || m == ModelClosed:
		return m, true, diags
	}
	return "", false, append(diags, errorDiag(a.Expr.Range(), "Invalid model",
		`model is "open" (the steps are arrival rates, the default) or "closed" (the steps are virtual users); got %q.`, m))
}

// decodeStopRules reads into e the bounds that end a search before its
// last step: min_gain, max_error_rate and max_p95.
func (l *loader) decodeStopRules(e *CapacitySearch, attrs hcl.Attributes) hcl.Diagnostics {
	var diags hcl.Diagnostics
	if a := attrs["min_gain"]; a != nil {
		if v, ok, d := l.numberAttr(a); ok {
			if v <= 0 || v > 100 {
				diags = append(diags, errorDiag(a.Expr.Range(), "Invalid min_gain",
					"min_gain is a percentage above 0 and at most 100: a step whose throughput grew by less than min_gain percent of its load's growth, "+
						"while its latency grew, is past the saturation point; got %g.", v))
			} else {
				e.MinGain = v
			}
		} else {
			diags = append(diags, d...)
		}
	}
	if a := attrs["max_error_rate"]; a != nil {
		if v, ok, d := l.numberAttr(a); ok {
			if v <= 0 || v >= 1 {
				diags = append(diags, errorDiag(a.Expr.Range(), "Invalid max_error_rate",
					"max_error_rate is the share of failed calls that stops the search, a fraction above 0 and below 1, such as 0.05 for 5 %%; got %g.", v))
			} else {
				e.MaxErrorRate = v
			}
		} else {
			diags = append(diags, d...)
		}
	}
	if a := attrs["max_p95"]; a != nil {
		var d hcl.Diagnostics
		e.MaxP95, _, d = l.durationAttr(a, true, scenarioWhere)
		diags = append(diags, d...)
	}
	return diags
}

// checkModelAttributes reports attributes of the other model, and
// think_time in the open model.
func checkModelAttributes(model string, attrs hcl.Attributes) hcl.Diagnostics {
	var diags hcl.Diagnostics
	other, otherName := capacityClosedOnly, ModelClosed
	if model == ModelClosed {
		other, otherName = capacityOpenOnly, ModelOpen
	}
	for _, a := range sortedAttributes(attrs) {
		if !slices.Contains(other, a.Name) {
			continue
		}
		diags = append(diags, errorDiag(a.NameRange, fmt.Sprintf("%s is not used by a %s capacity search", a.Name, model),
			`%s belongs to the %s model of capacity-search (model = %q). This search uses the %s model; remove %s, or set model = %q.`,
			a.Name, otherName, otherName, model, a.Name, otherName))
	}
	if a := attrs["think_time"]; a != nil && model == ModelOpen {
		diags = append(diags, errorDiag(a.NameRange, "think_time is not used by an open capacity search",
			`In the open model the rate decides when iterations start, so a pause after each iteration would only hold a virtual user longer. `+
				`Remove think_time, or set model = "closed" to step virtual users who pause.`))
	}
	return diags
}

// capacityNames are the attribute names of one model's steps.
type capacityNames struct {
	start, max string
	whole      bool   // VUs come whole
	unit       string // what a load counts, for messages
}

func namesFor(model string) capacityNames {
	if model == ModelClosed {
		return capacityNames{start: "start_vus", max: "max_vus", whole: true, unit: "virtual users"}
	}
	return capacityNames{start: "start_rate", max: "max_rate", unit: "iterations per time_unit"}
}

// capacitySteps reads the loads of a search: an explicit steps list, or
// start, step_factor and max. ok is false when they are unusable, reported.
func (l *loader) capacitySteps(model string, attrs hcl.Attributes) (steps []float64, ok bool, diags hcl.Diagnostics) {
	n := namesFor(model)
	startAttr, maxAttr, factorAttr, stepsAttr := attrs[n.start], attrs[n.max], attrs["step_factor"], attrs["steps"]
	if stepsAttr != nil {
		diags = stepsConflicts(n, factorAttr, startAttr, maxAttr)
		if diags.HasErrors() {
			return nil, false, diags
		}
		return l.stepsList(stepsAttr, n)
	}

	if startAttr == nil || maxAttr == nil {
		return nil, false, hcl.Diagnostics{missingStepRange(n, attrs, startAttr, maxAttr)}
	}
	factor := defaultStepFactor
	if factorAttr != nil {
		v, fok, d := l.stepFactor(factorAttr)
		diags = append(diags, d...)
		if !fok {
			return nil, false, diags
		}
		factor = v
	}
	start, sok, d := l.loadAttr(startAttr, n)
	diags = append(diags, d...)
	peak, mok, d := l.loadAttr(maxAttr, n)
	diags = append(diags, d...)
	if !sok || !mok {
		return nil, false, diags
	}
	if peak <= start {
		return nil, false, append(diags, errorDiag(maxAttr.Expr.Range(), "Invalid "+n.max,
			"%s (%g) must be above %s (%g): the search steps its load up from %s to %s.", n.max, peak, n.start, start, n.start, n.max))
	}
	steps = geometricSteps(start, peak, factor, n.whole)
	if len(steps) > maxCapacitySteps {
		// Without step_factor the default is too small for the range, so
		// the error points at the range's top.
		subject := maxAttr
		if factorAttr != nil {
			subject = factorAttr
		}
		return nil, false, append(diags, errorDiag(subject.Expr.Range(), "Too many steps",
			"From %s %g to %s %g by a step_factor of %g takes more than %d steps. Raise step_factor, or narrow the range.",
			n.start, start, n.max, peak, factor, maxCapacitySteps))
	}
	return steps, true, diags
}

// stepsConflicts reports the attributes set beside an explicit steps
// list, which already gives every load.
func stepsConflicts(n capacityNames, attrs ...*hcl.Attribute) hcl.Diagnostics {
	var diags hcl.Diagnostics
	for _, a := range attrs {
		if a == nil {
			continue
		}
		what := "its first step is the start"
		switch a.Name {
		case "step_factor":
			what = "no factor is needed"
		case n.max:
			what = "its last step is the highest load"
		}
		diags = append(diags, errorDiag(a.NameRange, fmt.Sprintf("%s and steps both set", a.Name),
			"steps lists every load of the search, so %s. Remove %s, or remove steps and search from %s by step_factor up to %s.",
			what, a.Name, n.start, n.max))
	}
	return diags
}

// missingStepRange reports a search without steps that lacks its start
// or its max (or both), which step_factor needs.
func missingStepRange(n capacityNames, attrs hcl.Attributes, startAttr, maxAttr *hcl.Attribute) *hcl.Diagnostic {
	missing := n.start
	if startAttr != nil {
		missing = n.max
	}
	if startAttr == nil && maxAttr == nil {
		missing = n.start + " and " + n.max
	}
	return &hcl.Diagnostic{Severity: hcl.DiagError,
		Summary: "Missing " + missing + " for the capacity-search executor",
		Detail: fmt.Sprintf("A capacity search steps its load from %s up to %s by step_factor (%g by default), "+
			"or follows an explicit steps list, such as steps = [50, 100, 150, 200]. Set %s.", n.start, n.max, defaultStepFactor, missing),
		Subject: anyRange(attrs).Ptr()}
}

// stepFactor reads step_factor, which must be above 1 and finite.
func (l *loader) stepFactor(a *hcl.Attribute) (float64, bool, hcl.Diagnostics) {
	v, ok, diags := l.numberAttr(a)
	if !ok {
		return 0, false, diags
	}
	if v <= 1 || math.IsInf(v, 0) {
		return 0, false, append(diags, errorDiag(a.Expr.Range(), "Invalid step_factor",
			"step_factor multiplies the load from one step to the next, so it must be above 1, such as 1.25; got %g.", v))
	}
	return v, true, diags
}

// geometricSteps multiplies the load by factor from start until it
// reaches peak, the last step. Rates are rounded to hundredths and VUs
// (whole) up to the next whole one, at least one more than the step
// before. Past maxCapacitySteps it stops early and returns one step more
// than the bound, for the caller to report.
func geometricSteps(start, peak, factor float64, whole bool) []float64 {
	steps := []float64{start}
	for load := start; ; {
		next := load * factor
		if whole {
			next = max(load+1, math.Ceil(next-1e-9))
		} else {
			next = math.Round(next*100) / 100
		}
		if next >= peak || len(steps) >= maxCapacitySteps {
			break
		}
		steps = append(steps, next)
		load = next
	}
	return append(steps, peak)
}

// stepsList reads an explicit steps list: at least two loads, strictly
// increasing.
func (l *loader) stepsList(attr *hcl.Attribute, n capacityNames) ([]float64, bool, hcl.Diagnostics) {
	v, diags := l.evalStatic(attr.Expr, scenarioWhere)
	if diags.HasErrors() || !v.IsWhollyKnown() {
		return nil, false, diags
	}
	rng := attr.Expr.Range()
	ty := v.Type()
	if v.IsNull() || !(ty.IsListType() || ty.IsTupleType()) || v.LengthInt() < 2 {
		return nil, false, append(diags, errorDiag(rng, "Invalid steps",
			"steps is the list of loads to search, in %s, at least two and each above the one before, such as steps = [50, 100, 150, 200]; got %s.",
			n.unit, friendlyValue(v)))
	}
	var elems []hclsyntax.Expression
	if tuple, ok := attr.Expr.(*hclsyntax.TupleConsExpr); ok {
		elems = tuple.Exprs
	}
	var steps []float64
	for i, it := 0, v.ElementIterator(); it.Next(); i++ {
		_, ev := it.Element()
		erng := rng
		if i < len(elems) {
			erng = elems[i].Range()
		}
		load, ok := stepLoad(ev, n.whole)
		if !ok {
			least := loadRange(n.whole)
			return nil, false, append(diags, errorDiag(erng, "Invalid step",
				"Step %d is a load in %s, %s; got %s.", i+1, n.unit, least, friendlyValue(ev)))
		}
		if i > 0 && load <= steps[i-1] {
			return nil, false, append(diags, errorDiag(erng, "Steps not increasing",
				"Step %d (%g) is not above step %d (%g): a capacity search only steps its load up.", i+1, load, i, steps[i-1]))
		}
		steps = append(steps, load)
	}
	if len(steps) > maxCapacitySteps {
		return nil, false, append(diags, errorDiag(rng, "Too many steps",
			"steps lists %d loads; a capacity search takes at most %d.", len(steps), maxCapacitySteps))
	}
	return steps, true, diags
}

// stepLoad reads one load: above 0 and at most maxInt, and whole when
// whole is set.
func stepLoad(v cty.Value, whole bool) (float64, bool) {
	nv, err := convert.Convert(v, cty.Number)
	if err != nil || nv.IsNull() || !nv.IsKnown() {
		return 0, false
	}
	if whole {
		t, ok := wholeNumber(nv)
		return float64(t), ok && t >= 1 && t <= maxInt
	}
	f, _ := nv.AsBigFloat().Float64()
	return f, f > 0 && f <= maxInt
}

// loadRange says what stepLoad accepts, for a message.
func loadRange(whole bool) string {
	if whole {
		return fmt.Sprintf("a whole number from 1 to %d", maxInt)
	}
	return fmt.Sprintf("a number above 0 and at most %d", maxInt)
}

// loadAttr reads start_rate, max_rate, start_vus or max_vus.
func (l *loader) loadAttr(attr *hcl.Attribute, n capacityNames) (float64, bool, hcl.Diagnostics) {
	v, ok, diags := l.staticValue(attr, cty.Number, scenarioWhere)
	if !ok {
		return 0, false, diags
	}
	load, ok := stepLoad(v, n.whole)
	if !ok {
		least := loadRange(n.whole)
		return 0, false, append(diags, errorDiag(attr.Expr.Range(), "Invalid "+attr.Name,
			"%s is a load in %s, %s; got %s.", attr.Name, n.unit, least, numberString(v)))
	}
	return load, true, diags
}

// numberAttr reads a finite number.
func (l *loader) numberAttr(attr *hcl.Attribute) (float64, bool, hcl.Diagnostics) {
	v, ok, diags := l.staticValue(attr, cty.Number, scenarioWhere)
	if !ok {
		return 0, false, diags
	}
	f, _ := v.AsBigFloat().Float64()
	if math.IsInf(f, 0) {
		return 0, false, append(diags, errorDiag(attr.Expr.Range(), "Invalid "+attr.Name, "%s must be a finite number.", attr.Name))
	}
	return f, true, diags
}

// anyRange is the range of the first of attrs in file order, for a
// message about an attribute that is missing from them.
func anyRange(attrs hcl.Attributes) hcl.Range {
	list := sortedAttributes(attrs)
	for _, a := range list {
		if a.Name == "executor" {
			return a.Range
		}
	}
	return list[0].Range
}
