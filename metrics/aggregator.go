package metrics

import (
	"cmp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// Histogram geometry: microseconds from 1 us to 1 hour at 3 significant
// figures, so a reported latency is within 0.1 % of the measured one.
const (
	lowestMicros  = 1
	highestMicros = int64(time.Hour / time.Microsecond)
	sigFigs       = 3
)

func newHistogram() *hdr.Histogram {
	return hdr.New(lowestMicros, highestMicros, sigFigs)
}

// micros converts a duration to the histogram's unit, clamped to its range,
// so that no value is ever rejected (and none is silently lost). A sample
// that carries no time (0), such as each event of a count, is recorded as
// 0, not as the shortest time: a count must not read as a time of 1 us.
func micros(d time.Duration) int64 {
	us := int64(d / time.Microsecond)
	if d <= 0 {
		return 0
	}
	if us < lowestMicros {
		return lowestMicros
	}
	if us > highestMicros {
		return highestMicros
	}
	return us
}

// Aggregator folds samples into per-interval HDR histograms and counters per
// series (scenario, request). Record is safe for concurrent use; Flush is
// called once per interval by one goroutine; Totals and Requests may be
// called at any time and see the totals as of the last Flush.
type Aggregator struct {
	requests seriesSet // one series per (scenario, request)
	flows    seriesSet // one series per (scenario, flow); see Flow

	// totalsMu guards every series' interval accumulators and totals. Flush
	// holds it for writing, so Flush calls never overlap and readers never
	// see a half-merged interval.
	totalsMu sync.RWMutex

	points *pointLog // the run's points, for the mergeable section; see KeepPoints
}

type seriesKey struct{ scenario, request string }

// seriesSet holds series by key, and sorted by scenario then name.
type seriesSet struct {
	mu sync.Mutex
	// flows marks the set of flow series, where "" does not match the
	// setup.
	flows  bool
	byKey  map[seriesKey]*Series
	sorted []*Series
}

// NewAggregator returns an empty aggregator.
func NewAggregator() *Aggregator {
	return &Aggregator{
		requests: seriesSet{byKey: make(map[seriesKey]*Series)},
		flows:    seriesSet{byKey: make(map[seriesKey]*Series), flows: true},
	}
}

// Series returns the series for (scenario, request), creating it once; safe
// for concurrent use. The core calls it at setup and keeps the handle, so
// Record never looks a series up by name.
func (a *Aggregator) Series(scenario, request string) *Series {
	return a.requests.get(scenario, request)
}

// Flow returns the series of a flow of a scenario, creating it once; safe
// for concurrent use. A flow's series counts each run of the flow with
// RecordFlow: its count is the flows that ended, its errors the ones that
// failed, by the kind of the step that failed them, and its latency the
// duration of the ones that completed.
func (a *Aggregator) Flow(scenario, flow string) *Series {
	return a.flows.get(scenario, flow)
}

func (set *seriesSet) get(scenario, name string) *Series {
	k := seriesKey{scenario, name}
	set.mu.Lock()
	defer set.mu.Unlock()
	if s, ok := set.byKey[k]; ok {
		return s
	}
	s := &Series{
		scenario: scenario,
		request:  name,
		// One shard per P is enough: the pool in Record keeps each P on
		// its own shard. Unused shards cost a few KB, as their histograms
		// are only allocated on first use.
		shards: make([]shard, max(1, runtime.GOMAXPROCS(0))),
	}
	set.byKey[k] = s
	i, _ := slices.BinarySearchFunc(set.sorted, k, func(s *Series, k seriesKey) int {
		if c := cmp.Compare(s.scenario, k.scenario); c != 0 {
			return c
		}
		return cmp.Compare(s.request, k.request)
	})
	set.sorted = slices.Insert(set.sorted, i, s)
	return s
}

// all returns a copy of the series list, so Flush and the readers can walk
// it without holding mu while get is called concurrently.
func (set *seriesSet) all() []*Series {
	set.mu.Lock()
	defer set.mu.Unlock()
	return slices.Clone(set.sorted)
}

// Series accumulates the samples of one (scenario, request) pair. Its
// handle is kept by the caller, so recording never looks a name up.
type Series struct {
	scenario string
	request  string

	shards []shard
	// last holds, per P, the shard that P used last, so the same core keeps
	// writing the same memory; picking shards at random instead makes every
	// shard's cache lines move between cores and measured slower than one
	// mutex (see BenchmarkRecordParallel).
	last sync.Pool
	next atomic.Uint32 // where the search for a free shard starts

	// The rest is touched only under Aggregator.totalsMu.
	interval        counters                  // the interval being flushed
	intervalLatency *hdr.Histogram            // lazily allocated
	intervalMetrics map[string]*hdr.Histogram // other metrics, lazily allocated
	total           counters
	totalLatency    *hdr.Histogram            // lazily allocated
	totalMetrics    map[string]*hdr.Histogram // other metrics, lazily allocated

	// messages keeps the first distinct messages of each error kind, so
	// the summary can say why calls failed, in bounded memory.
	messages errorMessages
}

// Bounds of the error messages a series keeps: per kind, and kinds.
const (
	MessagesPerKind = 3
	messageKinds    = 16
	messageLength   = 512
)

// errorMessages keeps up to MessagesPerKind distinct messages for each of
// up to messageKinds error kinds. When every call fails, every call comes
// here: finding its kind and reading the kept messages takes no lock, no
// write and no allocation; only a new kind or a new message takes a lock.
type errorMessages struct {
	mu    sync.Mutex // held to add a kind
	kinds [messageKinds]atomic.Pointer[kindMessages]
}

type kindMessages struct {
	kind ErrorKind
	mu   sync.Mutex // held to add a message
	kept atomic.Pointer[[]string]
}

// note keeps msg when it is new for its kind and there is room.
func (m *errorMessages) note(kind ErrorKind, msg string) {
	if km := m.kind(kind); km != nil {
		km.add(msg)
	}
}

// kind returns the messages of kind, or nil when messageKinds other kinds
// are kept already.
func (m *errorMessages) kind(kind ErrorKind) *kindMessages {
	if km, _ := m.find(kind); km != nil {
		return km
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	km, free := m.find(kind)
	if km != nil || free < 0 {
		return km
	}
	// Cloned: a plugin's sample may carry a string backed by a reused
	// buffer.
	km = &kindMessages{kind: ErrorKind(strings.Clone(string(kind)))}
	m.kinds[free].Store(km)
	return km
}

// find returns the messages of kind, or the first free slot (-1: none).
func (m *errorMessages) find(kind ErrorKind) (*kindMessages, int) {
	for i := range m.kinds {
		km := m.kinds[i].Load()
		if km == nil {
			return nil, i
		}
		if km.kind == kind {
			return km, i
		}
	}
	return nil, -1
}

func (k *kindMessages) messages() []string {
	if p := k.kept.Load(); p != nil {
		return *p
	}
	return nil
}

// has reports whether msg needs no keeping: kept already, or no room.
func (k *kindMessages) has(msg string) bool {
	kept := k.messages()
	return len(kept) >= MessagesPerKind || slices.Contains(kept, msg)
}

func (k *kindMessages) add(msg string) {
	if k.has(msg) {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.has(msg) {
		return
	}
	if len(msg) > messageLength {
		msg = strings.ToValidUTF8(msg[:messageLength], "") + "..."
	}
	next := append(slices.Clone(k.messages()), strings.Clone(msg))
	k.kept.Store(&next)
}

// copy returns the kept messages by kind name, or nil when there are none.
func (m *errorMessages) copy() map[string][]string {
	var out map[string][]string
	for i := range m.kinds {
		km := m.kinds[i].Load()
		if km == nil {
			break
		}
		if kept := km.messages(); len(kept) > 0 {
			if out == nil {
				out = make(map[string][]string)
			}
			out[string(km.kind)] = slices.Clone(kept)
		}
	}
	return out
}

// shard is one lock-protected part of a series, used mostly by one P at a
// time. Flush merges the shards.
type shard struct {
	mu      sync.Mutex
	latency *hdr.Histogram            // request latency, lazily allocated
	metrics map[string]*hdr.Histogram // other metrics, created on first sight
	counters
	_ [64]byte // keep the next shard's mutex off this shard's last line
}

// Record folds one sample. It is safe for concurrent use from many
// goroutines and does not allocate in the steady state. A MetricRequest
// sample updates the count, errors, status and bytes counters and, unless
// the call sent nothing (SentNothing), the latency histogram; any other
// metric goes into that metric's histogram.
func (s *Series) Record(smp Sample) {
	sh := s.lock()
	us := micros(smp.Value)
	if smp.Metric == MetricRequest {
		if !SentNothing(&smp) {
			if sh.latency == nil {
				sh.latency = newHistogram()
			}
			_ = sh.latency.RecordValue(us) // cannot fail: us is clamped to range
		}
		sh.counters.add(&smp)
	} else {
		h := sh.metrics[smp.Metric]
		if h == nil {
			h = sh.newMetric(smp.Metric)
		}
		_ = h.RecordValue(us)
	}
	sh.mu.Unlock()
	s.last.Put(sh)
	if smp.Error != ErrNone && smp.Message != "" && smp.Metric == MetricRequest {
		// Off the shard's lock: only a failed call with a reason gets here.
		s.messages.note(smp.Error, smp.Message)
	}
}

// newMetric creates the histogram of a metric seen for the first time in
// this shard. The name is cloned because a plugin's sample may carry a
// string backed by a reused buffer.
func (sh *shard) newMetric(name string) *hdr.Histogram {
	if sh.metrics == nil {
		sh.metrics = make(map[string]*hdr.Histogram)
	}
	h := newHistogram()
	sh.metrics[strings.Clone(name)] = h
	return h
}

// lock locks and returns a shard: the one this P used last if it is free.
// A busy one means another P shares it (a goroutine moved between Get and
// Put, or two Ps were handed the same shard), so the caller leaves it and
// takes the next free shard instead; this spreads the Ps out again by
// itself. Only when every shard is busy does the caller wait.
func (s *Series) lock() *shard {
	if sh, _ := s.last.Get().(*shard); sh != nil && sh.mu.TryLock() {
		return sh
	}
	n := uint32(len(s.shards))
	start := s.next.Add(1)
	for i := range n {
		sh := &s.shards[(start+i)%n]
		if sh.mu.TryLock() {
			return sh
		}
	}
	sh := &s.shards[start%n]
	sh.mu.Lock()
	return sh
}

// RecordFlow folds one run of a flow that ended: failed is the error kind
// of the step that failed it, or ErrNone when every step succeeded, and d
// its duration, recorded only for a completed flow: a flow cut short at its
// first step would otherwise pull the percentiles down. Like Record, it is
// safe for concurrent use and does not allocate in the steady state.
func (s *Series) RecordFlow(d time.Duration, failed ErrorKind) {
	smp := Sample{Error: failed}
	sh := s.lock()
	if failed == ErrNone {
		if sh.latency == nil {
			sh.latency = newHistogram()
		}
		_ = sh.latency.RecordValue(micros(d)) // cannot fail: clamped to range
	}
	sh.counters.add(&smp)
	sh.mu.Unlock()
	s.last.Put(sh)
}

// RecordChecks adds check outcomes to the current interval. Like Record, it
// is safe for concurrent use and does not allocate.
func (s *Series) RecordChecks(passed, failed int) {
	sh := s.lock()
	sh.checks.Passed += int64(passed)
	sh.checks.Failed += int64(failed)
	sh.mu.Unlock()
	s.last.Put(sh)
}

// Flush ends the current interval [start, end). It returns the interval's
// figures of every series that exists, sorted by scenario then request
// (a series with no samples in the interval appears with zero counts), with
// RPS = Count / (end - start), and merges the interval into the run totals.
// It is meant to be called once per interval by one goroutine.
func (a *Aggregator) Flush(start, end time.Time) []SeriesFigures {
	list := a.requests.all()
	a.totalsMu.Lock()
	defer a.totalsMu.Unlock()
	out := make([]SeriesFigures, len(list))
	seconds := end.Sub(start).Seconds()
	for i, s := range list {
		s.collect()
		out[i] = SeriesFigures{
			Scenario:       s.scenario,
			Request:        s.request,
			RequestFigures: requestFigures(&s.interval, s.intervalLatency, seconds),
		}
		for name, h := range s.intervalMetrics {
			if h.TotalCount() == 0 {
				continue
			}
			if out[i].Metrics == nil {
				out[i].Metrics = make(map[string]MetricFigures, len(s.intervalMetrics))
			}
			out[i].Metrics[name] = metricFigures(h, seconds)
		}
		a.addToPoint(false, s)
		s.fold()
	}
	return out
}

// FlushFlows is Flush for the flows: it ends the current interval of
// every flow's series and returns their figures, sorted by scenario then
// flow, with Rate = flows ended / (end - start).
func (a *Aggregator) FlushFlows(start, end time.Time) []FlowSeriesFigures {
	list := a.flows.all()
	if len(list) == 0 {
		return nil
	}
	a.totalsMu.Lock()
	defer a.totalsMu.Unlock()
	out := make([]FlowSeriesFigures, len(list))
	seconds := end.Sub(start).Seconds()
	for i, s := range list {
		s.collect()
		out[i] = FlowSeriesFigures{
			Scenario:    s.scenario,
			Flow:        s.request,
			FlowFigures: flowFigures(&s.interval, s.intervalLatency, seconds),
		}
		a.addToPoint(true, s)
		s.fold()
	}
	return out
}

// collect moves every shard's interval data into the series' interval
// accumulators and resets the shards for reuse. The caller holds totalsMu.
func (s *Series) collect() {
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		sh.counters.moveTo(&s.interval)
		if sh.latency != nil && sh.latency.TotalCount() > 0 {
			if s.intervalLatency == nil {
				s.intervalLatency = newHistogram()
			}
			s.intervalLatency.Merge(sh.latency)
			sh.latency.Reset()
		}
		for name, h := range sh.metrics {
			if h.TotalCount() == 0 {
				continue
			}
			mergeMetric(&s.intervalMetrics, name, h)
			h.Reset()
		}
		sh.mu.Unlock()
	}
}

// mergeMetric merges h into the histogram of name in *into, creating the
// map and the histogram as needed.
func mergeMetric(into *map[string]*hdr.Histogram, name string, h *hdr.Histogram) {
	t := (*into)[name]
	if t == nil {
		if *into == nil {
			*into = make(map[string]*hdr.Histogram)
		}
		t = newHistogram()
		(*into)[name] = t
	}
	t.Merge(h)
}

// fold merges the interval accumulators into the totals and resets them for
// the next interval. The caller holds totalsMu.
func (s *Series) fold() {
	s.interval.moveTo(&s.total)
	if s.intervalLatency != nil && s.intervalLatency.TotalCount() > 0 {
		if s.totalLatency == nil {
			s.totalLatency = newHistogram()
		}
		s.totalLatency.Merge(s.intervalLatency)
		s.intervalLatency.Reset()
	}
	for name, h := range s.intervalMetrics {
		if h.TotalCount() > 0 {
			mergeMetric(&s.totalMetrics, name, h)
			h.Reset()
		}
	}
}

// matches reports whether the series passes a filter where "" matches any.
func (s *Series) matches(scenario, request string) bool {
	return (scenario == "" || scenario == s.scenario) && (request == "" || request == s.request)
}

// Totals returns the run totals, as of the last Flush, of the series
// matching scenario and request ("" matches any), merged: the request
// figures with RPS = Count / elapsed, and the figures of every other metric
// merged across those series.
func (a *Aggregator) Totals(scenario, request string, elapsed time.Duration) (RequestFigures, map[string]MetricFigures) {
	a.totalsMu.RLock()
	defer a.totalsMu.RUnlock()
	sum, latencies, metrics := a.requests.matching(scenario, request)
	rf := requestFigures(&sum, merged(latencies), elapsed.Seconds())
	mf := make(map[string]MetricFigures, len(metrics))
	for name, hs := range metrics {
		mf[name] = metricFigures(merged(hs), elapsed.Seconds())
	}
	return rf, mf
}

// Quantile returns the q-th percentile (0 < q < 100) in milliseconds of
// the run totals of a metric over the matching series; MetricLatency
// is the request latency. It serves percentiles the figures do not carry,
// such as p75 in a threshold.
func (a *Aggregator) Quantile(scenario, request, metric string, q float64) float64 {
	a.totalsMu.RLock()
	defer a.totalsMu.RUnlock()
	_, latencies, metrics := a.requests.matching(scenario, request)
	hs := latencies
	if metric != MetricLatency {
		hs = metrics[metric]
	}
	h := merged(hs)
	if h == nil || h.TotalCount() == 0 {
		return 0
	}
	return ms(float64(h.ValueAtQuantile(q)))
}

// LatencyCount returns how many calls of the matching series have a
// latency: every call but those that sent nothing. A threshold on latency
// over calls that all sent nothing has nothing to judge.
func (a *Aggregator) LatencyCount(scenario, request string) int64 {
	a.totalsMu.RLock()
	defer a.totalsMu.RUnlock()
	_, latencies, _ := a.requests.matching(scenario, request)
	if h := merged(latencies); h != nil {
		return h.TotalCount()
	}
	return 0
}

// matching gathers the run totals of the series matching scenario and
// request ("" matches any). The caller holds totalsMu.
func (set *seriesSet) matching(scenario, request string) (sum counters, latencies []*hdr.Histogram, metrics map[string][]*hdr.Histogram) {
	metrics = make(map[string][]*hdr.Histogram)
	for _, s := range set.all() {
		if !s.matches(scenario, request) || (set.flows && request == "" && s.request == SetupFlow) {
			continue
		}
		s.total.addTo(&sum)
		if s.totalLatency != nil {
			latencies = append(latencies, s.totalLatency)
		}
		for name, h := range s.totalMetrics {
			metrics[name] = append(metrics[name], h)
		}
	}
	return sum, latencies, metrics
}

func merged(hs []*hdr.Histogram) *hdr.Histogram {
	switch len(hs) {
	case 0:
		return nil
	case 1:
		return hs[0]
	}
	m := newHistogram()
	for _, h := range hs {
		m.Merge(h)
	}
	return m
}

// Requests returns the run totals, as of the last Flush, per scenario and
// request, for the summary; RPS = Count / elapsed.
func (a *Aggregator) Requests(elapsed time.Duration) map[string]map[string]*RequestFigures {
	list := a.requests.all()
	a.totalsMu.RLock()
	defer a.totalsMu.RUnlock()
	out := make(map[string]map[string]*RequestFigures)
	for _, s := range list {
		byRequest := out[s.scenario]
		if byRequest == nil {
			byRequest = make(map[string]*RequestFigures)
			out[s.scenario] = byRequest
		}
		rf := requestFigures(&s.total, s.totalLatency, elapsed.Seconds())
		rf.ErrorMessages = s.messages.copy()
		if len(s.totalMetrics) > 0 {
			rf.Metrics = make(map[string]MetricFigures, len(s.totalMetrics))
			for name, h := range s.totalMetrics {
				rf.Metrics[name] = metricFigures(h, elapsed.Seconds())
			}
		}
		byRequest[s.request] = &rf
	}
	return out
}

// FlowTotals returns the run totals, as of the last Flush, of the flows
// matching scenario and flow ("" matches any), merged, with Rate = flows
// ended / elapsed.
func (a *Aggregator) FlowTotals(scenario, flow string, elapsed time.Duration) FlowFigures {
	a.totalsMu.RLock()
	defer a.totalsMu.RUnlock()
	sum, durations, _ := a.flows.matching(scenario, flow)
	return flowFigures(&sum, merged(durations), elapsed.Seconds())
}

// FlowQuantile returns the q-th percentile (0 < q < 100) in milliseconds
// of the duration of the completed flows matching scenario and flow.
func (a *Aggregator) FlowQuantile(scenario, flow string, q float64) float64 {
	a.totalsMu.RLock()
	defer a.totalsMu.RUnlock()
	_, durations, _ := a.flows.matching(scenario, flow)
	h := merged(durations)
	if h == nil || h.TotalCount() == 0 {
		return 0
	}
	return ms(float64(h.ValueAtQuantile(q)))
}

// Flows returns the run totals, as of the last Flush, per scenario and
// flow, for the summary; Rate = flows ended / elapsed.
func (a *Aggregator) Flows(elapsed time.Duration) map[string]map[string]*FlowFigures {
	list := a.flows.all()
	a.totalsMu.RLock()
	defer a.totalsMu.RUnlock()
	out := make(map[string]map[string]*FlowFigures)
	for _, s := range list {
		byFlow := out[s.scenario]
		if byFlow == nil {
			byFlow = make(map[string]*FlowFigures)
			out[s.scenario] = byFlow
		}
		ff := flowFigures(&s.total, s.totalLatency, elapsed.Seconds())
		byFlow[s.request] = &ff
	}
	return out
}

// knownKinds are the error kinds counted in a fixed array; any other kind
// (a plugin's own) goes to an overflow map.
var knownKinds = [...]ErrorKind{
	ErrTimeout,
	ErrConnectionRefused,
	ErrReset,
	ErrDNS,
	ErrTLS,
	ErrProtocol,
	ErrInterrupted,
}

// kindIndex returns the index of k in knownKinds, or -1.
func kindIndex(k ErrorKind) int {
	for i, known := range knownKinds {
		if k == known {
			return i
		}
	}
	return -1
}

// Status codes from statusLow to statusHigh are counted in a fixed array;
// any other (a non-HTTP protocol's own codes) goes to an overflow map.
const (
	statusLow  = 100
	statusHigh = 599
)

// counters are the request and check counts of a shard, an interval or a
// run. The
// overflow maps are created on first use and then kept, cleared, so the
// steady state does not allocate.
type counters struct {
	count         int64
	errors        int64
	bytesSent     int64
	bytesReceived int64
	kinds         [len(knownKinds)]int64
	otherKinds    map[ErrorKind]int64
	status        [statusHigh - statusLow + 1]int64
	otherStatus   map[int]int64
	checks        ChecksFigures
}

// add counts one request sample.
func (c *counters) add(smp *Sample) {
	c.count++
	c.bytesSent += smp.BytesSent
	c.bytesReceived += smp.BytesReceived
	if smp.Error != ErrNone {
		c.errors++
		if i := kindIndex(smp.Error); i >= 0 {
			c.kinds[i]++
		} else {
			c.addOtherKind(smp.Error, 1)
		}
	}
	if smp.Status != 0 {
		if smp.Status >= statusLow && smp.Status <= statusHigh {
			c.status[smp.Status-statusLow]++
		} else {
			c.addOtherStatus(smp.Status, 1)
		}
	}
}

// addTo adds c into dst.
func (c *counters) addTo(dst *counters) {
	dst.checks.Passed += c.checks.Passed
	dst.checks.Failed += c.checks.Failed
	// Every request sample bumps count, so without one there is nothing
	// else to add; this skips the status array for idle series.
	if c.count == 0 {
		return
	}
	dst.count += c.count
	dst.errors += c.errors
	dst.bytesSent += c.bytesSent
	dst.bytesReceived += c.bytesReceived
	for i, n := range c.kinds {
		dst.kinds[i] += n
	}
	for k, n := range c.otherKinds {
		if n != 0 {
			dst.addOtherKind(k, n)
		}
	}
	for i, n := range c.status {
		dst.status[i] += n
	}
	for code, n := range c.otherStatus {
		if n != 0 {
			dst.addOtherStatus(code, n)
		}
	}
}

// addOtherKind counts n errors of a kind outside knownKinds. A new kind's
// name is cloned because a plugin's sample may carry a string backed by a
// reused buffer.
func (c *counters) addOtherKind(k ErrorKind, n int64) {
	if _, ok := c.otherKinds[k]; ok {
		c.otherKinds[k] += n
		return
	}
	if c.otherKinds == nil {
		c.otherKinds = make(map[ErrorKind]int64)
	}
	c.otherKinds[ErrorKind(strings.Clone(string(k)))] = n
}

// addOtherStatus counts n responses with a status outside the array.
func (c *counters) addOtherStatus(code int, n int64) {
	if c.otherStatus == nil {
		c.otherStatus = make(map[int]int64)
	}
	c.otherStatus[code] += n
}

// moveTo adds c into dst and resets c. The overflow maps keep their keys,
// zeroed, so a kind or status seen once never allocates again.
func (c *counters) moveTo(dst *counters) {
	if c.count == 0 && c.checks == (ChecksFigures{}) {
		return
	}
	c.addTo(dst)
	otherKinds, otherStatus := c.otherKinds, c.otherStatus
	for k := range otherKinds {
		otherKinds[k] = 0
	}
	for k := range otherStatus {
		otherStatus[k] = 0
	}
	*c = counters{otherKinds: otherKinds, otherStatus: otherStatus}
}
