package core

import (
	"time"

	"github.com/hload/hload/config"
)

// The schedule functions are pure: the executors follow them at run time
// and `hload plan` prints the same stages, so both always agree.

// rampingVUsAt is how many VUs a ramping-vus executor wants active t after
// its start, before segment scaling: linear within the stage that holds t.
func rampingVUsAt(e config.RampingVUs, t time.Duration) int {
	if t < 0 {
		return 0
	}
	from := e.StartVUs
	for _, st := range e.Stages {
		if t < st.Duration {
			frac := float64(t) / float64(st.Duration)
			return from + int(float64(st.Target-from)*frac)
		}
		t -= st.Duration
		from = st.Target
	}
	return 0
}

// vuStartOffset is when VU k of n starts in an iterations executor.
func vuStartOffset(k, n int, rampUp time.Duration) time.Duration {
	if n == 0 {
		return 0
	}
	return time.Duration(int64(rampUp) * int64(k) / int64(n))
}

// plannedDuration is how long the executor plans to send load, without
// the graceful stop. For iterations without a bound it is the ramp-up only
// and ok is false: the end depends on the server.
func plannedDuration(exec config.Executor) (d time.Duration, ok bool) {
	switch e := exec.(type) {
	case config.ConstantVUs:
		return e.Duration, true
	case config.RampingVUs:
		for _, st := range e.Stages {
			d += st.Duration
		}
		return d, true
	case config.Iterations:
		if e.MaxDuration > 0 {
			return e.MaxDuration, true
		}
		return e.RampUp, false
	case config.ConstantArrivalRate:
		return e.Duration, true
	case config.RampingArrivalRate:
		return rampingRate(e).duration(), true
	case config.CapacitySearch:
		return time.Duration(len(e.Steps)) * e.StepDuration, true // at most
	}
	return 0, false
}

// model names the load model of an executor: closed (VUs loop) or open
// (arrivals at a rate).
func model(exec config.Executor) string {
	switch e := exec.(type) {
	case config.ConstantArrivalRate, config.RampingArrivalRate:
		return "open"
	case config.CapacitySearch:
		return e.Model
	}
	return "closed"
}
