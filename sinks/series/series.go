// Package series collects a run's figures interval by interval for the
// HTML report and the summary export (metrics.IntervalSeries). It is a
// core.Sink fed the interval snapshots. Its memory is bounded: when it
// holds MaxPoints points it merges them pairwise, and from then on each
// new point gathers twice as many intervals, so a long run ends with
// between MaxPoints/2 and MaxPoints points per series, each holding the
// same power of two of intervals (the last one may hold fewer).
// Intervals are merged, never dropped.
package series

import (
	"context"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/hload/hload/core"
	"github.com/hload/hload/metrics"
)

// MaxPoints is the most points a collector holds per series: a 1-hour
// run at 1 s intervals ends with 900 points of 4 intervals each, and 50
// requests' series then take about 1.5 MB of JSON.
const MaxPoints = 1024

// maxEvents bounds the warnings kept; each is said once, so a run rarely
// has more than a few.
const maxEvents = 100

// How two points' values merge into one.
type mergeKind int

const (
	mergeRate  mergeKind = iota // a per-second rate: the mean weighted by the points' lengths
	mergeLevel                  // a level at the point's end (VUs, gauges): the later one
	mergeWorst                  // a latency percentile: the higher one, so a spike stays visible
)

// column is one value per point and how it merges.
type column struct {
	kind mergeKind
	vals []float64
}

// setLast sets the value of the last point.
func (c *column) setLast(v float64) { c.vals[len(c.vals)-1] = v }

func (c *column) merge(dur []float64) {
	n := len(c.vals) / 2
	for i := range n {
		a, b := c.vals[2*i], c.vals[2*i+1]
		c.vals[i] = mergeValues(c.kind, a, b, dur[2*i], dur[2*i+1])
	}
	if len(c.vals)%2 == 1 {
		c.vals[n] = c.vals[len(c.vals)-1]
		n++
	}
	c.vals = c.vals[:n]
}

func mergeValues(kind mergeKind, a, b, da, db float64) float64 {
	switch kind {
	case mergeLevel:
		return b
	case mergeWorst:
		switch {
		case math.IsNaN(a):
			return b
		case math.IsNaN(b):
			return a
		}
		return max(a, b)
	}
	if da+db <= 0 {
		return a + b
	}
	return (a*da + b*db) / (da + db)
}

type requestCols struct {
	rps, errs, p50, p95, p99 column
	metrics                  map[string]*metricCols
}

type metricCols struct {
	perS, p50, p95, p99 column
	timed               bool
}

type scenarioCols struct {
	info                         metrics.ScenarioInfo
	plan                         *core.ScenarioPlan
	planned, vus, iters, dropped column
	requests                     map[string]*requestCols
}

// Collector is a core.Sink that keeps the run's series. Write is never
// called concurrently (core.Sink), so it needs no lock.
type Collector struct {
	plans     map[string]*core.ScenarioPlan
	max       int
	started   time.Time
	interval  float64
	merged    int
	times     []float64 // end of each point, seconds since the start
	durations []float64 // length of each point, seconds
	intervals []int     // intervals each point holds, up to merged
	scenarios map[string]*scenarioCols
	order     []string // scenarios in the order RunInfo gives them
	gauges    map[string]*column
	cpu       column // hload's own CPU, as a fraction of its cores
	events    []metrics.SeriesEvent
}

var _ core.Sink = (*Collector)(nil)

// New returns a collector for a run of the scenarios planned in plans
// (core.Plan), which give the stage boundaries and the planned load.
func New(plans []core.ScenarioPlan) *Collector {
	c := &Collector{plans: map[string]*core.ScenarioPlan{}, max: MaxPoints, merged: 1,
		scenarios: map[string]*scenarioCols{}, gauges: map[string]*column{}, cpu: column{kind: mergeRate}}
	for i := range plans {
		c.plans[plans[i].Name] = &plans[i]
	}
	return c
}

// Start notes the run's start and its scenarios.
func (c *Collector) Start(_ context.Context, run metrics.RunInfo) error {
	c.started = run.Started
	for _, si := range run.Scenarios {
		c.scenario(si.Name).info = si
	}
	return nil
}

func (c *Collector) scenario(name string) *scenarioCols {
	if sc := c.scenarios[name]; sc != nil {
		return sc
	}
	sc := &scenarioCols{
		info: metrics.ScenarioInfo{Name: name}, plan: c.plans[name],
		vus: c.newColumn(mergeLevel), iters: c.newColumn(mergeRate), dropped: c.newColumn(mergeRate),
		requests: map[string]*requestCols{},
	}
	sc.planned = c.newColumn(mergeLevel)
	if sc.plan != nil && sc.plan.Model == "open" {
		sc.planned = c.newColumn(mergeRate)
	}
	c.scenarios[name] = sc
	c.order = append(c.order, name)
	return sc
}

// newColumn returns a column with a value for each point so far: none
// (NaN) for latencies, 0 for the rest.
func (c *Collector) newColumn(kind mergeKind) column {
	fill := 0.0
	if kind == mergeWorst {
		fill = math.NaN()
	}
	vals := make([]float64, len(c.times), cap(c.times))
	for i := range vals {
		vals[i] = fill
	}
	return column{kind: kind, vals: vals}
}

func (c *Collector) request(sc *scenarioCols, name string) *requestCols {
	if r := sc.requests[name]; r != nil {
		return r
	}
	r := &requestCols{rps: c.newColumn(mergeRate), errs: c.newColumn(mergeRate),
		p50: c.newColumn(mergeWorst), p95: c.newColumn(mergeWorst), p99: c.newColumn(mergeWorst),
		metrics: map[string]*metricCols{}}
	sc.requests[name] = r
	return r
}

// Write adds the snapshot as one point, then merges the points pairwise
// when there are MaxPoints of them.
func (c *Collector) Write(s metrics.Snapshot) error {
	length := s.End.Sub(s.Start).Seconds()
	if c.interval == 0 && !s.Final {
		c.interval = length
	}
	start, end := (s.Elapsed - s.End.Sub(s.Start)).Seconds(), s.Elapsed.Seconds()
	c.addPoint(end, length)
	c.setRequests(s.Series, length)
	c.setScenarios(s, length, start, end)
	c.cpu.setLast(s.GeneratorCPU)
	for name, v := range s.Gauges {
		g := c.gauges[name]
		if g == nil {
			col := c.newColumn(mergeLevel)
			g = &col
			c.gauges[name] = g
		}
		g.setLast(float64(v))
	}
	for _, w := range s.Warnings {
		if len(c.events) < maxEvents {
			c.events = append(c.events, metrics.SeriesEvent{TimeS: end, Text: w})
		}
	}
	if n := len(c.times); n >= 2 && c.intervals[n-2] < c.merged {
		// Since the last merge a point holds c.merged intervals: this
		// one joins the point that is not full yet.
		c.mergeLast()
	}
	if len(c.times) >= c.max {
		c.mergePairs()
	}
	return nil
}

// addPoint adds a point that ends at end seconds and lasts length, with
// every column's default: the snapshot then sets what it has.
func (c *Collector) addPoint(end, length float64) {
	c.times = append(c.times, end)
	c.durations = append(c.durations, length)
	c.intervals = append(c.intervals, 1)
	for _, col := range c.columns() {
		fill := 0.0
		if col.kind == mergeWorst {
			fill = math.NaN()
		}
		col.vals = append(col.vals, fill)
	}
}

// setRequests sets the last point of each request's columns, and of its
// protocol metrics', from an interval of length seconds.
func (c *Collector) setRequests(figures []metrics.SeriesFigures, length float64) {
	for _, f := range figures {
		r := c.request(c.scenario(f.Scenario), f.Request)
		r.rps.setLast(f.RPS)
		if f.Count > 0 {
			// The snapshot's rate (spread over the interval before in a
			// short last one), split by its error share.
			r.errs.setLast(f.RPS * float64(f.Errors) / float64(f.Count))
			r.p50.setLast(f.Latency.P50)
			r.p95.setLast(f.Latency.P95)
			r.p99.setLast(f.Latency.P99)
		}
		for name, m := range f.Metrics {
			mc := r.metrics[name]
			if mc == nil {
				mc = &metricCols{perS: c.newColumn(mergeRate), p50: c.newColumn(mergeWorst),
					p95: c.newColumn(mergeWorst), p99: c.newColumn(mergeWorst)}
				r.metrics[name] = mc
			}
			if length > 0 {
				mc.perS.setLast(float64(m.Count) / length)
			}
			if m.Count > 0 {
				mc.p50.setLast(m.P50)
				mc.p95.setLast(m.P95)
				mc.p99.setLast(m.P99)
			}
			mc.timed = mc.timed || m.Max > 0
		}
	}
}

// setScenarios sets the last point of each scenario's columns: its VUs,
// iterations and dropped iterations from the snapshot, and what its plan
// asks for over [start, end] seconds.
func (c *Collector) setScenarios(s metrics.Snapshot, length, start, end float64) {
	names := unionKeys(s.Iterations, s.Dropped)
	for name := range s.VUs {
		names[name] = true
	}
	for name := range names {
		sc := c.scenario(name)
		sc.vus.setLast(float64(s.VUs[name]))
		if length > 0 {
			sc.iters.setLast(float64(s.Iterations[name]) / length)
			sc.dropped.setLast(float64(s.Dropped[name]) / length)
		}
	}
	for _, sc := range c.scenarios {
		if sc.plan != nil {
			sc.planned.setLast(planned(sc.plan, start, end))
		}
	}
}

// mergeLast merges the last point into the one before it.
func (c *Collector) mergeLast() {
	n := len(c.times)
	for _, col := range c.columns() {
		col.vals[n-2] = mergeValues(col.kind, col.vals[n-2], col.vals[n-1], c.durations[n-2], c.durations[n-1])
		col.vals = col.vals[:n-1]
	}
	c.times[n-2] = c.times[n-1]
	c.durations[n-2] += c.durations[n-1]
	c.intervals[n-2] += c.intervals[n-1]
	c.times, c.durations, c.intervals = c.times[:n-1], c.durations[:n-1], c.intervals[:n-1]
}

// columns returns every column the collector holds.
func (c *Collector) columns() []*column {
	var out []*column
	for _, sc := range c.scenarios {
		out = append(out, &sc.planned, &sc.vus, &sc.iters, &sc.dropped)
		for _, r := range sc.requests {
			out = append(out, &r.rps, &r.errs, &r.p50, &r.p95, &r.p99)
			for _, m := range r.metrics {
				out = append(out, &m.perS, &m.p50, &m.p95, &m.p99)
			}
		}
	}
	for _, g := range c.gauges {
		out = append(out, g)
	}
	return append(out, &c.cpu)
}

// mergePairs halves the points: each pair becomes one point that ends
// where the pair ends and lasts as long as both.
func (c *Collector) mergePairs() {
	for _, col := range c.columns() {
		col.merge(c.durations)
	}
	n := len(c.times) / 2
	for i := range n {
		c.times[i] = c.times[2*i+1]
		c.durations[i] = c.durations[2*i] + c.durations[2*i+1]
		c.intervals[i] = c.intervals[2*i] + c.intervals[2*i+1]
	}
	if len(c.times)%2 == 1 {
		last := len(c.times) - 1
		c.times[n], c.durations[n], c.intervals[n] = c.times[last], c.durations[last], c.intervals[last]
		n++
	}
	c.times, c.durations, c.intervals = c.times[:n], c.durations[:n], c.intervals[:n]
	c.merged *= 2
}

// Close keeps nothing more: the series are read with Series.
func (c *Collector) Close(metrics.Summary) error { return nil }

// Series returns the series collected so far, scenarios and requests
// sorted by name.
func (c *Collector) Series() *metrics.IntervalSeries {
	out := &metrics.IntervalSeries{IntervalS: c.interval, Merged: c.merged, TimeS: slices.Clone(c.times)}
	for _, name := range slices.Sorted(maps.Keys(c.scenarios)) {
		sc := c.scenarios[name]
		ss := metrics.ScenarioSeries{
			Name: name, Executor: sc.info.Executor, Model: sc.info.Model,
			Planned: slices.Clone(sc.planned.vals), VUs: slices.Clone(sc.vus.vals),
			IterationsPerS: slices.Clone(sc.iters.vals), DroppedPerS: slices.Clone(sc.dropped.vals),
			StagesS: []float64{},
		}
		if sc.plan != nil {
			ss.StagesS = stages(sc.plan)
			if ss.Executor == "" {
				ss.Executor, ss.Model = sc.plan.Executor, sc.plan.Model
			}
		}
		for _, rname := range slices.Sorted(maps.Keys(sc.requests)) {
			r := sc.requests[rname]
			rs := metrics.RequestSeries{Name: rname, RPS: slices.Clone(r.rps.vals), ErrorsPerS: slices.Clone(r.errs.vals),
				P50: slices.Clone(r.p50.vals), P95: slices.Clone(r.p95.vals), P99: slices.Clone(r.p99.vals)}
			for _, mname := range slices.Sorted(maps.Keys(r.metrics)) {
				m := r.metrics[mname]
				ms := metrics.MetricSeries{Name: mname, PerS: slices.Clone(m.perS.vals)}
				if m.timed {
					ms.P50, ms.P95, ms.P99 = slices.Clone(m.p50.vals), slices.Clone(m.p95.vals), slices.Clone(m.p99.vals)
				}
				rs.Metrics = append(rs.Metrics, ms)
			}
			ss.Requests = append(ss.Requests, rs)
		}
		out.Scenarios = append(out.Scenarios, ss)
	}
	if len(c.gauges) > 0 {
		out.Gauges = map[string]metrics.Column{}
		for name, g := range c.gauges {
			out.Gauges[name] = slices.Clone(g.vals)
		}
	}
	out.GeneratorCPU = slices.Clone(c.cpu.vals)
	out.Events = slices.Clone(c.events)
	return out
}

// stages returns where the plan's schedule bends, after its start.
func stages(p *core.ScenarioPlan) []float64 {
	out := []float64{}
	add := func(at time.Duration) {
		s := at.Seconds()
		if s > 0 && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	for _, pt := range p.Points {
		add(pt.At)
	}
	for _, pt := range p.Rates {
		add(pt.At)
	}
	return out
}

// planned returns what the plan asks for over [from, to] seconds: the
// closed model's VUs at to, the open model's mean rate over the span.
func planned(p *core.ScenarioPlan, from, to float64) float64 {
	if p.Model == "open" {
		if to <= from {
			return rateAt(p.Rates, to)
		}
		return integrateRate(p.Rates, from, to) / (to - from)
	}
	return vusAt(p.Points, to)
}

// vusAt interpolates the planned VUs linearly between the plan's points;
// 0 after the last one.
func vusAt(pts []core.PlanPoint, t float64) float64 {
	for i := 1; i < len(pts); i++ {
		a, b := pts[i-1], pts[i]
		ta, tb := a.At.Seconds(), b.At.Seconds()
		if t <= tb {
			if tb == ta {
				return float64(b.VUs)
			}
			f := max(0, (t-ta)/(tb-ta))
			return float64(a.VUs) + f*float64(b.VUs-a.VUs)
		}
	}
	return 0
}

// rateAt interpolates the planned rate linearly between the plan's
// points; 0 after the last one.
func rateAt(pts []core.RatePoint, t float64) float64 {
	for i := 1; i < len(pts); i++ {
		a, b := pts[i-1], pts[i]
		ta, tb := a.At.Seconds(), b.At.Seconds()
		if t >= ta && t <= tb && tb > ta {
			return a.PerSecond + (t-ta)/(tb-ta)*(b.PerSecond-a.PerSecond)
		}
	}
	return 0
}

// integrateRate returns the iterations the plan starts in [from, to]:
// the integral of its piecewise-linear rate.
func integrateRate(pts []core.RatePoint, from, to float64) float64 {
	total := 0.0
	for i := 1; i < len(pts); i++ {
		ta, tb := pts[i-1].At.Seconds(), pts[i].At.Seconds()
		lo, hi := max(ta, from), min(tb, to)
		if hi <= lo {
			continue
		}
		total += (hi - lo) * (rateAt(pts, lo) + rateAt(pts, hi)) / 2
	}
	return total
}

func unionKeys(ms ...map[string]int64) map[string]bool {
	out := map[string]bool{}
	for _, m := range ms {
		for k := range m {
			out[k] = true
		}
	}
	return out
}
