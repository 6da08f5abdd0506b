package core

import (
	"time"

	"github.com/hload/hload/config"
)

// CapacityPlan is the steps a capacity search may take. It stops at the
// first step that does not hold, so it may take fewer.
type CapacityPlan struct {
	Steps        []float64 // loads, in Unit
	Unit         string    // "iterations/s", "iterations/1m0s" or "vus"
	StepDuration time.Duration
	MinGain      float64       // percent
	MaxErrorRate float64       // a fraction; 0 for none
	MaxP95       time.Duration // 0 for none
}

// planCapacity fills a capacity search's plan. The open model's VU pool is
// sized for its last step; the closed model's VUs are at most the last
// step's. The planned iterations are unknown: the search may stop early.
func planCapacity(p *ScenarioPlan, e config.CapacitySearch) {
	p.Capacity = &CapacityPlan{Steps: e.Steps, Unit: capacityUnit(e), StepDuration: e.StepDuration,
		MinGain: e.MinGain, MaxErrorRate: e.MaxErrorRate, MaxP95: e.MaxP95}
	last := e.Steps[len(e.Steps)-1]
	if e.Model == config.ModelClosed {
		for i, l := range e.Steps {
			p.Points = append(p.Points, PlanPoint{time.Duration(i) * e.StepDuration, int(l)})
		}
		return
	}
	p.PeakRate = last / e.TimeUnit.Seconds()
	p.PreAllocatedVUs, p.MaxVUs = e.PreAllocatedVUs, e.MaxVUs
	p.GrowsBy = maxConnecting
	for i, l := range e.Steps {
		p.Rates = append(p.Rates, RatePoint{time.Duration(i) * e.StepDuration, l / e.TimeUnit.Seconds()})
	}
}
