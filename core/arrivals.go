package core

import (
	"math"
	"time"

	"github.com/hload/hload/config"
)

// arrivals is the open model's schedule: the arrival rate over time, and
// from it the planned start of every iteration. It is pure, so the pacer
// follows it at run time and `hload plan` prints it before anything runs.
type arrivals struct {
	stages []rateStage
}

// rateStage is a linear ramp of the rate, in iterations per second.
type rateStage struct {
	duration time.Duration
	from, to float64
	before   float64 // iterations planned before this stage starts
}

func newArrivals(start float64, stages []config.RateStage, unit time.Duration) arrivals {
	var a arrivals
	from := start / unit.Seconds()
	before := 0.0
	for _, st := range stages {
		to := st.Target / unit.Seconds()
		a.stages = append(a.stages, rateStage{duration: st.Duration, from: from, to: to, before: before})
		before += (from + to) / 2 * st.Duration.Seconds()
		from = to
	}
	return a
}

// constantRate is the schedule of a constant-arrival-rate executor.
func constantRate(e config.ConstantArrivalRate) arrivals {
	return newArrivals(e.Rate, []config.RateStage{{Duration: e.Duration, Target: e.Rate}}, e.TimeUnit)
}

// rampingRate is the schedule of a ramping-arrival-rate executor.
func rampingRate(e config.RampingArrivalRate) arrivals {
	return newArrivals(e.StartRate, e.Stages, e.TimeUnit)
}

// duration is the schedule's length.
func (a arrivals) duration() time.Duration {
	var d time.Duration
	for _, st := range a.stages {
		d += st.duration
	}
	return d
}

// rateAt returns the planned rate, per second, at t.
func (a arrivals) rateAt(t time.Duration) float64 {
	for _, st := range a.stages {
		if t < st.duration {
			return st.from + (st.to-st.from)*t.Seconds()/st.duration.Seconds()
		}
		t -= st.duration
	}
	return 0
}

// countBy returns how many iterations are planned to start in [0, t): the
// integral of the rate, rounded up, since iteration 0 starts at 0.
func (a arrivals) countBy(t time.Duration) int64 {
	if t <= 0 {
		return 0
	}
	total := 0.0
	for _, st := range a.stages {
		if t < st.duration {
			s, d := t.Seconds(), st.duration.Seconds()
			total = st.before + st.from*s + (st.to-st.from)*s*s/(2*d)
			return int64(math.Ceil(total - 1e-9))
		}
		t -= st.duration
		total = st.before + (st.from+st.to)/2*st.duration.Seconds()
	}
	return int64(math.Ceil(total - 1e-9))
}

// at returns when iteration n (0-based) is planned to start: the time at
// which the integral of the rate reaches n. ok is false past the end.
func (a arrivals) at(n int64) (time.Duration, bool) {
	var offset time.Duration
	m := float64(n)
	for _, st := range a.stages {
		d := st.duration.Seconds()
		inStage := (st.from + st.to) / 2 * d
		if m < st.before+inStage {
			// Solve from*s + (to-from)/(2d)*s² = m-before for s in [0, d).
			// This form stays exact when the rate does not change and
			// when it ramps down.
			rest := m - st.before
			slope := (st.to - st.from) / (2 * d)
			disc := st.from*st.from + 4*slope*rest
			s := 2 * rest / (st.from + math.Sqrt(max(0, disc)))
			if math.IsNaN(s) || math.IsInf(s, 0) {
				s = 0 // a ramp up from rate 0 at its very start
			}
			return offset + time.Duration(min(s, d)*float64(time.Second)), true
		}
		offset += st.duration
	}
	return 0, false
}
