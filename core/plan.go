package core

import (
	"time"

	"github.com/hload/hload/config"
)

// ScenarioPlan is a scenario's schedule, computed before anything runs.
type ScenarioPlan struct {
	Name     string
	Executor string
	Model    string
	// Duration is how long load is planned; when Bounded is false the end
	// depends on how fast the target answers (iterations without
	// max_duration) and Duration is only the ramp-up.
	Duration     time.Duration
	Bounded      bool
	GracefulStop time.Duration
	MaxVUs       int
	// Iterations is the exact number of iterations, or -1 when the
	// executor runs for a time instead of a count.
	Iterations int64
	Points     []PlanPoint // VUs at the times where the schedule bends
	Requests   []RequestShare
}

// PlanPoint is the planned number of VUs at a time.
type PlanPoint struct {
	At  time.Duration
	VUs int
}

// RequestShare is a request's expected share of the iterations.
type RequestShare struct {
	Name   string
	Target string
	Weight int
	Share  float64 // 0..1
}

// Plan computes every scenario's schedule for the segment.
func Plan(test *config.Test, seg Segment) []ScenarioPlan {
	plans := make([]ScenarioPlan, 0, len(test.Scenarios))
	for _, s := range test.Scenarios {
		d, bounded := plannedDuration(s.Executor)
		p := ScenarioPlan{
			Name:         s.Name,
			Executor:     s.Executor.Name(),
			Model:        model(s.Executor),
			Duration:     d,
			Bounded:      bounded,
			GracefulStop: s.GracefulStop,
			Iterations:   -1,
		}
		switch e := s.Executor.(type) {
		case config.ConstantVUs:
			p.Points = []PlanPoint{{0, seg.Scale(e.VUs)}, {e.Duration, seg.Scale(e.VUs)}}
		case config.RampingVUs:
			p.Points = append(p.Points, PlanPoint{0, seg.Scale(e.StartVUs)})
			var at time.Duration
			for _, st := range e.Stages {
				at += st.Duration
				p.Points = append(p.Points, PlanPoint{at, seg.Scale(st.Target)})
			}
		case config.Iterations:
			n := seg.Scale(e.VUs)
			p.Points = []PlanPoint{{0, min(n, 1)}, {e.RampUp, n}}
			p.Iterations = int64(n) * int64(e.Iterations)
		}
		for _, pt := range p.Points {
			p.MaxVUs = max(p.MaxVUs, pt.VUs)
		}
		total := 0
		for _, r := range s.Requests {
			total += r.Weight
		}
		for _, r := range s.Requests {
			p.Requests = append(p.Requests, RequestShare{
				Name: r.Name, Target: r.Target, Weight: r.Weight,
				Share: float64(r.Weight) / float64(total),
			})
		}
		plans = append(plans, p)
	}
	return plans
}
