package config

import (
	"fmt"
	"math"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
)

// defaultTimeUnit is the time_unit of a rate that names none.
const defaultTimeUnit = time.Second

// The default VU pool of the open executors. maxVUsLatency is the longest
// iteration the default max_vus keeps up with at the peak rate, by Little's
// law (VUs busy = rate x latency); preAllocatedLatency sizes the pool that
// exists, connected, from the start. It is small on purpose: each
// pre-allocated VU opens its connections before the first iteration, and
// a VU connected but never used costs the server a socket for nothing. A
// slower target makes the pool grow as iterations wait, a few VUs at a
// time, each connecting once.
const (
	maxVUsLatency       = time.Second
	preAllocatedLatency = 10 * time.Millisecond
)

// decodeArrivalRate builds a constant-arrival-rate or ramping-arrival-rate
// executor. The caller has checked which attributes are set.
func (l *loader) decodeArrivalRate(kind string, attrs hcl.Attributes) (Executor, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	timeUnit := defaultTimeUnit
	if a := attrs["time_unit"]; a != nil {
		d, ok, more := l.durationAttr(a, true, scenarioWhere)
		diags = append(diags, more...)
		if ok {
			timeUnit = d
		}
	}

	// max_queue_wait: how long an iteration may wait for a busy VU pool
	// before it is dropped; 0, the default, drops it at once.
	var maxQueueWait time.Duration
	if a := attrs["max_queue_wait"]; a != nil {
		d, ok, more := l.durationAttr(a, false, scenarioWhere)
		diags = append(diags, more...)
		if ok {
			maxQueueWait = d
		}
	}

	if kind == executorConstantArrivalRate {
		e := ConstantArrivalRate{TimeUnit: timeUnit, MaxQueueWait: maxQueueWait}
		rate, rateOK, d := l.rateAttr(attrs["rate"], false)
		diags = append(diags, d...)
		e.Rate = rate
		e.Duration, _, d = l.durationAttr(attrs["duration"], true, scenarioWhere)
		diags = append(diags, d...)
		if rateOK {
			e.PreAllocatedVUs, e.MaxVUs, d = l.vuPool(attrs, attrs["rate"], rate, timeUnit)
			e.MaxVUsDefault = attrs["max_vus"] == nil
			diags = append(diags, d...)
		}
		return e, diags
	}

	e := RampingArrivalRate{TimeUnit: timeUnit, MaxQueueWait: maxQueueWait}
	startOK := true
	if a := attrs["start_rate"]; a != nil {
		var d hcl.Diagnostics
		e.StartRate, startOK, d = l.rateAttr(a, true)
		diags = append(diags, d...)
	}
	stagesAttr := attrs["stages"]
	ramp, stagesOK, d := l.decodeRamp(stagesAttr, rateStages)
	diags = append(diags, d...)
	peak := e.StartRate
	for _, st := range ramp {
		e.Stages = append(e.Stages, RateStage{Duration: st.duration, Target: st.target})
		peak = max(peak, st.target)
	}
	switch {
	case !startOK || !stagesOK:
		// Reported; the pool cannot be sized without the rates.
	case peak == 0:
		diags = append(diags, errorDiag(stagesAttr.Expr.Range(), "Stages start no iteration",
			"start_rate and every stage target are 0, so no iteration would ever start. Give at least one stage a target above 0."))
	default:
		e.PreAllocatedVUs, e.MaxVUs, d = l.vuPool(attrs, stagesAttr, peak, timeUnit)
		e.MaxVUsDefault = attrs["max_vus"] == nil
		diags = append(diags, d...)
	}
	return e, diags
}

// rateAttr reads a rate: a number above 0, or at least 0 when zero is set.
func (l *loader) rateAttr(attr *hcl.Attribute, zero bool) (float64, bool, hcl.Diagnostics) {
	v, ok, diags := l.staticValue(attr, cty.Number, scenarioWhere)
	if !ok {
		return 0, false, diags
	}
	f, _ := v.AsBigFloat().Float64()
	if math.IsInf(f, 0) || f < 0 || (f == 0 && !zero) || f > maxInt {
		least := fmt.Sprintf("above 0 and at most %d", maxInt)
		if zero {
			least = fmt.Sprintf("from 0 to %d", maxInt)
		}
		return 0, false, append(diags, errorDiag(attr.Expr.Range(), "Invalid "+attr.Name,
			"%s is the number of iterations started per time_unit (1s by default), a number %s; got %s.",
			attr.Name, least, numberString(v)))
	}
	return f, true, diags
}

// vuPool returns pre_allocated_vus and max_vus, as set or by default, for
// a rate of at most peak iterations per timeUnit. rateAttr is where a rate
// too high to run is reported.
func (l *loader) vuPool(attrs hcl.Attributes, rateAttr *hcl.Attribute, peak float64, timeUnit time.Duration) (preVUs, maxVUs int, diags hcl.Diagnostics) {
	// Scaled in nanoseconds so that a whole rate per second stays exact:
	// 1 per 100ms is 10 per second, not 10.000000000000002.
	perSecond := peak * float64(time.Second) / float64(timeUnit)
	if perSecond > maxInt {
		return 0, 0, hcl.Diagnostics{errorDiag(rateAttr.Expr.Range(), "Rate too high",
			"This rate starts %.4g iterations per second at its peak; a scenario starts at most %d per second.",
			perSecond, maxInt)}
	}
	preAttr, maxAttr := attrs["pre_allocated_vus"], attrs["max_vus"]
	if preAttr != nil {
		n, ok, d := l.intAttr(preAttr, 1, "the virtual users ready before the first iteration", scenarioWhere)
		diags = append(diags, d...)
		if ok {
			preVUs = n
		}
	}
	if maxAttr != nil {
		n, ok, d := l.intAttr(maxAttr, 1, "the most virtual users the scenario may run at once", scenarioWhere)
		diags = append(diags, d...)
		if ok {
			maxVUs = n
		}
	}
	if diags.HasErrors() {
		return 0, 0, diags
	}
	if maxVUs == 0 {
		maxVUs = max(preVUs, vusFor(perSecond, maxVUsLatency))
	}
	if preVUs == 0 {
		preVUs = min(maxVUs, vusFor(perSecond, preAllocatedLatency))
	}
	if preVUs > maxVUs { // both set: a default never exceeds the other
		diags = append(diags, errorDiag(preAttr.Expr.Range(), "Invalid pre_allocated_vus",
			"pre_allocated_vus (%d) is above max_vus (%d), but the pool of virtual users never grows past max_vus. "+
				"Lower pre_allocated_vus, or raise max_vus.", preVUs, maxVUs))
	}
	return preVUs, maxVUs, diags
}

// vusFor returns the virtual users that keep up with perSecond iterations
// per second of the given latency, by Little's law, and at least 1.
func vusFor(perSecond float64, latency time.Duration) int {
	// Divided in whole units so that 100/s for 100ms is exactly 10.
	busy := perSecond * float64(latency) / float64(time.Second)
	return max(1, int(math.Ceil(busy)))
}
