package metrics

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// MergeFormat is the version of the Mergeable section. A merge refuses a
// file of another version: it could not tell what its figures mean.
const MergeFormat = 1

// MergePoints is the most points a run's mergeable section holds. Like the
// report's series, a long run's intervals are merged pairwise into fewer
// points, never dropped; fewer points than the series keep the export
// small, as every point carries histograms.
const MergePoints = 256

// Mergeable is what `hload merge` needs to rebuild, from the exports of
// the segments of a run, the summary one process would have produced:
// every counter and every histogram, over the run and point by point,
// with the test's identity, its thresholds and the segment that ran.
//
// Histograms are HdrHistogram V2 compressed encodings, in base64, of
// values in microseconds: the run totals at 3 significant figures, as the
// summary's figures are computed, and the points at 2 (1 %), as they only
// draw the report's charts.
type Mergeable struct {
	Format int `json:"format"`
	// Test is a fingerprint of the test: sha256 over the test files'
	// contents and the --var values, so that the results of different
	// tests are told apart.
	Test string `json:"test"`
	// Segment is the share of the run this file holds, as "i/n".
	Segment    string          `json:"segment"`
	Thresholds []ThresholdSpec `json:"thresholds"`
	// IntervalS is the snapshot interval in seconds, and Merged how many
	// intervals each point holds (the last point may hold fewer).
	IntervalS float64      `json:"interval_s"`
	Merged    int          `json:"merged"`
	Points    []MergePoint `json:"points"`
	// Requests and Flows are the run totals of every series.
	Requests []SeriesData `json:"requests"`
	Flows    []SeriesData `json:"flows,omitempty"`
}

// ThresholdSpec is a threshold of the test, as its file declares it, so
// that a merge can evaluate it on the merged figures.
type ThresholdSpec struct {
	Metric      string  `json:"metric"`
	Scenario    string  `json:"scenario,omitempty"`
	Request     string  `json:"request,omitempty"`
	Flow        string  `json:"flow,omitempty"`
	Condition   string  `json:"condition"`
	Aggregation string  `json:"aggregation"`
	Percentile  float64 `json:"percentile,omitempty"`
	Op          string  `json:"op"`
	Value       float64 `json:"value"`
	IsDuration  bool    `json:"is_duration,omitempty"`
	Abort       bool    `json:"abort,omitempty"`
}

// MergePoint is one point of a run: the intervals from StartS to EndS
// seconds after the run's start.
type MergePoint struct {
	StartS    float64 `json:"start_s"`
	EndS      float64 `json:"end_s"`
	Intervals int     `json:"intervals"`
	// Requests and Flows are the series with a call in the point.
	Requests []SeriesData `json:"requests,omitempty"`
	Flows    []SeriesData `json:"flows,omitempty"`
	// VUs and Gauges are levels at the point's end; Iterations and
	// Dropped count what ended (or was dropped) during the point.
	VUs        map[string]int   `json:"vus,omitempty"`
	Iterations map[string]int64 `json:"iterations,omitempty"`
	Dropped    map[string]int64 `json:"dropped,omitempty"`
	Gauges     map[string]int64 `json:"gauges,omitempty"`
}

// SeriesData are the counters and histograms of one series (scenario,
// request or flow) over a run or a point.
type SeriesData struct {
	Scenario      string           `json:"scenario"`
	Name          string           `json:"name"`
	Count         int64            `json:"count,omitempty"`
	Errors        int64            `json:"errors,omitempty"`
	BytesSent     int64            `json:"bytes_sent,omitempty"`
	BytesReceived int64            `json:"bytes_received,omitempty"`
	Status        map[string]int64 `json:"status,omitempty"`
	ErrorsByKind  map[string]int64 `json:"errors_by_kind,omitempty"`
	ChecksPassed  int64            `json:"checks_passed,omitempty"`
	ChecksFailed  int64            `json:"checks_failed,omitempty"`
	// Latency is the request latency, or a flow's duration.
	Latency string `json:"latency,omitempty"`
	// Metrics are the other metrics' histograms, by name.
	Metrics map[string]string `json:"metrics,omitempty"`
}

// PointLevels are what the core knows of an interval besides the series:
// per scenario, the VUs at its end and the iterations ended and dropped
// in it, and the gauges at its end.
type PointLevels struct {
	VUs        map[string]int
	Iterations map[string]int64
	Dropped    map[string]int64
	Gauges     map[string]int64
}

// Points at 2 significant figures: the charts need no finer.
const pointSigFigs = 2

func newPointHistogram() *hdr.PackedHistogram {
	return hdr.NewPacked(lowestMicros, highestMicros, pointSigFigs)
}

// pointSeries is one series' part of the open point. Its histograms are
// sparse, so that a point costs what it holds, not a dense histogram.
type pointSeries struct {
	c       counters
	latency *hdr.PackedHistogram
	metrics map[string]*hdr.PackedHistogram
}

func (p *pointSeries) empty() bool {
	return p.c.count == 0 && p.c.checks == (ChecksFigures{}) && p.latency == nil && len(p.metrics) == 0
}

// add adds an interval's counters and histograms.
func (p *pointSeries) add(c *counters, latency *hdr.Histogram, metrics map[string]*hdr.Histogram) {
	c.addTo(&p.c)
	if latency != nil && latency.TotalCount() > 0 {
		if p.latency == nil {
			p.latency = newPointHistogram()
		}
		p.latency.MergeFrom(latency)
	}
	for name, h := range metrics {
		if h.TotalCount() == 0 {
			continue
		}
		if p.metrics == nil {
			p.metrics = map[string]*hdr.PackedHistogram{}
		}
		ph := p.metrics[name]
		if ph == nil {
			ph = newPointHistogram()
			p.metrics[name] = ph
		}
		ph.MergeFrom(h)
	}
}

// merge adds another point's part of the same series.
func (p *pointSeries) merge(o *pointSeries) {
	o.c.addTo(&p.c)
	if o.latency != nil {
		if p.latency == nil {
			p.latency = newPointHistogram()
		}
		p.latency.Merge(o.latency)
	}
	for name, h := range o.metrics {
		if p.metrics == nil {
			p.metrics = map[string]*hdr.PackedHistogram{}
		}
		if p.metrics[name] == nil {
			p.metrics[name] = newPointHistogram()
		}
		p.metrics[name].Merge(h)
	}
}

// point is one point of the log: its series by key, and its levels.
type point struct {
	start, end time.Time
	intervals  int
	requests   map[seriesKey]*pointSeries
	flows      map[seriesKey]*pointSeries
	levels     PointLevels
}

// pointLog keeps a run's points, in bounded memory: at max points it
// merges them pairwise, and each point holds twice as many intervals from
// then on.
type pointLog struct {
	max    int
	merged int
	points []*point
	open   *point
}

// KeepPoints makes the aggregator keep the run's points for the mergeable
// section (Mergeable), at most max of them (an even number); the core
// calls it before the run.
func (a *Aggregator) KeepPoints(max int) {
	a.totalsMu.Lock()
	defer a.totalsMu.Unlock()
	a.points = &pointLog{max: max &^ 1, merged: 1}
}

// addToPoint adds a series' interval to the open point; a no-op unless
// KeepPoints was called. The caller holds totalsMu.
func (a *Aggregator) addToPoint(flows bool, s *Series) {
	log := a.points
	if log == nil {
		return
	}
	if s.interval.count == 0 && s.interval.checks == (ChecksFigures{}) &&
		(s.intervalLatency == nil || s.intervalLatency.TotalCount() == 0) && !anySamples(s.intervalMetrics) {
		return
	}
	if log.open == nil {
		log.open = &point{requests: map[seriesKey]*pointSeries{}, flows: map[seriesKey]*pointSeries{}}
	}
	set := log.open.requests
	if flows {
		set = log.open.flows
	}
	k := seriesKey{s.scenario, s.request}
	ps := set[k]
	if ps == nil {
		ps = &pointSeries{}
		set[k] = ps
	}
	ps.add(&s.interval, s.intervalLatency, s.intervalMetrics)
}

func anySamples(hs map[string]*hdr.Histogram) bool {
	for _, h := range hs {
		if h.TotalCount() > 0 {
			return true
		}
	}
	return false
}

// EndPoint ends the interval [start, end) whose series Flush and
// FlushFlows have just taken, with the core's levels at its end. The open
// point closes when it holds as many intervals as a point holds, or when
// final; a no-op unless KeepPoints was called.
func (a *Aggregator) EndPoint(start, end time.Time, levels PointLevels, final bool) {
	a.totalsMu.Lock()
	defer a.totalsMu.Unlock()
	log := a.points
	if log == nil {
		return
	}
	p := log.open
	if p == nil {
		p = &point{requests: map[seriesKey]*pointSeries{}, flows: map[seriesKey]*pointSeries{}}
		log.open = p
	}
	if p.intervals == 0 {
		p.start = start
	}
	p.end = end
	p.intervals++
	p.levels.VUs, p.levels.Gauges = levels.VUs, levels.Gauges
	p.levels.Iterations = addCounts(p.levels.Iterations, levels.Iterations)
	p.levels.Dropped = addCounts(p.levels.Dropped, levels.Dropped)
	if p.intervals < log.merged && !final {
		return
	}
	log.points = append(log.points, p)
	log.open = nil
	if len(log.points) >= log.max {
		log.mergePairs()
	}
}

func addCounts(dst, src map[string]int64) map[string]int64 {
	for k, n := range src {
		if dst == nil {
			dst = map[string]int64{}
		}
		dst[k] += n
	}
	return dst
}

// mergePairs halves the points: each pair becomes one point.
func (log *pointLog) mergePairs() {
	n := len(log.points) / 2
	for i := range n {
		a, b := log.points[2*i], log.points[2*i+1]
		mergePoint(a, b)
		log.points[i] = a
	}
	if len(log.points)%2 == 1 {
		log.points[n] = log.points[len(log.points)-1]
		n++
	}
	clear(log.points[n:])
	log.points = log.points[:n]
	log.merged *= 2
}

// mergePoint merges b, the point after a, into a.
func mergePoint(a, b *point) {
	a.end = b.end
	a.intervals += b.intervals
	for _, pair := range [][2]map[seriesKey]*pointSeries{{a.requests, b.requests}, {a.flows, b.flows}} {
		for k, ps := range pair[1] {
			if pair[0][k] == nil {
				pair[0][k] = ps
				continue
			}
			pair[0][k].merge(ps)
		}
	}
	a.levels.VUs, a.levels.Gauges = b.levels.VUs, b.levels.Gauges
	a.levels.Iterations = addCounts(a.levels.Iterations, b.levels.Iterations)
	a.levels.Dropped = addCounts(a.levels.Dropped, b.levels.Dropped)
}

// MergeData returns the run's mergeable figures as of the last Flush:
// the run totals of every request and flow series, and the points kept
// (none unless KeepPoints was called) with their times relative to
// started, and how many intervals a point holds.
func (a *Aggregator) MergeData(started time.Time) (requests, flows []SeriesData, points []MergePoint, merged int, err error) {
	reqs, fls := a.requests.all(), a.flows.all()
	a.totalsMu.RLock()
	defer a.totalsMu.RUnlock()
	for _, s := range reqs {
		d, err := s.totalData()
		if err != nil {
			return nil, nil, nil, 0, err
		}
		requests = append(requests, d)
	}
	for _, s := range fls {
		d, err := s.totalData()
		if err != nil {
			return nil, nil, nil, 0, err
		}
		flows = append(flows, d)
	}
	if a.points == nil {
		return requests, flows, nil, 0, nil
	}
	for _, p := range a.points.points {
		mp := MergePoint{
			StartS: p.start.Sub(started).Seconds(), EndS: p.end.Sub(started).Seconds(), Intervals: p.intervals,
			VUs: p.levels.VUs, Iterations: p.levels.Iterations, Dropped: p.levels.Dropped, Gauges: p.levels.Gauges,
		}
		if mp.Requests, err = pointData(p.requests); err != nil {
			return nil, nil, nil, 0, err
		}
		if mp.Flows, err = pointData(p.flows); err != nil {
			return nil, nil, nil, 0, err
		}
		points = append(points, mp)
	}
	return requests, flows, points, a.points.merged, nil
}

// pointData returns a point's series, sorted by scenario then name.
func pointData(set map[seriesKey]*pointSeries) ([]SeriesData, error) {
	keys := make([]seriesKey, 0, len(set))
	for k, ps := range set {
		if !ps.empty() {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, compareKeys)
	out := make([]SeriesData, 0, len(keys))
	for _, k := range keys {
		ps := set[k]
		d := counterData(k, &ps.c)
		var err error
		if ps.latency != nil {
			if d.Latency, err = encodePacked(ps.latency); err != nil {
				return nil, err
			}
		}
		for name, h := range ps.metrics {
			if d.Metrics == nil {
				d.Metrics = map[string]string{}
			}
			if d.Metrics[name], err = encodePacked(h); err != nil {
				return nil, err
			}
		}
		out = append(out, d)
	}
	return out, nil
}

func compareKeys(a, b seriesKey) int {
	return cmp.Or(cmp.Compare(a.scenario, b.scenario), cmp.Compare(a.request, b.request))
}

func encodePacked(h *hdr.PackedHistogram) (string, error) {
	b, err := h.Encode()
	return string(b), err
}

// EncodeHistogram returns h in the HdrHistogram V2 compressed encoding, in
// base64, as the mergeable section carries histograms.
func EncodeHistogram(h *hdr.Histogram) (string, error) {
	b, err := h.Encode(hdr.V2CompressedEncodingCookieBase)
	return string(b), err
}

// DecodeHistogram reads a histogram written by EncodeHistogram, or a
// point's, into a histogram of the summary's geometry.
func DecodeHistogram(s string) (*hdr.Histogram, error) {
	p, err := hdr.DecodePacked([]byte(s))
	if err != nil {
		return nil, err
	}
	h := newHistogram()
	if dropped := p.MergeInto(h); dropped > 0 {
		return nil, fmt.Errorf("%d values outside the range of 1 us to 1 hour", dropped)
	}
	return h, nil
}

// DecodePointHistogram reads a point's histogram, or a total's.
func DecodePointHistogram(s string) (*hdr.PackedHistogram, error) {
	return hdr.DecodePacked([]byte(s))
}

// PointFigures summarises a point's histogram in milliseconds: the same
// figures as a summary's; all zero when it is nil or empty.
func PointFigures(h *hdr.PackedHistogram) LatencyFigures {
	if h == nil {
		return LatencyFigures{}
	}
	return figuresOf(h)
}

// totalData returns the series' run totals. The caller holds totalsMu.
func (s *Series) totalData() (SeriesData, error) {
	d := counterData(seriesKey{s.scenario, s.request}, &s.total)
	var err error
	if s.totalLatency != nil && s.totalLatency.TotalCount() > 0 {
		if d.Latency, err = EncodeHistogram(s.totalLatency); err != nil {
			return d, err
		}
	}
	for name, h := range s.totalMetrics {
		if h.TotalCount() == 0 {
			continue
		}
		if d.Metrics == nil {
			d.Metrics = map[string]string{}
		}
		if d.Metrics[name], err = EncodeHistogram(h); err != nil {
			return d, err
		}
	}
	return d, nil
}

// counterData returns counters as SeriesData, without histograms.
func counterData(k seriesKey, c *counters) SeriesData {
	rf := requestFigures(c, nil, 0)
	d := SeriesData{Scenario: k.scenario, Name: k.request, Count: c.count, Errors: c.errors,
		BytesSent: c.bytesSent, BytesReceived: c.bytesReceived,
		ChecksPassed: c.checks.Passed, ChecksFailed: c.checks.Failed}
	if len(rf.Status) > 0 {
		d.Status = rf.Status
	}
	if len(rf.ErrorsByKind) > 0 {
		d.ErrorsByKind = rf.ErrorsByKind
	}
	return d
}

// AddTotals adds series' run totals, as MergeData returns them, to the
// aggregator's, so that its figures, Totals and Quantile see them as if
// the calls had been recorded here: `hload merge` folds the segments of a
// run into one aggregator this way. Error messages are added with
// AddMessages.
func (a *Aggregator) AddTotals(requests, flows []SeriesData) error {
	for _, pair := range []struct {
		set  *seriesSet
		data []SeriesData
	}{{&a.requests, requests}, {&a.flows, flows}} {
		for _, d := range pair.data {
			s := pair.set.get(d.Scenario, d.Name)
			if err := a.addTotal(s, &d); err != nil {
				return fmt.Errorf("scenario %q, series %q: %w", d.Scenario, d.Name, err)
			}
		}
	}
	return nil
}

func (a *Aggregator) addTotal(s *Series, d *SeriesData) error {
	var c counters
	if err := d.addCounters(&c); err != nil {
		return err
	}
	var latency *hdr.Histogram
	metrics := map[string]*hdr.Histogram{}
	var err error
	if d.Latency != "" {
		if latency, err = DecodeHistogram(d.Latency); err != nil {
			return fmt.Errorf("latency histogram: %w", err)
		}
	}
	for name, enc := range d.Metrics {
		if metrics[name], err = DecodeHistogram(enc); err != nil {
			return fmt.Errorf("histogram of %s: %w", name, err)
		}
	}
	a.totalsMu.Lock()
	defer a.totalsMu.Unlock()
	c.addTo(&s.total)
	if latency != nil {
		if s.totalLatency == nil {
			s.totalLatency = newHistogram()
		}
		s.totalLatency.Merge(latency)
	}
	for name, h := range metrics {
		mergeMetric(&s.totalMetrics, name, h)
	}
	return nil
}

// addCounters adds d's counters into c.
func (d *SeriesData) addCounters(c *counters) error {
	c.count += d.Count
	c.errors += d.Errors
	c.bytesSent += d.BytesSent
	c.bytesReceived += d.BytesReceived
	c.checks.Passed += d.ChecksPassed
	c.checks.Failed += d.ChecksFailed
	for code, n := range d.Status {
		status, err := strconv.Atoi(code)
		if err != nil {
			return fmt.Errorf("status %q is not a number", code)
		}
		if status >= statusLow && status <= statusHigh {
			c.status[status-statusLow] += n
		} else {
			c.addOtherStatus(status, n)
		}
	}
	for kind, n := range d.ErrorsByKind {
		if i := kindIndex(ErrorKind(kind)); i >= 0 {
			c.kinds[i] += n
		} else {
			c.addOtherKind(ErrorKind(kind), n)
		}
	}
	return nil
}

// AddMessages keeps the error messages of a request series, as a
// summary's ErrorMessages give them, within the same bounds as the
// messages of calls recorded here.
func (a *Aggregator) AddMessages(scenario, request string, messages map[string][]string) {
	s := a.requests.get(scenario, request)
	for _, kind := range slices.Sorted(maps.Keys(messages)) {
		for _, m := range messages[kind] {
			s.messages.note(ErrorKind(kind), m)
		}
	}
}
