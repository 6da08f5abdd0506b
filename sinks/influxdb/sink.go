package influxdb

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	influxdb2 "github.com/influxdata/influxdb-client-go/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/hload/hload/core"
	"github.com/hload/hload/metrics"
	"github.com/hload/hload/sinks"
)

// Options are what the sink needs from the CLI besides its block.
type Options struct {
	// Log receives the warnings and the end-of-run line. Nil discards
	// them.
	Log io.Writer
	// TestName is the "test" tag. Empty means the first file's name
	// without its extension, from the run's info.
	TestName string
	// Segment is the "segment" tag, such as "1/3" under --segment; empty
	// leaves the tag out.
	Segment string
}

// Sink writes each interval's figures to InfluxDB through the v2 write
// API. It implements core.Sink and core.RawSink.
type Sink struct {
	cfg  settings
	opts Options

	logMu sync.Mutex // the sender and the run both log

	client influxdb2.Client
	q      *queue
	send   *sender
	stop   context.CancelFunc // aborts the sender when Close gives up

	// common is ",instance=...,run_id=...,..." shared by every point.
	common string

	// Write is never called concurrently, so this needs no lock.
	ln line
	// scratch holds a line per goroutine for WriteRaw.
	scratch sync.Pool

	closeOnce sync.Once
	closeErr  error
	counts    Counts
	// warnings are the losses that do not fail the run: with required =
	// false, or when the user stopped the wait.
	warnings []string

	// abandon is closed by Abandon: Close stops waiting.
	abandon     chan struct{}
	abandonOnce sync.Once
}

// errSensitiveTags refuses a secret among the tags.
var errSensitiveTags = errors.New("a value of tags is sensitive (from env(), HLOAD_VAR_ or a variable with sensitive = true), and InfluxDB would store it in clear on every point; " +
	"tag with a value that is not secret, such as a variable with sensitive = false")

// Type is the InfluxDB sink as its registry knows it: `sink "influxdb"`.
// It refuses a sensitive value among the tags, which InfluxDB would
// store in clear on every point, and tags each point with the segment
// the process runs, if any.
func Type() sinks.Type {
	return sinks.Type{Name: "influxdb", Spec: Spec(), New: func(b sinks.Block) (core.Sink, error) {
		if b.Sensitive("tags") {
			return nil, errSensitiveTags
		}
		opts := Options{Log: b.Log}
		if b.Segment.Count > 1 {
			opts.Segment = b.Segment.String()
		}
		s, err := New(b.Config, opts)
		if err != nil {
			return nil, err
		}
		return s, nil
	}}
}

// New returns an InfluxDB sink for a block that conforms to Spec. It
// connects to nothing before Start.
func New(cfg cty.Value, opts Options) (*Sink, error) {
	s, err := decode(cfg)
	if err != nil {
		return nil, fmt.Errorf("influxdb sink: %w", err)
	}
	if s.instance == "" {
		h, err := os.Hostname()
		if err != nil || h == "" {
			return nil, fmt.Errorf(`influxdb sink: "instance" is not set and the hostname is unknown (%v)`, err)
		}
		s.instance = h
	}
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	sk := &Sink{cfg: s, opts: opts, abandon: make(chan struct{})}
	sk.scratch.New = func() any { return &line{b: make([]byte, 0, 256)} }
	return sk, nil
}

// RawEnabled reports whether raw = true, so the core skips building raw
// records for this sink otherwise.
func (s *Sink) RawEnabled() bool { return s.cfg.raw }

// Counts returns how many points were written, retried, dropped, rejected
// and left unsent; final after Close.
func (s *Sink) Counts() Counts {
	if s.q == nil {
		return Counts{}
	}
	c, _ := s.q.snapshot()
	return c
}

func (s *Sink) logf(format string, args ...any) {
	s.logMu.Lock()
	defer s.logMu.Unlock()
	// Its server's words may hold control characters: escaped, as the
	// console escapes every server's text.
	fmt.Fprintln(s.opts.Log, metrics.Printable(fmt.Sprintf("influxdb: "+format, args...)))
}

// Start checks that InfluxDB answers and takes a point in the bucket, so
// that a wrong URL, token or bucket fails the run before any load is sent.
// With required = false that is a warning instead, and the sink buffers
// and retries as in an outage.
func (s *Sink) Start(ctx context.Context, run metrics.RunInfo) error {
	if s.q != nil {
		return errors.New("influxdb sink: started twice")
	}
	test := s.opts.TestName
	if test == "" && len(run.Files) > 0 {
		base := filepath.Base(run.Files[0])
		test = strings.TrimSuffix(base, filepath.Ext(base))
	}
	if test == "" {
		test = "hload"
	}
	var common line
	common.tag("instance", s.cfg.instance)
	common.tag("run_id", run.RunID)
	common.tag("segment", s.opts.Segment)
	common.tag("test", test)
	for _, kv := range sortedTags(s.cfg.tags) {
		common.tag(kv[0], kv[1])
	}
	s.common = string(common.b)

	opts := influxdb2.DefaultOptions().
		SetHTTPRequestTimeout(uint(writeTimeout / time.Second)).
		SetApplicationName("hload")
	s.client = influxdb2.NewClientWithOptions(s.cfg.url, s.cfg.token, opts)
	api := s.client.WriteAPIBlocking(s.cfg.org, s.cfg.bucket)

	s.q = newQueue(s.cfg.buffer, s.cfg.batchSize)
	s.q.onFirstDrop = func() {
		s.logf("WARNING: the buffer of %d points is full; new points are dropped until InfluxDB takes some (raise \"buffer\" to hold more)", s.cfg.buffer)
	}

	// The first point names the run, for the dashboard's run selector.
	s.ln.start("hload_runs", s.common)
	s.ln.string("version", run.Version)
	s.ln.string("files", strings.Join(run.Files, " "))
	first := s.ln.end(run.Started)

	startErr := s.check(ctx, api, first)
	if startErr != nil {
		if s.cfg.required {
			s.client.Close()
			s.q = nil // not started: Close has nothing to flush
			return fmt.Errorf("influxdb sink: %w (set required = false in the sink block to run without it)", startErr)
		}
		s.logf("WARNING: %v; the run goes on, buffering up to %d points and retrying", startErr, s.cfg.buffer)
		s.q.push(first)
	} else {
		s.q.counts.Written++
	}
	if s.cfg.raw {
		s.logf("raw = true writes one point per request: at 10k requests/s that is 10k points/s and about 3 MB/s into %s; mind InfluxDB's disk and series cardinality", s.cfg.bucket)
	}

	abort, stop := context.WithCancel(context.Background())
	s.stop = stop
	s.send = &sender{
		q:       s.q,
		w:       api,
		timeout: writeTimeout,
		abort:   abort,
		events:  s.event,
		done:    make(chan struct{}),
	}
	go s.send.run()
	return nil
}

// check pings InfluxDB and writes the run's first point, within
// startTimeout.
func (s *Sink) check(ctx context.Context, w recordWriter, first []byte) error {
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	if _, err := s.client.Ping(ctx); err != nil {
		return fmt.Errorf("InfluxDB at %s does not answer: %w", s.cfg.url, err)
	}
	if err := w.WriteRecord(ctx, string(first)); err != nil {
		return fmt.Errorf("InfluxDB at %s refused a write to bucket %q: %w", s.cfg.url, s.cfg.bucket, err)
	}
	return nil
}

// event reports what the sender saw, as it happens.
func (s *Sink) event(e sendEvent) {
	switch e.kind {
	case "failing":
		s.logf("WARNING: writing to %s failed (%v); retrying with backoff and buffering up to %d points", s.cfg.url, e.err, s.cfg.buffer)
	case "recovered":
		s.logf("writes to %s succeed again after %s", s.cfg.url, e.duration.Round(time.Millisecond))
	case "rejected":
		s.logf("WARNING: InfluxDB rejected %d points, which are not retried: %v", e.points, e.err)
	}
}

// push hands a finished point to the queue; a nil point (no fields) is
// skipped.
func (s *Sink) push(p []byte) {
	if p != nil {
		s.q.push(p)
	}
}

// Write queues the interval's points and returns at once; the network is
// the sender's business. The points are described in the package doc.
func (s *Sink) Write(snap metrics.Snapshot) error {
	if s.q == nil {
		return errors.New("influxdb sink: Write before Start")
	}
	t := snap.End
	l := &s.ln
	for i := range snap.Series {
		f := &snap.Series[i]
		s.series(l, "hload_requests", f.Scenario, f.Request)
		requestFields(l, &f.RequestFigures)
		l.int("active_vus", int64(snap.VUs[f.Scenario]))
		s.push(l.end(t))

		for _, class := range statusClasses(f.Status) {
			s.series(l, "hload_status", f.Scenario, f.Request)
			l.tag("status_class", class.name)
			l.int("count", class.count)
			s.push(l.end(t))
		}
		for _, kind := range slices.Sorted(maps.Keys(f.ErrorsByKind)) {
			s.series(l, "hload_errors", f.Scenario, f.Request)
			l.tag("kind", kind)
			l.int("count", f.ErrorsByKind[kind])
			s.push(l.end(t))
		}
		s.metricPoints(l, "hload_metrics", f.Scenario, f.Request, f.Metrics, t)
	}

	scenarios := map[string]bool{}
	for sc := range snap.VUs {
		scenarios[sc] = true
	}
	for sc := range snap.Dropped {
		scenarios[sc] = true
	}
	for _, sc := range slices.Sorted(maps.Keys(scenarios)) {
		l.start("hload_scenarios", s.common)
		l.tag("scenario", sc)
		l.int("active_vus", int64(snap.VUs[sc]))
		l.int("dropped_iterations", snap.Dropped[sc])
		s.push(l.end(t))
	}

	for i := range snap.Flows {
		f := &snap.Flows[i]
		s.flowPoint(l, "hload_flows", f.Scenario, f.Flow, &f.FlowFigures, t)
		for _, kind := range slices.Sorted(maps.Keys(f.FailedByKind)) {
			s.flow(l, "hload_flow_failures", f.Scenario, f.Flow)
			l.tag("kind", kind)
			l.int("count", f.FailedByKind[kind])
			s.push(l.end(t))
		}
	}

	if len(snap.Gauges) > 0 {
		l.start("hload_gauges", s.common)
		for _, name := range slices.Sorted(maps.Keys(snap.Gauges)) {
			l.int(name, snap.Gauges[name])
		}
		s.push(l.end(t))
	}
	// Interval points are few; send them now so the dashboard is live.
	s.q.signal()
	return nil
}

// series starts a point of measurement m for one (scenario, request).
func (s *Sink) series(l *line, m, scenario, request string) {
	l.start(m, s.common)
	l.tag("request", request)
	l.tag("scenario", scenario)
}

// requestFields writes a request's figures, of an interval or of the run.
func requestFields(l *line, f *metrics.RequestFigures) {
	l.int("count", f.Count)
	l.int("errors", f.Errors)
	l.float("error_rate", f.ErrorRate)
	l.float("rps", f.RPS)
	if f.Count > 0 {
		// Without calls there is no latency; a 0 would pull the
		// dashboard's means down.
		latencyFields(l, &f.Latency)
	}
	l.int("bytes_sent", f.BytesSent)
	l.int("bytes_received", f.BytesReceived)
	l.int("checks_passed", f.Checks.Passed)
	l.int("checks_failed", f.Checks.Failed)
}

// figureFields names the fields of a set of latency figures: a request's
// latency and a metric's (latency_*), a flow's duration (duration_*).
type figureFields struct {
	min, mean, stdev, p50, p90, p95, p99, p999, max string
}

func newFigureFields(prefix string) figureFields {
	return figureFields{
		min: prefix + "min_ms", mean: prefix + "mean_ms", stdev: prefix + "stdev_ms",
		p50: prefix + "p50_ms", p90: prefix + "p90_ms", p95: prefix + "p95_ms",
		p99: prefix + "p99_ms", p999: prefix + "p999_ms", max: prefix + "max_ms",
	}
}

// The field names, built once so that writing a point builds none.
var (
	latencyNames  = newFigureFields("latency_")
	durationNames = newFigureFields("duration_")
)

func latencyFields(l *line, lf *metrics.LatencyFigures) { figures(l, latencyNames, lf) }

func figures(l *line, n figureFields, lf *metrics.LatencyFigures) {
	l.float(n.min, lf.Min)
	l.float(n.mean, lf.Mean)
	l.float(n.stdev, lf.Stdev)
	l.float(n.p50, lf.P50)
	l.float(n.p90, lf.P90)
	l.float(n.p95, lf.P95)
	l.float(n.p99, lf.P99)
	l.float(n.p999, lf.P999)
	l.float(n.max, lf.Max)
}

// flowPoint writes a flow's figures, of an interval or of the run, in
// measurement m.
func (s *Sink) flowPoint(l *line, m, scenario, flow string, f *metrics.FlowFigures, t time.Time) {
	s.flow(l, m, scenario, flow)
	l.int("count", f.Count)
	l.int("completed", f.Completed)
	l.int("failed", f.Failed)
	l.float("failure_rate", f.FailureRate)
	l.float("rate", f.Rate)
	if f.Completed > 0 {
		// Durations are of completed flows only; without one, a 0 would
		// pull the dashboard's means down.
		figures(l, durationNames, &f.Duration)
	}
	s.push(l.end(t))
}

// flow starts a point of measurement m for one (scenario, flow).
func (s *Sink) flow(l *line, m, scenario, flow string) {
	l.start(m, s.common)
	l.tag("flow", flow)
	l.tag("scenario", scenario)
}

// metricPoints writes one point per protocol metric, such as
// sse_delivery_latency or amqp_confirmed.
func (s *Sink) metricPoints(l *line, m, scenario, request string, ms map[string]metrics.MetricFigures, t time.Time) {
	for _, name := range slices.Sorted(maps.Keys(ms)) {
		mf := ms[name]
		s.series(l, m, scenario, request)
		l.tag("metric", name)
		l.int("count", mf.Count)
		if mf.Count > 0 {
			latencyFields(l, &mf.LatencyFigures)
		}
		s.push(l.end(t))
	}
}

type statusClass struct {
	name  string
	count int64
}

// statusClasses folds status codes into classes: 2xx ... 5xx, "none" for
// calls without a status (a connection error), "other" for codes outside
// 100-599 (a non-HTTP protocol's own).
func statusClasses(status map[string]int64) []statusClass {
	if len(status) == 0 {
		return nil
	}
	by := map[string]int64{}
	for code, n := range status {
		c, err := strconv.Atoi(code)
		switch {
		case err != nil:
			by["other"] += n
		case c == 0:
			by["none"] += n
		case c >= 100 && c <= 599:
			by[strconv.Itoa(c/100)+"xx"] += n
		default:
			by["other"] += n
		}
	}
	out := make([]statusClass, 0, len(by))
	for _, name := range slices.Sorted(maps.Keys(by)) {
		out = append(out, statusClass{name, by[name]})
	}
	return out
}

// WriteRaw queues one point for a call, in measurement hload_raw. It is
// safe for concurrent use and never waits for the network; when the
// buffer is full the point is dropped and counted. Without raw = true it
// does nothing.
func (s *Sink) WriteRaw(r metrics.RawRecord) {
	if !s.cfg.raw || s.q == nil {
		return
	}
	l := s.scratch.Get().(*line)
	s.series(l, "hload_raw", r.Scenario, r.Request)
	l.tag("status_class", rawClass(r))
	l.float("latency_ms", float64(r.Latency)/float64(time.Millisecond))
	l.int("status", int64(r.Status))
	l.int("bytes_sent", r.BytesSent)
	l.int("bytes_received", r.BytesReceived)
	l.int("vu", int64(r.VU))
	l.int("iteration", int64(r.Iteration))
	if r.Error != "" {
		l.string("error", r.Error)
	}
	s.push(l.end(r.Time))
	s.scratch.Put(l)
}

func rawClass(r metrics.RawRecord) string {
	switch c := r.Status; {
	case c == 0:
		return "none"
	case c >= 100 && c <= 599:
		return rawClasses[c/100-1]
	default:
		return "other"
	}
}

var rawClasses = [...]string{"1xx", "2xx", "3xx", "4xx", "5xx"}

// Close queues the run's totals, waits up to flush_timeout for InfluxDB to
// take every buffered point, printing its progress each second, and
// prints the end-of-run line. Points it could not deliver by then, or
// that InfluxDB rejected, make it return an error; with required = false,
// or when Abandon stopped the wait, they are a warning instead (see
// Warnings). Points dropped for a full buffer were never accepted, and
// are a warning. Later calls return the same result.
func (s *Sink) Close(sum metrics.Summary) error {
	s.closeOnce.Do(func() {
		if s.q == nil {
			return // never started: nothing to flush
		}
		s.writeTotals(sum)
		s.q.close()
		abandoned := s.waitFlush()
		s.stop()
		s.client.Close()

		c, peak := s.q.snapshot()
		s.counts = c
		msg := fmt.Sprintf("%d points written, %d retried, %d dropped", c.Written, c.Retried, c.Dropped)
		if c.Rejected > 0 {
			msg += fmt.Sprintf(", %d rejected by InfluxDB", c.Rejected)
		}
		if c.Unsent > 0 {
			msg += fmt.Sprintf(", %d unsent", c.Unsent)
		}
		s.logf("%s (at most %d of %d buffered)", msg, peak, s.cfg.buffer)
		if c.Dropped > 0 {
			w := fmt.Sprintf("%d points were dropped because the buffer of %d points was full", c.Dropped, s.cfg.buffer)
			s.logf("WARNING: %s", w)
			s.warnings = append(s.warnings, "influxdb sink: "+w)
		}
		if c.Rejected > 0 || c.Unsent > 0 {
			lost := fmt.Sprintf("%d of the points accepted did not reach %s (%d rejected, %d unsent)",
				c.Rejected+c.Unsent, s.cfg.url, c.Rejected, c.Unsent)
			switch {
			case abandoned:
				s.warnings = append(s.warnings, "influxdb sink: the wait for InfluxDB was interrupted: "+lost)
			case !s.cfg.required:
				s.warnings = append(s.warnings, "influxdb sink (required = false): "+lost)
			default:
				s.closeErr = errors.New("influxdb sink: " + lost)
			}
		}
	})
	return s.closeErr
}

// waitFlush waits for the sender to settle every point, up to
// flush_timeout or until Abandon, saying each second how many points
// wait. It reports whether Abandon ended the wait.
func (s *Sink) waitFlush() (abandoned bool) {
	start := time.Now()
	timer := time.NewTimer(s.cfg.flushTimeout)
	defer timer.Stop()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	giveUp := func() {
		s.stop() // a write or backoff in progress ends at once
		<-s.send.done
	}
	for {
		select {
		case <-s.send.done:
			return false
		case <-tick.C:
			s.logf("waiting for %s to take %d points (%s of flush_timeout %s; Ctrl-C stops waiting)",
				s.cfg.url, s.q.pending(), time.Since(start).Round(time.Second), s.cfg.flushTimeout)
		case <-timer.C:
			s.logf("WARNING: InfluxDB did not take the buffered points within flush_timeout %s; giving up", s.cfg.flushTimeout)
			giveUp()
			return false
		case <-s.abandon:
			s.logf("interrupted: no longer waiting for InfluxDB; %d points unsent", s.q.pending())
			giveUp()
			return true
		}
	}
}

// Abandon implements core.Abandoner: a Close in progress, or to come,
// stops waiting for InfluxDB at once, and the points it still holds are
// reported as unsent, in a warning. Safe to call more than once, and
// concurrently with Close.
func (s *Sink) Abandon() {
	s.abandonOnce.Do(func() { close(s.abandon) })
}

// Warnings implements core.Warner: after Close, the points lost without
// failing the run (required = false, or the wait interrupted), and those
// dropped for a full buffer.
func (s *Sink) Warnings() []string { return s.warnings }

// writeTotals queues the run's totals per (scenario, request), per
// protocol metric and per flow, for the dashboard's tables, and a closing hload_runs
// point.
func (s *Sink) writeTotals(sum metrics.Summary) {
	t := sum.Ended
	if t.IsZero() {
		t = time.Now()
	}
	l := &s.ln
	for _, sc := range slices.Sorted(maps.Keys(sum.Scenarios)) {
		ss := sum.Scenarios[sc]
		for _, rq := range slices.Sorted(maps.Keys(ss.Requests)) {
			f := ss.Requests[rq]
			s.series(l, "hload_totals", sc, rq)
			requestFields(l, f)
			s.push(l.end(t))
			s.metricPoints(l, "hload_metric_totals", sc, rq, f.Metrics, t)
		}
		for _, fl := range slices.Sorted(maps.Keys(ss.Flows)) {
			if f := ss.Flows[fl]; f != nil {
				s.flowPoint(l, "hload_flow_totals", sc, fl, f, t)
			}
		}
	}
	l.start("hload_runs", s.common)
	l.bool("passed", sum.Passed)
	l.bool("interrupted", sum.Interrupted)
	l.float("duration_s", sum.DurationS)
	s.push(l.end(t))
}
