package core

import (
	"math"
	"slices"
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
	// Iterations is the exact number of iterations (iterations executor)
	// or the planned number (open model), or -1 when a closed executor
	// runs for a time instead of a count.
	Iterations int64
	Points     []PlanPoint // closed model: VUs at the times where the schedule bends
	Rates      []RatePoint // open model: the arrival rate where it bends
	// PeakRate is the open model's highest rate, per second.
	PeakRate        float64
	PreAllocatedVUs int
	// ConnectionsPerVU is how many connections a VU of the scenario
	// holds open, over the targets it uses that give each VU its own;
	// ConnectsAhead is the part of it that an open-model VU opens before
	// its first iteration (HTTP's connections_per_vu, in process).
	ConnectionsPerVU int
	ConnectsAhead    int
	// GrowsBy is how many VUs the open model's pool adds at a time.
	GrowsBy int
	// Requests are the requests an iteration may send, in the order of
	// Mix: each bare request, and each step of each flow with its flow's
	// weight and share (a run of the flow sends it at most once). The
	// setup's steps are not in it: they are not part of iterations.
	Requests []RequestShare
	// Mix is what an iteration picks from, by weight, in file order: the
	// flows and the bare requests (Single), each with its steps.
	Mix []FlowShare
	// Setup is the steps each VU runs once before its first iteration,
	// with no weight nor share; nil when the scenario has no setup.
	Setup *FlowShare
	// Capacity is a capacity search's steps; nil for other executors.
	Capacity *CapacityPlan
}

// RatePoint is the planned arrival rate, per second, at a time.
type RatePoint struct {
	At        time.Duration
	PerSecond float64
}

// VUsFor returns how many VUs the open model needs to hold its peak rate
// when an iteration takes latency, by Little's law (VUs = rate x latency).
func (p ScenarioPlan) VUsFor(latency time.Duration) int {
	return int(math.Ceil(p.PeakRate * latency.Seconds()))
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

// FlowShare is an entry of a scenario's mix, a flow or a bare request,
// with its expected share of the iterations and its steps in order; or a
// scenario's setup.
type FlowShare struct {
	Name   string
	Weight int
	Share  float64 // 0..1; 0 for a setup
	// Single marks a bare request: its one step is the request itself.
	Single bool
	// ThinkTime is the pause between two steps; zero means none.
	ThinkTime config.ThinkTime
	Steps     []StepPlan
}

// StepPlan is one step of a flow or a setup.
type StepPlan struct {
	Name   string
	Target string
	// Captures are the names the step captures into vu.vars, in file
	// order.
	Captures []string
	// ContinueOnFailure lets the flow go on past this step when it fails.
	ContinueOnFailure bool
}

// Targets returns the targets of the steps, each once, in step order.
func (f FlowShare) Targets() []string {
	var out []string
	for _, st := range f.Steps {
		if !slices.Contains(out, st.Target) {
			out = append(out, st.Target)
		}
	}
	return out
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
		case config.ConstantArrivalRate:
			planArrivals(&p, constantRate(e), e.PreAllocatedVUs, e.MaxVUs, seg)
		case config.RampingArrivalRate:
			planArrivals(&p, rampingRate(e), e.PreAllocatedVUs, e.MaxVUs, seg)
		case config.CapacitySearch:
			planCapacity(&p, e)
		}
		for _, pt := range p.Points {
			p.MaxVUs = max(p.MaxVUs, pt.VUs)
		}
		planMix(&p, s)
		planConnections(&p, test)
		plans = append(plans, p)
	}
	return plans
}

// planConnections fills how many connections each VU of p holds.
func planConnections(p *ScenarioPlan, test *config.Test) {
	for _, name := range planTargets(*p) {
		i := slices.IndexFunc(test.Targets, func(t *config.Target) bool { return t.Name == name })
		if i < 0 {
			continue
		}
		t := test.Targets[i]
		perVU, one := socketsPerVU(t)
		if one {
			continue
		}
		p.ConnectionsPerVU += perVU
		// The built-in HTTP client is a protocols.Connector.
		if t.Protocol == "http" && !t.Isolate {
			p.ConnectsAhead += perVU
		}
	}
}

// planMix fills a plan's mix, setup and requests.
func planMix(p *ScenarioPlan, s *config.Scenario) {
	mix := s.Mix
	if len(mix) == 0 {
		// A scenario built without its mix, as a test may: every request
		// is a bare one.
		for _, r := range s.Requests {
			mix = append(mix, &config.Flow{Name: r.Name, Weight: r.Weight, Steps: []*config.Request{r}, Single: true})
		}
	}
	total := 0
	for _, f := range mix {
		total += f.Weight
	}
	for _, f := range mix {
		fs := flowShare(f)
		fs.Share = float64(f.Weight) / float64(total)
		p.Mix = append(p.Mix, fs)
		for _, st := range f.Steps {
			p.Requests = append(p.Requests, RequestShare{Name: st.Name, Target: st.Target, Weight: f.Weight, Share: fs.Share})
		}
	}
	if s.Setup != nil {
		setup := flowShare(s.Setup)
		setup.Weight = 0
		p.Setup = &setup
	}
}

// flowShare describes a flow's steps; its share is the caller's to set.
func flowShare(f *config.Flow) FlowShare {
	fs := FlowShare{Name: f.Name, Weight: f.Weight, Single: f.Single, ThinkTime: f.ThinkTime}
	for _, r := range f.Steps {
		st := StepPlan{Name: r.Name, Target: r.Target, ContinueOnFailure: r.ContinueOnFailure}
		for _, c := range r.Captures {
			st.Captures = append(st.Captures, c.Name)
		}
		fs.Steps = append(fs.Steps, st)
	}
	return fs
}

// planArrivals fills an open-model plan: the rate where it bends, the
// planned iterations, and the VU pool, all for this segment's share.
func planArrivals(p *ScenarioPlan, a arrivals, preAllocated, maxVUs int, seg Segment) {
	share := 1.0
	if seg.Count > 1 {
		share = 1 / float64(seg.Count)
	}
	var at time.Duration
	for _, st := range a.stages {
		p.Rates = append(p.Rates, RatePoint{at, st.from * share})
		at += st.duration
		p.PeakRate = max(p.PeakRate, st.from*share, st.to*share)
	}
	if n := len(a.stages); n > 0 {
		p.Rates = append(p.Rates, RatePoint{at, a.stages[n-1].to * share})
	}
	total := a.countBy(a.duration())
	p.Iterations = total
	if seg.Count > 1 {
		// Iteration k goes to segment k mod count.
		p.Iterations = total / int64(seg.Count)
		if int64(seg.Index) < total%int64(seg.Count) {
			p.Iterations++
		}
	}
	p.PreAllocatedVUs = max(1, seg.Scale(preAllocated))
	p.MaxVUs = max(p.PreAllocatedVUs, seg.Scale(maxVUs))
	p.GrowsBy = maxConnecting
}
