package metrics

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"
)

var t0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// req builds a request sample.
func req(latency time.Duration, status int, kind ErrorKind, sent, received int64) Sample {
	return Sample{
		Metric:        MetricRequest,
		Time:          t0,
		Value:         latency,
		Status:        status,
		Error:         kind,
		BytesSent:     sent,
		BytesReceived: received,
	}
}

// near reports whether got is within rel (relative) of want.
func near(got, want, rel float64) bool {
	return math.Abs(got-want) <= math.Abs(want)*rel
}

func TestRecordCounters(t *testing.T) {
	tests := []struct {
		name      string
		samples   []Sample
		count     int64
		errors    int64
		errorRate float64
		sent      int64
		received  int64
		status    map[string]int64
		kinds     map[string]int64
	}{
		{
			name:   "empty",
			status: map[string]int64{},
			kinds:  map[string]int64{},
		},
		{
			name: "successes add bytes and statuses",
			samples: []Sample{
				req(time.Millisecond, 200, "", 100, 1000),
				req(2*time.Millisecond, 200, "", 110, 1100),
				req(3*time.Millisecond, 404, "", 120, 50),
			},
			count: 3, sent: 330, received: 2150,
			status: map[string]int64{"200": 2, "404": 1},
			kinds:  map[string]int64{},
		},
		{
			name: "errors by kind, no status on failed connects",
			samples: []Sample{
				req(time.Millisecond, 0, ErrConnectionRefused, 0, 0),
				req(time.Second, 0, ErrTimeout, 80, 0),
				req(time.Second, 0, ErrTimeout, 80, 0),
				req(time.Millisecond, 200, "", 80, 500),
			},
			count: 4, errors: 3, errorRate: 0.75, sent: 240, received: 500,
			status: map[string]int64{"200": 1},
			kinds:  map[string]int64{"connection_refused": 1, "timeout": 2},
		},
		{
			name: "a plugin's own kinds and statuses overflow",
			samples: []Sample{
				req(time.Millisecond, 1, "nack", 0, 0),
				req(time.Millisecond, 1, "nack", 0, 0),
				req(time.Millisecond, 700, "", 0, 0),
				req(time.Millisecond, 599, ErrProtocol, 0, 0),
				req(time.Millisecond, 100, ErrInterrupted, 0, 0),
			},
			count: 5, errors: 4, errorRate: 0.8,
			status: map[string]int64{"1": 2, "700": 1, "599": 1, "100": 1},
			kinds:  map[string]int64{"nack": 2, "protocol": 1, "interrupted": 1},
		},
		{
			name: "other metrics do not count as requests",
			samples: []Sample{
				{Metric: MetricTTFB, Value: time.Millisecond, Status: 200, Error: ErrTimeout, BytesSent: 5},
				req(time.Millisecond, 200, "", 1, 2),
			},
			count: 1, sent: 1, received: 2,
			status: map[string]int64{"200": 1},
			kinds:  map[string]int64{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := NewAggregator()
			s := a.Series("sc", "rq")
			for _, smp := range tt.samples {
				s.Record(smp)
			}
			figs := a.Flush(t0, t0.Add(2*time.Second))
			if len(figs) != 1 {
				t.Fatalf("Flush returned %d series, want 1", len(figs))
			}
			for _, f := range []RequestFigures{figs[0].RequestFigures, first(a.Totals("", "", 4*time.Second))} {
				if f.Count != tt.count || f.Errors != tt.errors || f.BytesSent != tt.sent || f.BytesReceived != tt.received {
					t.Errorf("count, errors, sent, received = %d, %d, %d, %d; want %d, %d, %d, %d",
						f.Count, f.Errors, f.BytesSent, f.BytesReceived, tt.count, tt.errors, tt.sent, tt.received)
				}
				if f.ErrorRate != tt.errorRate {
					t.Errorf("ErrorRate = %v, want %v", f.ErrorRate, tt.errorRate)
				}
				if !maps.Equal(f.Status, tt.status) || f.Status == nil {
					t.Errorf("Status = %v, want %v", f.Status, tt.status)
				}
				if !maps.Equal(f.ErrorsByKind, tt.kinds) || f.ErrorsByKind == nil {
					t.Errorf("ErrorsByKind = %v, want %v", f.ErrorsByKind, tt.kinds)
				}
			}
			if got, want := figs[0].RPS, float64(tt.count)/2; got != want {
				t.Errorf("interval RPS = %v, want %v", got, want)
			}
			if rf, _ := a.Totals("", "", 4*time.Second); rf.RPS != float64(tt.count)/4 {
				t.Errorf("total RPS = %v, want %v", rf.RPS, float64(tt.count)/4)
			}
		})
	}
}

func first(rf RequestFigures, _ map[string]MetricFigures) RequestFigures { return rf }

func TestLatencyPercentiles(t *testing.T) {
	a := NewAggregator()
	s := a.Series("sc", "rq")
	// 1..10000 ms, each once: the exact percentile p is p% of 10000 ms.
	for i := 1; i <= 10000; i++ {
		s.Record(req(time.Duration(i)*time.Millisecond, 200, "", 0, 0))
	}
	l := a.Flush(t0, t0.Add(time.Second))[0].Latency
	stdev := 10000 / math.Sqrt(12) // of a uniform distribution on [0, 10000]
	tests := []struct {
		name      string
		got, want float64
	}{
		{"min", l.Min, 1},
		{"mean", l.Mean, 5000.5},
		{"stdev", l.Stdev, stdev},
		{"p50", l.P50, 5000},
		{"p90", l.P90, 9000},
		{"p95", l.P95, 9500},
		{"p99", l.P99, 9900},
		{"p999", l.P999, 9990},
		{"max", l.Max, 10000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// 3 significant figures: within 0.1 %.
			if !near(tt.got, tt.want, 0.001) {
				t.Errorf("%s = %v ms, want %v ms within 0.1%%", tt.name, tt.got, tt.want)
			}
		})
	}
}

func TestLatencyClamped(t *testing.T) {
	tests := []struct {
		name     string
		value    time.Duration
		min, max float64 // ms
	}{
		// A sample without a time, such as each event of a count, is 0,
		// not the shortest time.
		{"zero counts as 0", 0, 0, 0},
		{"negative counts as 0", -time.Second, 0, 0},
		{"sub-microsecond counts as 1 us", 300 * time.Nanosecond, 0.001, 0.001},
		{"above an hour counts as an hour", 2 * time.Hour, 3600000, 3600000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := NewAggregator()
			s := a.Series("sc", "rq")
			s.Record(req(tt.value, 200, "", 0, 0))
			s.Record(Sample{Metric: MetricTTFB, Value: tt.value})
			f := a.Flush(t0, t0.Add(time.Second))[0]
			if f.Count != 1 {
				t.Fatalf("Count = %d, want 1: the value was dropped", f.Count)
			}
			if !near(f.Latency.Min, tt.min, 0.001) || !near(f.Latency.Max, tt.max, 0.001) {
				t.Errorf("min, max = %v, %v ms; want %v, %v", f.Latency.Min, f.Latency.Max, tt.min, tt.max)
			}
			_, m := a.Totals("", "", time.Second)
			if ttfb := m[MetricTTFB]; ttfb.Count != 1 || !near(ttfb.Max, tt.max, 0.001) {
				t.Errorf("ttfb = %+v, want one value of %v ms", ttfb, tt.max)
			}
		})
	}
}

func TestEmptyFiguresAreZero(t *testing.T) {
	a := NewAggregator()
	a.Series("sc", "rq")
	figs := a.Flush(t0, t0.Add(time.Second))
	if len(figs) != 1 {
		t.Fatalf("Flush returned %d series, want 1", len(figs))
	}
	f := figs[0]
	if f.Count != 0 || f.Latency != (LatencyFigures{}) || f.RPS != 0 || f.ErrorRate != 0 {
		t.Errorf("figures of an idle series = %+v, want zero", f.RequestFigures)
	}
	if f.Status == nil || f.ErrorsByKind == nil {
		t.Error("Status or ErrorsByKind is nil")
	}
	rf, m := a.Totals("nope", "", time.Second)
	if rf.Count != 0 || rf.Status == nil || rf.ErrorsByKind == nil || m == nil || len(m) != 0 {
		t.Errorf("Totals matching nothing = %+v, %v; want zero figures, non-nil maps", rf, m)
	}
	// A zero-length interval must not divide by zero.
	if figs := a.Flush(t0, t0); figs[0].RPS != 0 {
		t.Errorf("RPS over an empty interval = %v, want 0", figs[0].RPS)
	}
}

func TestFlushResetsIntervalKeepsTotals(t *testing.T) {
	a := NewAggregator()
	s := a.Series("sc", "rq")
	intervals := []struct {
		latencies []time.Duration
		passed    int
		failed    int
	}{
		{[]time.Duration{10 * time.Millisecond, 10 * time.Millisecond}, 2, 0},
		{nil, 0, 1},
		{[]time.Duration{30 * time.Millisecond}, 1, 1},
	}
	var total int64
	for i, iv := range intervals {
		for _, l := range iv.latencies {
			s.Record(req(l, 200, "", 1, 2))
		}
		s.RecordChecks(iv.passed, iv.failed)
		start := t0.Add(time.Duration(i) * time.Second)
		f := a.Flush(start, start.Add(time.Second))[0]
		n := int64(len(iv.latencies))
		total += n
		if f.Count != n || f.BytesSent != n || f.Status["200"] != n {
			t.Errorf("interval %d: count, sent, 200s = %d, %d, %d; want %d each", i, f.Count, f.BytesSent, f.Status["200"], n)
		}
		if want := (ChecksFigures{int64(iv.passed), int64(iv.failed)}); f.Checks != want {
			t.Errorf("interval %d: checks = %+v, want %+v", i, f.Checks, want)
		}
		if n == 0 && f.Latency != (LatencyFigures{}) {
			t.Errorf("interval %d: latency of an empty interval = %+v, want zero", i, f.Latency)
		}
		if n > 0 && !near(f.Latency.Max, float64(iv.latencies[0]/time.Millisecond), 0.001) {
			t.Errorf("interval %d: max = %v, want %v: the previous interval leaked in", i, f.Latency.Max, iv.latencies[0])
		}
	}
	rf, _ := a.Totals("", "", 3*time.Second)
	if rf.Count != total || rf.BytesReceived != 2*total || rf.Status["200"] != total {
		t.Errorf("totals count, received, 200s = %d, %d, %d; want %d, %d, %d", rf.Count, rf.BytesReceived, rf.Status["200"], total, 2*total, total)
	}
	if rf.Checks != (ChecksFigures{3, 2}) {
		t.Errorf("totals checks = %+v, want {3 2}", rf.Checks)
	}
	if !near(rf.Latency.Min, 10, 0.001) || !near(rf.Latency.Max, 30, 0.001) || !near(rf.Latency.Mean, 50.0/3, 0.001) {
		t.Errorf("totals latency = %+v, want min 10, max 30, mean 16.67", rf.Latency)
	}
	// Samples recorded after the last Flush are not in the totals yet.
	s.Record(req(time.Millisecond, 200, "", 0, 0))
	if rf, _ := a.Totals("", "", 3*time.Second); rf.Count != total {
		t.Errorf("Totals before Flush = %d, want %d", rf.Count, total)
	}
}

// TestFlushCarriesIntervalMetrics: a snapshot holds the protocol metrics
// of its interval only, and the totals all of them.
func TestFlushCarriesIntervalMetrics(t *testing.T) {
	a := NewAggregator()
	s := a.Series("sc", "rq")
	perInterval := []int{3, 0, 2}
	for i, n := range perInterval {
		for range n {
			s.Record(Sample{Metric: "sse_events", Value: time.Duration(i+1) * time.Millisecond})
		}
		start := t0.Add(time.Duration(i) * time.Second)
		f := a.Flush(start, start.Add(time.Second))[0]
		got, ok := f.Metrics["sse_events"]
		if n == 0 {
			if ok {
				t.Errorf("interval %d: empty metric reported: %+v", i, got)
			}
			continue
		}
		if got.Count != int64(n) || !near(got.Max, float64(i+1), 0.001) {
			t.Errorf("interval %d: sse_events = %+v, want count %d, max %d ms", i, got, n, i+1)
		}
	}
	_, mf := a.Totals("", "", 3*time.Second)
	if mf["sse_events"].Count != 5 || !near(mf["sse_events"].Max, 3, 0.001) {
		t.Errorf("totals sse_events = %+v, want count 5, max 3 ms", mf["sse_events"])
	}
}

func TestFlushListsEverySeriesSorted(t *testing.T) {
	a := NewAggregator()
	for _, k := range [][2]string{{"b", "x"}, {"a", "z"}, {"b", "a"}, {"a", "b"}} {
		a.Series(k[0], k[1])
	}
	if a.Series("a", "z") != a.Series("a", "z") {
		t.Fatal("Series returned two handles for one key")
	}
	a.Series("a", "z").Record(req(time.Millisecond, 200, "", 0, 0))
	figs := a.Flush(t0, t0.Add(time.Second))
	want := [][2]string{{"a", "b"}, {"a", "z"}, {"b", "a"}, {"b", "x"}}
	if len(figs) != len(want) {
		t.Fatalf("Flush returned %d series, want %d", len(figs), len(want))
	}
	for i, f := range figs {
		if f.Scenario != want[i][0] || f.Request != want[i][1] {
			t.Errorf("series %d = %s/%s, want %s/%s", i, f.Scenario, f.Request, want[i][0], want[i][1])
		}
		if n := f.Count; (i == 1) != (n == 1) {
			t.Errorf("series %s/%s count = %d", f.Scenario, f.Request, n)
		}
	}
}

func TestTotalsFilter(t *testing.T) {
	a := NewAggregator()
	// Each series gets a distinct latency and count, so a merge is visible.
	data := []struct {
		scenario, request string
		latency           time.Duration
		count             int
		status            int
	}{
		{"browse", "home", 10 * time.Millisecond, 1, 200},
		{"browse", "detail", 20 * time.Millisecond, 2, 200},
		{"buy", "home", 40 * time.Millisecond, 4, 500},
		{"buy", "pay", 80 * time.Millisecond, 8, 201},
	}
	for _, d := range data {
		s := a.Series(d.scenario, d.request)
		for range d.count {
			s.Record(req(d.latency, d.status, "", 1, 0))
			s.Record(Sample{Metric: MetricTTFB, Value: d.latency / 2})
		}
		s.RecordChecks(d.count, 0)
	}
	a.Flush(t0, t0.Add(time.Second))

	tests := []struct {
		name, scenario, request string
		count                   int64
		min, max                float64
		status                  map[string]int64
	}{
		{"all", "", "", 15, 10, 80, map[string]int64{"200": 3, "500": 4, "201": 8}},
		{"one scenario", "browse", "", 3, 10, 20, map[string]int64{"200": 3}},
		{"one request name across scenarios", "", "home", 5, 10, 40, map[string]int64{"200": 1, "500": 4}},
		{"one series", "buy", "pay", 8, 80, 80, map[string]int64{"201": 8}},
		{"nothing", "buy", "detail", 0, 0, 0, map[string]int64{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rf, m := a.Totals(tt.scenario, tt.request, 10*time.Second)
			if rf.Count != tt.count || rf.BytesSent != tt.count || rf.Checks.Passed != tt.count {
				t.Errorf("count, sent, checks = %d, %d, %d; want %d each", rf.Count, rf.BytesSent, rf.Checks.Passed, tt.count)
			}
			if rf.RPS != float64(tt.count)/10 {
				t.Errorf("RPS = %v, want %v", rf.RPS, float64(tt.count)/10)
			}
			if !near(rf.Latency.Min, tt.min, 0.001) || !near(rf.Latency.Max, tt.max, 0.001) {
				t.Errorf("latency min, max = %v, %v; want %v, %v", rf.Latency.Min, rf.Latency.Max, tt.min, tt.max)
			}
			if !maps.Equal(rf.Status, tt.status) {
				t.Errorf("Status = %v, want %v", rf.Status, tt.status)
			}
			ttfb, ok := m[MetricTTFB]
			if ok != (tt.count > 0) || ttfb.Count != tt.count {
				t.Fatalf("ttfb = %+v (present %v), want count %d", ttfb, ok, tt.count)
			}
			if tt.count > 0 && (!near(ttfb.Min, tt.min/2, 0.001) || !near(ttfb.Max, tt.max/2, 0.001)) {
				t.Errorf("ttfb min, max = %v, %v; want %v, %v", ttfb.Min, ttfb.Max, tt.min/2, tt.max/2)
			}
		})
	}
}

func TestRequests(t *testing.T) {
	a := NewAggregator()
	a.Series("browse", "home").Record(req(time.Millisecond, 200, "", 0, 0))
	a.Series("browse", "detail")
	a.Series("buy", "pay").Record(req(time.Millisecond, 0, ErrReset, 0, 0))
	a.Series("buy", "pay").RecordChecks(1, 2)
	a.Flush(t0, t0.Add(time.Second))

	got := a.Requests(2 * time.Second)
	want := map[string]map[string]int64{
		"browse": {"home": 1, "detail": 0},
		"buy":    {"pay": 1},
	}
	if len(got) != len(want) {
		t.Fatalf("Requests has %d scenarios, want %d", len(got), len(want))
	}
	for sc, reqs := range want {
		if len(got[sc]) != len(reqs) {
			t.Errorf("scenario %s has %d requests, want %d", sc, len(got[sc]), len(reqs))
		}
		for name, n := range reqs {
			rf := got[sc][name]
			if rf == nil || rf.Count != n || rf.RPS != float64(n)/2 {
				t.Errorf("%s/%s = %+v, want count %d", sc, name, rf, n)
			}
		}
	}
	pay := got["buy"]["pay"]
	if pay.ErrorsByKind["reset"] != 1 || pay.ErrorRate != 1 || pay.Checks != (ChecksFigures{1, 2}) {
		t.Errorf("buy/pay = %+v, want one reset and checks {1 2}", pay)
	}
}

func TestOtherMetrics(t *testing.T) {
	a := NewAggregator()
	s := a.Series("sc", "rq")
	for i := 1; i <= 100; i++ {
		s.Record(Sample{Metric: MetricTTFB, Value: time.Duration(i) * time.Millisecond})
		if i%10 == 0 {
			s.Record(Sample{Metric: MetricConnect, Value: 5 * time.Millisecond})
		}
	}
	// A plugin's metric, with a name in a buffer that is reused afterwards.
	buf := []byte("delivery")
	s.Record(Sample{Metric: string(buf), Value: 7 * time.Millisecond})
	copy(buf, "XXXXXXXX")

	f := a.Flush(t0, t0.Add(time.Second))[0]
	if f.Count != 0 || f.Latency != (LatencyFigures{}) {
		t.Errorf("request figures = %+v, want zero: only other metrics were recorded", f.RequestFigures)
	}
	_, m := a.Totals("", "", time.Second)
	tests := []struct {
		metric        string
		count         int64
		min, p50, max float64
		mean, p99     float64
	}{
		{MetricTTFB, 100, 1, 50, 100, 50.5, 99},
		{MetricConnect, 10, 5, 5, 5, 5, 5},
		{"delivery", 1, 7, 7, 7, 7, 7},
	}
	if len(m) != len(tests) {
		t.Errorf("metrics = %v, want %d of them", m, len(tests))
	}
	for _, tt := range tests {
		t.Run(tt.metric, func(t *testing.T) {
			g, ok := m[tt.metric]
			if !ok {
				t.Fatalf("metric %q missing from %v", tt.metric, m)
			}
			if g.Count != tt.count {
				t.Errorf("Count = %d, want %d", g.Count, tt.count)
			}
			for _, c := range []struct {
				name      string
				got, want float64
			}{{"min", g.Min, tt.min}, {"p50", g.P50, tt.p50}, {"max", g.Max, tt.max}, {"mean", g.Mean, tt.mean}, {"p99", g.P99, tt.p99}} {
				if !near(c.got, c.want, 0.001) {
					t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
				}
			}
		})
	}
}

// TestConcurrentRecord records from 16 goroutines while Flush runs, and
// checks that the intervals add up to every sample recorded. Run with -race.
func TestConcurrentRecord(t *testing.T) {
	const (
		workers = 16
		each    = 5000
	)
	a := NewAggregator()
	s := a.Series("sc", "rq")
	var (
		wg          sync.WaitGroup
		flushed     int64
		flushedTTFB int64
		done        = make(chan struct{})
		flusherDone = make(chan struct{})
	)
	go func() {
		defer close(flusherDone)
		for {
			select {
			case <-done:
				return
			default:
			}
			for _, f := range a.Flush(t0, t0.Add(time.Second)) {
				flushed += f.Count
			}
			a.Totals("", "", time.Second)
			time.Sleep(time.Millisecond)
		}
	}()
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				v := time.Duration(w*each+i) * time.Microsecond
				s.Record(Sample{Metric: MetricRequest, Time: time.Now(), Value: v, Status: 200, BytesSent: 1})
				s.Record(Sample{Metric: MetricTTFB, Time: time.Now(), Value: v})
				s.RecordChecks(1, 0)
			}
		}()
	}
	wg.Wait()
	close(done)
	<-flusherDone
	for _, f := range a.Flush(t0, t0.Add(time.Second)) {
		flushed += f.Count
	}
	rf, m := a.Totals("", "", time.Second)
	flushedTTFB = m[MetricTTFB].Count
	const want = workers * each
	if flushed != want || rf.Count != want || rf.BytesSent != want || rf.Status["200"] != want || rf.Checks.Passed != want || flushedTTFB != want {
		t.Errorf("flushed %d, totals count %d, sent %d, 200s %d, checks %d, ttfb %d; want %d each",
			flushed, rf.Count, rf.BytesSent, rf.Status["200"], rf.Checks.Passed, flushedTTFB, want)
	}
	if !near(rf.Latency.Max, float64(want-1)/1000, 0.001) {
		t.Errorf("max = %v ms, want %v", rf.Latency.Max, float64(want-1)/1000)
	}
}

func TestRecordDoesNotAllocate(t *testing.T) {
	samples := []Sample{
		req(12*time.Millisecond, 200, "", 100, 1000),
		req(3*time.Second, 0, ErrTimeout, 100, 0),
		req(time.Millisecond, 1, "nack", 0, 0), // overflow kind and status
		{Metric: MetricTTFB, Value: 5 * time.Millisecond},
		{Metric: "delivery", Value: 5 * time.Millisecond},
	}
	a := NewAggregator()
	s := a.Series("sc", "rq")
	// Warm up: every shard sees every metric, kind and status once, which
	// is where the lazily created histograms and map keys are allocated.
	warm := func() {
		for i := range 1000 {
			for _, smp := range samples {
				smp.Value += time.Duration(i)
				s.Record(smp)
			}
		}
	}
	warm()
	a.Flush(t0, t0.Add(time.Second))
	warm()
	a.Flush(t0, t0.Add(time.Second))
	for _, smp := range samples {
		t.Run(smp.Metric+"/"+string(smp.Error), func(t *testing.T) {
			var i time.Duration
			allocs := testing.AllocsPerRun(1000, func() {
				i++
				smp.Value += i
				s.Record(smp)
			})
			if allocs != 0 {
				t.Errorf("Record allocates %v times per sample, want 0", allocs)
			}
		})
	}
	if allocs := testing.AllocsPerRun(100, func() { s.RecordChecks(1, 1) }); allocs != 0 {
		t.Errorf("RecordChecks allocates %v times, want 0", allocs)
	}
}

// benchSample returns a request sample whose latency, between 1 and 3 ms,
// comes from a xorshift generator, so the latencies vary from call to call
// and from goroutine to goroutine as measured ones do, and Record's shard
// hint spreads the goroutines as it would in a run.
func benchSample(x *uint64) Sample {
	*x ^= *x << 13
	*x ^= *x >> 7
	*x ^= *x << 17
	return Sample{
		Metric:        MetricRequest,
		Time:          t0,
		Value:         time.Millisecond + time.Duration(*x%uint64(2*time.Millisecond)),
		Status:        200,
		BytesSent:     100,
		BytesReceived: 1000,
	}
}

func BenchmarkRecord(b *testing.B) {
	s := NewAggregator().Series("sc", "rq")
	b.ReportAllocs()
	x := uint64(1)
	for b.Loop() {
		s.Record(benchSample(&x))
	}
}

func BenchmarkRecordParallel(b *testing.B) {
	s := NewAggregator().Series("sc", "rq")
	var seed atomic.Uint64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		x := seed.Add(0x9E3779B97F4A7C15)
		for pb.Next() {
			s.Record(benchSample(&x))
		}
	})
}

// BenchmarkFlush measures one interval's Flush of a busy series, which
// holds each shard's lock while it merges.
func BenchmarkFlush(b *testing.B) {
	a := NewAggregator()
	s := a.Series("sc", "rq")
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		x := uint64(1)
		for range 10000 {
			s.Record(benchSample(&x))
		}
		b.StartTimer()
		a.Flush(t0, t0.Add(time.Second))
	}
}

// TestErrorMessagesBounded: a series keeps the first MessagesPerKind
// distinct messages of each kind, for at most messageKinds kinds, each
// cut to messageLength, however many calls fail and from how many
// goroutines; a failing call whose message is kept already allocates
// nothing.
func TestErrorMessagesBounded(t *testing.T) {
	a := NewAggregator()
	s := a.Series("s", "r")
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 1000 {
				kind := ErrorKind(fmt.Sprintf("kind%02d", (g+i)%20))
				s.Record(Sample{Metric: MetricRequest, Error: kind, Message: fmt.Sprintf("reason %d", i%7)})
			}
		})
	}
	wg.Wait()
	long := "x" + strings.Repeat("é", messageLength) // two bytes a rune after one: cut in a rune
	s.Record(Sample{Metric: MetricRequest, Error: "kind00", Message: long})
	a.Flush(time.Now(), time.Now())
	got := a.Requests(time.Second)["s"]["r"]
	if got.Errors != 8001 {
		t.Fatalf("%d errors, want 8001", got.Errors)
	}
	if len(got.ErrorMessages) != messageKinds {
		t.Errorf("messages kept for %d kinds, want %d", len(got.ErrorMessages), messageKinds)
	}
	for kind, msgs := range got.ErrorMessages {
		if len(msgs) != MessagesPerKind || len(slices.Compact(slices.Sorted(slices.Values(msgs)))) != MessagesPerKind {
			t.Errorf("%s: kept %q, want %d distinct", kind, msgs, MessagesPerKind)
		}
	}

	// A kind with room left keeps a long message, cut on a rune.
	fresh := a.Series("s", "long")
	fresh.Record(Sample{Metric: MetricRequest, Error: "timeout", Message: long})
	a.Flush(time.Now(), time.Now())
	kept := a.Requests(time.Second)["s"]["long"].ErrorMessages["timeout"]
	if len(kept) != 1 || len(kept[0]) > messageLength+3 || !utf8.ValidString(kept[0]) || !strings.HasSuffix(kept[0], "...") {
		t.Errorf("long message kept as %d bytes, valid UTF-8 %v", len(kept[0]), utf8.ValidString(kept[0]))
	}

	smp := Sample{Metric: MetricRequest, Error: "kind03", Message: "reason 1"}
	if n := testing.AllocsPerRun(1000, func() { s.Record(smp) }); n != 0 {
		t.Errorf("a failing call with a kept message allocates %.1f times", n)
	}
}

// A flow's series counts every flow that ended, its failures by kind, and
// the duration of the completed ones only, apart from the requests.
func TestFlowSeries(t *testing.T) {
	a := NewAggregator()
	f := a.Flow("shop", "order")
	a.Series("shop", "list").Record(Sample{Metric: MetricRequest, Value: time.Millisecond})
	for range 3 {
		f.RecordFlow(40*time.Millisecond, ErrNone)
	}
	f.RecordFlow(time.Millisecond, "capture")
	start := time.Now()
	flows := a.FlushFlows(start, start.Add(time.Second))
	if len(flows) != 1 || flows[0].Flow != "order" || flows[0].Scenario != "shop" {
		t.Fatalf("FlushFlows = %+v, want the one flow shop/order", flows)
	}
	got := flows[0].FlowFigures
	if got.Count != 4 || got.Completed != 3 || got.Failed != 1 || got.FailedByKind["capture"] != 1 || got.Rate != 4 {
		t.Errorf("figures = %+v, want 4 ended, 3 completed, 1 failed by capture, 4/s", got)
	}
	if got.Duration.Min < 39.9 || got.Duration.Max > 40.1 {
		t.Errorf("duration = %+v, want 40 ms: a failed flow's 1 ms is not a duration", got.Duration)
	}
	if series := a.Flush(start, start.Add(time.Second)); len(series) != 1 || series[0].Count != 1 {
		t.Errorf("request series = %+v, want only list, with its 1 request", series)
	}
	if tot := a.FlowTotals("", "order", 2*time.Second); tot.Count != 4 || tot.Rate != 2 {
		t.Errorf("FlowTotals = %+v, want 4 flows at 2/s", tot)
	}
	if q := a.FlowQuantile("shop", "", 99); q < 39.9 || q > 40.1 {
		t.Errorf("FlowQuantile p99 = %v ms, want 40", q)
	}
	if rf, _ := a.Totals("", "", time.Second); rf.Count != 1 {
		t.Errorf("request totals count %d, want 1: flows are not requests", rf.Count)
	}
	if byFlow := a.Flows(time.Second)["shop"]; byFlow["order"] == nil || byFlow["order"].Completed != 3 {
		t.Errorf("Flows = %+v", byFlow)
	}
	// The setup is judged only when named.
	a.Flow("shop", SetupFlow).RecordFlow(time.Second, "http_5xx")
	a.FlushFlows(start, start.Add(time.Second))
	if tot := a.FlowTotals("", "", time.Second); tot.Count != 4 || tot.Failed != 1 {
		t.Errorf("FlowTotals of any flow = %+v, want order's 4 flows without the setup", tot)
	}
	if tot := a.FlowTotals("shop", SetupFlow, time.Second); tot.Count != 1 || tot.Failed != 1 {
		t.Errorf("FlowTotals of the setup = %+v, want its 1 failure", tot)
	}
	if q := a.FlowQuantile("", "", 100); q > 40.1 {
		t.Errorf("FlowQuantile max of any flow = %v ms, want 40: the setup's 1 s is left out", q)
	}
}
