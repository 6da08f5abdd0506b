package influxdb

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	http2 "github.com/influxdata/influxdb-client-go/v2/api/http"
	"github.com/zclconf/go-cty/cty"

	"github.com/hload/hload/metrics"
)

// block builds a sink block's value as config would decode it.
func block(attrs map[string]cty.Value) cty.Value {
	return cty.ObjectVal(attrs)
}

func TestNewRejectsBadSettingsNamingTheAttribute(t *testing.T) {
	base := func(extra map[string]cty.Value) cty.Value {
		m := map[string]cty.Value{
			"url":    cty.StringVal("http://127.0.0.1:8086"),
			"bucket": cty.StringVal("hload"),
		}
		for k, v := range extra {
			m[k] = v
		}
		return block(m)
	}
	cases := []struct {
		name string
		cfg  cty.Value
		want string
	}{
		{"url scheme", base(map[string]cty.Value{"url": cty.StringVal("127.0.0.1:8086")}), `"url"`},
		{"empty bucket", base(map[string]cty.Value{"bucket": cty.StringVal("")}), `"bucket"`},
		{"reserved tag", base(map[string]cty.Value{"tags": cty.MapVal(map[string]cty.Value{"run_id": cty.StringVal("x")})}), `"tags": "run_id"`},
		{"empty tag value", base(map[string]cty.Value{"tags": cty.MapVal(map[string]cty.Value{"env": cty.StringVal("")})}), `"tags": tag "env"`},
		{"buffer zero", base(map[string]cty.Value{"buffer": cty.NumberIntVal(0)}), `"buffer"`},
		{"buffer fraction", base(map[string]cty.Value{"buffer": cty.NumberFloatVal(1.5)}), `"buffer"`},
		{"batch over buffer", base(map[string]cty.Value{"buffer": cty.NumberIntVal(10), "batch_size": cty.NumberIntVal(20)}), `"batch_size"`},
		{"flush_timeout", base(map[string]cty.Value{"flush_timeout": cty.StringVal("soon")}), `"flush_timeout"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := New(c.cfg, Options{})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("New error = %v, want one naming %s", err, c.want)
			}
		})
	}
	if _, err := New(base(nil), Options{}); err != nil {
		t.Fatalf("a minimal block: %v", err)
	}
}

func TestLineProtocolEscaping(t *testing.T) {
	var l line
	l.start("hload_requests", ",instance=gen\\ 1")
	l.tag("request", "a b,c=d")
	l.tag("scenario", "")
	l.int("count", 3)
	l.float("rps", 2.5)
	l.float("nan", 0/zero())
	l.string("error", `say "hi" \ bye`)
	got := string(l.end(time.Unix(1, 5)))
	want := "hload_requests,instance=gen\\ 1,request=a\\ b\\,c\\=d count=3i,rps=2.5,error=\"say \\\"hi\\\" \\\\ bye\" 1000000005\n"
	if got != want {
		t.Fatalf("line\n got %q\nwant %q", got, want)
	}
	l.start("m", "")
	if p := l.end(time.Unix(1, 0)); p != nil {
		t.Fatalf("a point without fields = %q, want nil (InfluxDB refuses it)", p)
	}
}

func zero() float64 { return 0 }

// flakyWriter fails its first failures writes with a network error, then
// records what it is given.
type flakyWriter struct {
	mu       sync.Mutex
	failures int
	calls    int
	points   int
}

func (w *flakyWriter) WriteRecord(ctx context.Context, lines ...string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.calls++
	if w.calls <= w.failures {
		return http2.NewError(errors.New("connection refused"))
	}
	for _, l := range lines {
		w.points += strings.Count(l, "\n")
	}
	return nil
}

// TestQueueCountsEveryPoint: through an outage, every accepted point is
// written once, the ones offered past the bound are dropped, and the
// counts say exactly that.
func TestQueueCountsEveryPoint(t *testing.T) {
	q := newQueue(10, 4)
	w := &flakyWriter{failures: 2}
	abort, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := &sender{q: q, w: w, timeout: time.Second, abort: abort, events: func(sendEvent) {}, done: make(chan struct{})}
	// The sender starts after the pushes, so the bound is hit
	// deterministically: 10 accepted, 5 dropped.
	accepted := 0
	for i := range 15 {
		if q.push([]byte("m v=" + string(rune('0'+i%10)) + "i 1\n")) {
			accepted++
		}
	}
	go s.run()
	q.close()
	select {
	case <-s.done:
	case <-time.After(30 * time.Second):
		t.Fatal("the sender did not drain within 30 s")
	}
	c, peak := q.snapshot()
	want := Counts{Written: 10, Retried: 4, Dropped: 5}
	if accepted != 10 || c != want || w.points != 10 || peak != 10 {
		t.Fatalf("accepted %d, counts %+v, server got %d, peak %d; want 10, %+v, 10, 10", accepted, c, w.points, peak, want)
	}
}

// TestPermanentErrorsAreRejectedNotRetried: a 400 is counted as rejected
// at once; a 503 is retried.
func TestPermanentErrorsAreRejectedNotRetried(t *testing.T) {
	for _, c := range []struct {
		status int
		want   bool
	}{{400, true}, {401, true}, {404, true}, {408, false}, {429, false}, {500, false}, {503, false}, {0, false}} {
		e := http2.NewError(nil)
		e.StatusCode = c.status
		if got := permanent(e); got != c.want {
			t.Errorf("permanent(%d) = %v, want %v", c.status, got, c.want)
		}
	}
}

// fakeInflux is a loopback server with InfluxDB's /ping and v2 write API.
// While down is set, writes fail with 503; while hold is non-nil, writes
// wait for it to close.
type fakeInflux struct {
	*httptest.Server
	mu     sync.Mutex
	lines  []string
	down   bool
	hold   chan struct{}
	writes int
}

func newFakeInflux(t *testing.T) *fakeInflux {
	f := &fakeInflux{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/ping":
			w.WriteHeader(http.StatusNoContent)
		case "/api/v2/write":
			body, _ := io.ReadAll(r.Body)
			f.mu.Lock()
			hold, down := f.hold, f.down
			f.writes++
			f.mu.Unlock()
			if hold != nil {
				<-hold
			}
			if down {
				http.Error(w, `{"code":"unavailable","message":"down"}`, http.StatusServiceUnavailable)
				return
			}
			f.mu.Lock()
			for _, l := range strings.Split(strings.TrimSpace(string(body)), "\n") {
				if l != "" {
					f.lines = append(f.lines, l)
				}
			}
			f.mu.Unlock()
			w.WriteHeader(http.StatusNoContent)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeInflux) set(fn func(f *fakeInflux)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(f)
}

func (f *fakeInflux) count(prefix string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, l := range f.lines {
		if strings.HasPrefix(l, prefix) {
			n++
		}
	}
	return n
}

func sinkFor(t *testing.T, url string, extra map[string]cty.Value, log io.Writer) *Sink {
	t.Helper()
	m := map[string]cty.Value{
		"url":      cty.StringVal(url),
		"bucket":   cty.StringVal("hload"),
		"instance": cty.StringVal("test-host"),
	}
	for k, v := range extra {
		m[k] = v
	}
	s, err := New(block(m), Options{Log: log, TestName: "unit"})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func snapshot(i int) metrics.Snapshot {
	end := time.Unix(1_700_000_000+int64(i), 0)
	return metrics.Snapshot{
		Start: end.Add(-time.Second), End: end, Elapsed: time.Duration(i) * time.Second,
		Series: []metrics.SeriesFigures{{Scenario: "s", Request: "r", RequestFigures: metrics.RequestFigures{
			Count: 10, Errors: 1, RPS: 10, Latency: metrics.LatencyFigures{Mean: 2, P95: 3},
			Status: map[string]int64{"200": 9, "0": 1}, ErrorsByKind: map[string]int64{"connection_refused": 1},
		}}},
		VUs:     map[string]int{"s": 2},
		Dropped: map[string]int64{"s": 0},
		Gauges:  map[string]int64{"sse_open_streams": 3},
	}
}

// syncBuffer is a bytes.Buffer safe for the sender's and the test's
// goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// TestWriteNeverWaitsForInfluxDB: while InfluxDB holds every write, Write
// still returns, for 20 intervals; once it answers again, every point
// arrives.
func TestWriteNeverWaitsForInfluxDB(t *testing.T) {
	f := newFakeInflux(t)
	var log syncBuffer
	s := sinkFor(t, f.URL, nil, &log)
	if err := s.Start(context.Background(), metrics.RunInfo{RunID: "r1", Started: time.Unix(1_700_000_000, 0)}); err != nil {
		t.Fatal(err)
	}
	hold := make(chan struct{})
	f.set(func(f *fakeInflux) { f.hold = hold })
	returned := make(chan struct{})
	go func() {
		for i := 1; i <= 20; i++ {
			s.Write(snapshot(i))
		}
		close(returned)
	}()
	select {
	case <-returned:
	case <-time.After(30 * time.Second):
		close(hold)
		t.Fatal("Write waited for InfluxDB")
	}
	f.set(func(f *fakeInflux) { f.hold = nil })
	close(hold)
	if err := s.Close(metrics.Summary{}); err != nil {
		t.Fatal(err)
	}
	if n := f.count("hload_requests,"); n != 20 {
		t.Fatalf("InfluxDB got %d hload_requests points, want 20", n)
	}
	// Per interval: requests, 2 status classes, 1 error kind, scenario,
	// gauges = 6; plus the start and end hload_runs points.
	c := s.Counts()
	if c.Written != 20*6+2 || c.Dropped != 0 || c.Unsent != 0 {
		t.Fatalf("counts %+v, want 122 written and nothing lost", c)
	}
	if !strings.Contains(log.String(), "influxdb: 122 points written, 0 retried, 0 dropped") {
		t.Fatalf("end-of-run line missing:\n%s", log.String())
	}
}

// TestOutageIsBufferedAndRetried: writes fail with 503 for a while; the
// points wait and arrive afterwards, counted as retried, none dropped.
func TestOutageIsBufferedAndRetried(t *testing.T) {
	f := newFakeInflux(t)
	var log syncBuffer
	s := sinkFor(t, f.URL, nil, &log)
	if err := s.Start(context.Background(), metrics.RunInfo{RunID: "r1", Started: time.Unix(1_700_000_000, 0)}); err != nil {
		t.Fatal(err)
	}
	f.set(func(f *fakeInflux) { f.down = true })
	for i := 1; i <= 5; i++ {
		s.Write(snapshot(i))
	}
	// Wait (bounded) until the sender has seen the failure at least twice.
	deadline := time.Now().Add(20 * time.Second)
	for f.writesSeen() < 3 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	f.set(func(f *fakeInflux) { f.down = false })
	if err := s.Close(metrics.Summary{}); err != nil {
		t.Fatal(err)
	}
	c := s.Counts()
	if f.count("hload_requests,") != 5 || c.Dropped != 0 || c.Unsent != 0 || c.Retried == 0 {
		t.Fatalf("got %d interval points, counts %+v; want 5, some retried, none lost\n%s", f.count("hload_requests,"), c, log.String())
	}
	for _, want := range []string{"WARNING: writing to", "succeed again after", "retried, 0 dropped"} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, log.String())
		}
	}
}

func (f *fakeInflux) writesSeen() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.writes
}

// TestBufferBoundDropsAndWarns: with InfluxDB down and a bound of 20
// points, the points past it are dropped, warned about, and counted; the
// accepted ones arrive once it is back.
func TestBufferBoundDropsAndWarns(t *testing.T) {
	f := newFakeInflux(t)
	var log syncBuffer
	s := sinkFor(t, f.URL, map[string]cty.Value{"buffer": cty.NumberIntVal(20), "batch_size": cty.NumberIntVal(5)}, &log)
	if err := s.Start(context.Background(), metrics.RunInfo{RunID: "r1", Started: time.Unix(1_700_000_000, 0)}); err != nil {
		t.Fatal(err)
	}
	f.set(func(f *fakeInflux) { f.down = true })
	for i := 1; i <= 10; i++ { // 60 points offered
		s.Write(snapshot(i))
	}
	f.set(func(f *fakeInflux) { f.down = false })
	if err := s.Close(metrics.Summary{}); err != nil {
		t.Fatal(err)
	}
	c := s.Counts()
	// Close adds one hload_runs point, which the full buffer may refuse
	// too, so 61 were offered after the start point.
	if c.Written-1+c.Dropped != 61 || c.Dropped < 61-20 || c.Unsent != 0 {
		t.Fatalf("counts %+v: want written-1 + dropped = 61 with at most 20 accepted", c)
	}
	if got := f.count(""); int64(got) != c.Written {
		t.Fatalf("server holds %d points, sink says %d written", got, c.Written)
	}
	for _, want := range []string{"buffer of 20 points is full", "points were dropped"} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, log.String())
		}
	}
}

// closedPort returns a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr
}

// TestUnreachableAtStart (must-show 4): by default Start fails with an
// error naming the URL; with required = false the run goes on with a
// warning, and Close reports what never arrived as a warning, not an
// error: an optional sink never fails the run on its own.
func TestUnreachableAtStart(t *testing.T) {
	url := closedPort(t)
	s := sinkFor(t, url, nil, io.Discard)
	err := s.Start(context.Background(), metrics.RunInfo{RunID: "r1"})
	if err == nil || !strings.Contains(err.Error(), url) || !strings.Contains(err.Error(), "required = false") {
		t.Fatalf("Start error = %v, want one naming %s and required = false", err, url)
	}
	if err := s.Close(metrics.Summary{}); err != nil {
		t.Fatalf("Close after a failed Start: %v", err)
	}

	var log syncBuffer
	s = sinkFor(t, url, map[string]cty.Value{"required": cty.False, "flush_timeout": cty.StringVal("1s")}, &log)
	if err := s.Start(context.Background(), metrics.RunInfo{RunID: "r1"}); err != nil {
		t.Fatalf("required = false: Start error %v", err)
	}
	s.Write(snapshot(1))
	err = s.Close(metrics.Summary{})
	c := s.Counts()
	if err != nil || c.Unsent != 1+6+1 || c.Written != 0 {
		t.Fatalf("Close = %v with counts %+v; want no error and 8 unsent", err, c)
	}
	want := "influxdb sink (required = false): 8 of the points accepted did not reach " + url + " (0 rejected, 8 unsent)"
	if w := s.Warnings(); !slices.Equal(w, []string{want}) {
		t.Errorf("Warnings = %q, want %q", w, want)
	}
	for _, want := range []string{"WARNING: InfluxDB at " + url + " does not answer", "0 points written", "8 unsent"} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, log.String())
		}
	}
}

// TestRawPointsFromManyGoroutines: with raw = true, every call from every
// goroutine becomes one hload_raw point, and none is lost.
func TestRawPointsFromManyGoroutines(t *testing.T) {
	f := newFakeInflux(t)
	var log syncBuffer
	s := sinkFor(t, f.URL, map[string]cty.Value{"raw": cty.True, "batch_size": cty.NumberIntVal(100)}, &log)
	if !s.RawEnabled() {
		t.Fatal("RawEnabled is false with raw = true")
	}
	if err := s.Start(context.Background(), metrics.RunInfo{RunID: "r1", Started: time.Now()}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 500 {
				s.WriteRaw(metrics.RawRecord{Time: time.Now(), Scenario: "s", Request: "r", VU: uint64(g + 1),
					Iteration: uint64(i), Status: 200, Latency: time.Millisecond, Error: map[bool]string{true: "timeout"}[i%50 == 0]})
			}
		})
	}
	wg.Wait()
	if err := s.Close(metrics.Summary{}); err != nil {
		t.Fatal(err)
	}
	if n := f.count("hload_raw,"); n != 8*500 {
		t.Fatalf("InfluxDB got %d raw points, want %d", n, 8*500)
	}
	if !strings.Contains(log.String(), "raw = true writes one point per request") {
		t.Errorf("no warning about the volume:\n%s", log.String())
	}
}

// flowSnapshot is snapshot(i) with a setup and a flow "order" in
// scenario s, one of whose runs failed on a capture.
func flowSnapshot(i int) metrics.Snapshot {
	snap := snapshot(i)
	snap.Flows = []metrics.FlowSeriesFigures{
		{Scenario: "s", Flow: "order", FlowFigures: metrics.FlowFigures{
			Count: 4, Completed: 3, Failed: 1, FailureRate: 0.25, Rate: 4,
			Duration:     metrics.LatencyFigures{Min: 50, Mean: 61.5, P50: 60, P90: 70, P95: 72.5, P99: 74, Max: 75},
			FailedByKind: map[string]int64{"capture": 1},
		}},
		// Every setup failed: no duration.
		{Scenario: "s", Flow: "setup", FlowFigures: metrics.FlowFigures{
			Count: 2, Failed: 2, FailureRate: 1, Rate: 2,
			FailedByKind: map[string]int64{"http_5xx": 1, "timeout": 1},
		}},
	}
	return snap
}

// TestFlowPoints: a snapshot's flows become hload_flows points, their
// failures by kind hload_flow_failures points, and the summary's flows
// hload_flow_totals points, with the figures given; a test without flows
// writes none of them, and the same points as before.
func TestFlowPoints(t *testing.T) {
	points := func(t *testing.T, snap metrics.Snapshot, sum metrics.Summary) []string {
		f := newFakeInflux(t)
		s := sinkFor(t, f.URL, nil, io.Discard)
		if err := s.Start(context.Background(), metrics.RunInfo{RunID: "r1", Started: time.Unix(1_700_000_000, 0)}); err != nil {
			t.Fatal(err)
		}
		if err := s.Write(snap); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(sum); err != nil {
			t.Fatal(err)
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		return append([]string(nil), f.lines...)
	}
	sum := metrics.Summary{Ended: time.Unix(1_700_000_009, 0), Scenarios: map[string]*metrics.ScenarioSummary{
		"s": {Requests: map[string]*metrics.RequestFigures{"r": {Count: 10}}, Flows: map[string]*metrics.FlowFigures{
			"order": {Count: 40, Completed: 38, Failed: 2, FailureRate: 0.05, Rate: 4.5,
				Duration:     metrics.LatencyFigures{Min: 40, Mean: 60.25, P50: 59, P90: 70, P95: 80, P99: 90, Max: 99},
				FailedByKind: map[string]int64{"capture": 2}},
		}},
	}}

	got := points(t, flowSnapshot(1), sum)
	const tags = ",instance=test-host,run_id=r1,test=unit,flow="
	want := []string{
		"hload_flows" + tags + "order,scenario=s count=4i,completed=3i,failed=1i,failure_rate=0.25,rate=4," +
			"duration_min_ms=50,duration_mean_ms=61.5,duration_stdev_ms=0,duration_p50_ms=60,duration_p90_ms=70,duration_p95_ms=72.5,duration_p99_ms=74,duration_p999_ms=0,duration_max_ms=75 1700000001000000000",
		"hload_flow_failures" + tags + "order,scenario=s,kind=capture count=1i 1700000001000000000",
		"hload_flows" + tags + "setup,scenario=s count=2i,completed=0i,failed=2i,failure_rate=1,rate=2 1700000001000000000",
		"hload_flow_failures" + tags + "setup,scenario=s,kind=http_5xx count=1i 1700000001000000000",
		"hload_flow_failures" + tags + "setup,scenario=s,kind=timeout count=1i 1700000001000000000",
		"hload_flow_totals" + tags + "order,scenario=s count=40i,completed=38i,failed=2i,failure_rate=0.05,rate=4.5," +
			"duration_min_ms=40,duration_mean_ms=60.25,duration_stdev_ms=0,duration_p50_ms=59,duration_p90_ms=70,duration_p95_ms=80,duration_p99_ms=90,duration_p999_ms=0,duration_max_ms=99 1700000009000000000",
	}
	var flows []string
	for _, l := range got {
		if strings.HasPrefix(l, "hload_flow") {
			flows = append(flows, l)
		}
	}
	if strings.Join(flows, "\n") != strings.Join(want, "\n") {
		t.Errorf("flow points:\n%s\nwant:\n%s", strings.Join(flows, "\n"), strings.Join(want, "\n"))
	}

	// Without flows: the same points, less the flows'.
	sum.Scenarios["s"].Flows = nil
	without := points(t, snapshot(1), sum)
	var rest []string
	for _, l := range got {
		if !strings.HasPrefix(l, "hload_flow") {
			rest = append(rest, l)
		}
	}
	if strings.Join(without, "\n") != strings.Join(rest, "\n") || len(without) != 9 {
		t.Errorf("without flows:\n%s\nwant the 9 points of old:\n%s", strings.Join(without, "\n"), strings.Join(rest, "\n"))
	}
}

// TestLogEscapesControlCharacters: what the sink says of its server (an
// error body, say) reaches hload's stderr with its control characters
// escaped, as every server's text does.
func TestLogEscapesControlCharacters(t *testing.T) {
	var log bytes.Buffer
	s := &Sink{opts: Options{Log: &log}}
	s.logf("write failed: %s", "400 \x1b[2J\x1b]0;owned\x07")
	if got := log.String(); strings.ContainsAny(got, "\x1b\x07") || !strings.HasPrefix(got, `influxdb: write failed: 400 \x1b[2J`) || !strings.HasSuffix(got, "\n") {
		t.Errorf("logged %q: want one line, its escape sequence escaped", got)
	}
}
