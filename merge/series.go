package merge

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/hload/hload/core"
	"github.com/hload/hload/metrics"
)

// maxEvents bounds the events kept, as a run's series do.
const maxEvents = 100

// seriesPoint is one series' part of a merged point.
type seriesPoint struct {
	count, errors int64
	latency       *hdr.PackedHistogram
	metrics       map[string]*hdr.PackedHistogram
}

type key struct{ scenario, name string }

// mergedPoint is one point of the merged run, over all segments.
type mergedPoint struct {
	start, end float64 // seconds since the merged run's start
	intervals  int
	requests   map[key]*seriesPoint
	vus        map[string]int
	iterations map[string]int64
	dropped    map[string]int64
	gauges     map[string]int64
}

func newMergedPoint() *mergedPoint {
	return &mergedPoint{start: math.Inf(1), end: math.Inf(-1), requests: map[key]*seriesPoint{},
		vus: map[string]int{}, iterations: map[string]int64{}, dropped: map[string]int64{}, gauges: map[string]int64{}}
}

// mergeSeries rebuilds the series the HTML report draws from the points
// of every segment. The segments started together (--start-at) and took
// their snapshots at the same interval, so their points align by index;
// a segment whose points hold fewer intervals (its run had fewer points
// when it ended) has its points grouped to hold as many as the others'.
// It also returns each gauge's highest level summed over the segments.
func mergeSeries(inputs []Input, order []int, segs []core.Segment, started time.Time) (*metrics.IntervalSeries, map[string]int64, error) {
	merged, interval := 1, 0.0
	for _, i := range order {
		m := inputs[i].Summary.Mergeable
		merged = max(merged, m.Merged)
		interval = max(interval, m.IntervalS)
	}
	var points []*mergedPoint
	for _, i := range order {
		m := inputs[i].Summary.Mergeable
		offset := inputs[i].Summary.Started.Sub(started).Seconds()
		group := 1
		if m.Merged > 0 && merged%m.Merged == 0 {
			group = merged / m.Merged
		}
		for j, p := range m.Points {
			at := j / group
			for len(points) <= at {
				points = append(points, newMergedPoint())
			}
			last := j%group == group-1 || j == len(m.Points)-1
			if err := points[at].add(&p, offset, last); err != nil {
				return nil, nil, fmt.Errorf("%s: point %d: %w", inputs[i].Name, j+1, err)
			}
		}
	}
	out := &metrics.IntervalSeries{IntervalS: interval, Merged: merged}
	gaugesMax := map[string]int64{}
	for _, p := range points {
		out.TimeS = append(out.TimeS, p.end)
		for name, v := range p.gauges {
			gaugesMax[name] = max(gaugesMax[name], v)
		}
	}
	out.Scenarios = scenarioSeries(inputs, order, points, started)
	out.Gauges = gaugeSeries(points)
	out.Events = events(inputs, order, segs, started)
	return out, gaugesMax, nil
}

// add adds a segment's point, whose times are offset seconds after the
// merged run's start; levels says whether its levels are the segment's at
// the merged point's end (the last of the segment's points it groups).
func (mp *mergedPoint) add(p *metrics.MergePoint, offset float64, levels bool) error {
	mp.start = min(mp.start, p.StartS+offset)
	mp.end = max(mp.end, p.EndS+offset)
	mp.intervals = max(mp.intervals, p.Intervals)
	for _, d := range p.Requests {
		if err := mp.addSeries(&d); err != nil {
			return fmt.Errorf("scenario %q, request %q: %w", d.Scenario, d.Name, err)
		}
	}
	// Levels at the point's end add up over the machines; the counts of
	// what ended during the point too.
	if levels {
		for name, v := range p.VUs {
			mp.vus[name] += v
		}
		for name, v := range p.Gauges {
			mp.gauges[name] += v
		}
	}
	for name, v := range p.Iterations {
		mp.iterations[name] += v
	}
	for name, v := range p.Dropped {
		mp.dropped[name] += v
	}
	return nil
}

func (mp *mergedPoint) addSeries(d *metrics.SeriesData) error {
	k := key{d.Scenario, d.Name}
	sp := mp.requests[k]
	if sp == nil {
		sp = &seriesPoint{metrics: map[string]*hdr.PackedHistogram{}}
		mp.requests[k] = sp
	}
	sp.count += d.Count
	sp.errors += d.Errors
	if d.Latency != "" {
		h, err := metrics.DecodePointHistogram(d.Latency)
		if err != nil {
			return fmt.Errorf("latency histogram: %w", err)
		}
		if sp.latency == nil {
			sp.latency = h
		} else {
			sp.latency.Merge(h)
		}
	}
	for name, enc := range d.Metrics {
		h, err := metrics.DecodePointHistogram(enc)
		if err != nil {
			return fmt.Errorf("histogram of %s: %w", name, err)
		}
		if sp.metrics[name] == nil {
			sp.metrics[name] = h
		} else {
			sp.metrics[name].Merge(h)
		}
	}
	return nil
}

// lengths returns each point's length in seconds, and the length its
// rates are over: its own, except a last point shorter than its
// intervals, whose rates run over it and the point before, over the
// counts of both, as a run's own series do (calls that end with the run
// finish milliseconds after the last tick and would read as a burst).
func lengths(points []*mergedPoint, interval float64) (own, rate []float64, spread bool) {
	for _, p := range points {
		own = append(own, max(0, p.end-p.start))
	}
	rate = slices.Clone(own)
	n := len(points)
	if n >= 2 && own[n-1] < float64(points[n-1].intervals)*interval {
		rate[n-1] = own[n-2] + own[n-1]
		spread = true
	}
	return own, rate, spread
}

// scenarioSeries rebuilds every scenario's series.
func scenarioSeries(inputs []Input, order []int, points []*mergedPoint, started time.Time) []metrics.ScenarioSeries {
	interval := 0.0
	names := map[string]metrics.ScenarioSeries{}
	requests := map[string]map[string]bool{}
	for _, i := range order {
		s := inputs[i].Summary
		interval = max(interval, s.Mergeable.IntervalS)
		if s.Series != nil {
			for _, ss := range s.Series.Scenarios {
				if _, ok := names[ss.Name]; !ok {
					names[ss.Name] = metrics.ScenarioSeries{Name: ss.Name, Executor: ss.Executor, Model: ss.Model, StagesS: ss.StagesS}
				}
			}
		}
		for name, sc := range s.Scenarios {
			if _, ok := names[name]; !ok {
				names[name] = metrics.ScenarioSeries{Name: name, Executor: sc.Executor, Model: sc.Model, StagesS: []float64{}}
			}
			if requests[name] == nil {
				requests[name] = map[string]bool{}
			}
			for req := range sc.Requests {
				requests[name][req] = true
			}
		}
	}
	own, rate, spread := lengths(points, interval)
	perS := func(j int, n int64) float64 {
		if rate[j] <= 0 {
			return 0
		}
		return float64(n) / rate[j]
	}
	var out []metrics.ScenarioSeries
	for _, name := range sortedKeys(names) {
		ss := names[name]
		for j, p := range points {
			ss.VUs = append(ss.VUs, float64(p.vus[name]))
			if own[j] > 0 {
				ss.IterationsPerS = append(ss.IterationsPerS, float64(p.iterations[name])/own[j])
				ss.DroppedPerS = append(ss.DroppedPerS, float64(p.dropped[name])/own[j])
			} else {
				ss.IterationsPerS = append(ss.IterationsPerS, 0)
				ss.DroppedPerS = append(ss.DroppedPerS, 0)
			}
			ss.Planned = append(ss.Planned, planned(inputs, order, name, p.end, started))
		}
		for _, req := range sortedKeys(requests[name]) {
			ss.Requests = append(ss.Requests, requestSeries(points, key{name, req}, own, perS, spread))
		}
		out = append(out, ss)
	}
	return out
}

// requestSeries rebuilds one request's series.
func requestSeries(points []*mergedPoint, k key, own []float64, perS func(int, int64) float64, spread bool) metrics.RequestSeries {
	rs := metrics.RequestSeries{Name: k.name}
	metricNames := map[string]bool{}
	timed := map[string]bool{}
	for _, p := range points {
		if sp := p.requests[k]; sp != nil {
			for name, h := range sp.metrics {
				metricNames[name] = true
				timed[name] = timed[name] || h.Max() > 0
			}
		}
	}
	n := len(points)
	for j, p := range points {
		sp := p.requests[k]
		if sp == nil {
			sp = &seriesPoint{}
		}
		count, errs := sp.count, sp.errors
		if spread && j == n-1 {
			if prev := points[n-2].requests[k]; prev != nil {
				count += prev.count
			}
		}
		rs.RPS = append(rs.RPS, perS(j, count))
		if sp.count > 0 {
			rs.ErrorsPerS = append(rs.ErrorsPerS, perS(j, count)*float64(errs)/float64(sp.count))
		} else {
			rs.ErrorsPerS = append(rs.ErrorsPerS, 0)
		}
		l := metrics.PointFigures(sp.latency)
		if sp.count > 0 && sp.latency != nil {
			rs.P50, rs.P95, rs.P99 = append(rs.P50, l.P50), append(rs.P95, l.P95), append(rs.P99, l.P99)
		} else {
			rs.P50, rs.P95, rs.P99 = append(rs.P50, math.NaN()), append(rs.P95, math.NaN()), append(rs.P99, math.NaN())
		}
	}
	for _, name := range sortedKeys(metricNames) {
		ms := metrics.MetricSeries{Name: name}
		for j, p := range points {
			var h *hdr.PackedHistogram
			if sp := p.requests[k]; sp != nil {
				h = sp.metrics[name]
			}
			var c int64
			if h != nil {
				c = h.TotalCount()
			}
			if own[j] > 0 {
				ms.PerS = append(ms.PerS, float64(c)/own[j])
			} else {
				ms.PerS = append(ms.PerS, 0)
			}
			if timed[name] {
				l := metrics.PointFigures(h)
				if c == 0 {
					l.P50, l.P95, l.P99 = math.NaN(), math.NaN(), math.NaN()
				}
				ms.P50, ms.P95, ms.P99 = append(ms.P50, l.P50), append(ms.P95, l.P95), append(ms.P99, l.P99)
			}
		}
		rs.Metrics = append(rs.Metrics, ms)
	}
	return rs
}

// planned sums what each segment's schedule asks of a scenario at the
// point of its series nearest to t seconds after the merged start: the
// segments' shares add up to the whole schedule.
func planned(inputs []Input, order []int, scenario string, t float64, started time.Time) float64 {
	total := 0.0
	for _, i := range order {
		s := inputs[i].Summary
		if s.Series == nil {
			continue
		}
		offset := s.Started.Sub(started).Seconds()
		for _, ss := range s.Series.Scenarios {
			if ss.Name != scenario || len(ss.Planned) == 0 {
				continue
			}
			best, bestDist := 0, math.Inf(1)
			for j, at := range s.Series.TimeS {
				if d := math.Abs(at + offset - t); d < bestDist && j < len(ss.Planned) {
					best, bestDist = j, d
				}
			}
			if v := ss.Planned[best]; !math.IsNaN(v) {
				total += v
			}
		}
	}
	return total
}

// gaugeSeries sums the gauges' levels over the segments, point by point.
func gaugeSeries(points []*mergedPoint) map[string]metrics.Column {
	names := map[string]bool{}
	for _, p := range points {
		for name := range p.gauges {
			names[name] = true
		}
	}
	if len(names) == 0 {
		return nil
	}
	out := map[string]metrics.Column{}
	for name := range names {
		col := make(metrics.Column, len(points))
		for j, p := range points {
			col[j] = float64(p.gauges[name])
		}
		out[name] = col
	}
	return out
}

// events gathers the segments' events in time order, each with its
// segment named.
func events(inputs []Input, order []int, segs []core.Segment, started time.Time) []metrics.SeriesEvent {
	var out []metrics.SeriesEvent
	for _, i := range order {
		s := inputs[i].Summary
		if s.Series == nil {
			continue
		}
		offset := s.Started.Sub(started).Seconds()
		for _, e := range s.Series.Events {
			out = append(out, metrics.SeriesEvent{TimeS: e.TimeS + offset, Text: fmt.Sprintf("%s (segment %s)", e.Text, segs[i])})
		}
	}
	slices.SortStableFunc(out, func(a, b metrics.SeriesEvent) int { return cmp.Compare(a.TimeS, b.TimeS) })
	if len(out) > maxEvents {
		out = out[:maxEvents]
	}
	return out
}
