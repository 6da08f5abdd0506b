package core

import (
	"encoding/json"
	"maps"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hload/hload/config"
	"github.com/hload/hload/metrics"
)

// TestConstantArrivalRateHoldsRate: 2,000 iterations/s for 10 s against a
// fast loopback server. The server counts what it receives. The precise
// figures come from BenchmarkOpenModel; here the start lateness is
// compared with a reference pacer run beside it, a plain timer loop
// keeping the same schedule, so that a busy machine delays both.
func TestConstantArrivalRateHoldsRate(t *testing.T) {
	if testing.Short() {
		t.Skip("10 s end-to-end run; scripts/test.sh runs it without -short")
	}
	srv := newCountingServer(t, nil)
	ref := make(chan []time.Duration, 1)
	go func() { ref <- referencePacer(2000, 10*time.Second) }()
	sum := runOpen(t, srv.URL, 2000, 10*time.Second)
	r := sum.Scenarios["open"].Requests["r"]
	if got := int64(srv.count("/r")); got != r.Count {
		t.Errorf("summary count %d, server count %d", r.Count, got)
	}
	if off := math.Abs(float64(r.Count)-20000) / 20000; off > 0.01 {
		t.Errorf("sent %d, %.2f%% off the planned 20,000", r.Count, off*100)
	}
	late := r.Metrics[metrics.MetricStartLateness]
	refLate := <-ref
	slices.Sort(refLate)
	refP := func(p int) float64 { return float64(refLate[len(refLate)*p/100]) / float64(time.Millisecond) }
	refP95, refP99 := refP(95), refP(99)
	// Handing an iteration to a VU's goroutine costs a wake-up more than
	// the reference's timer alone; 10 ms is far beyond that, and far
	// below a pacer that falls behind. At p95, not p99: one stall of the
	// machine of 100 ms holds up 200 of the 20,000 iterations, 1 %, and
	// hload, which has work to do for each, catches up more slowly than
	// the reference, which has none. A CI run saw hload's p99 at 31 ms
	// and the reference's at 7, with a 111 ms stall and a p50 of 0.6 ms.
	// A pacer that falls behind is late for far more than 5 %.
	if late.P95 > refP95+10 {
		t.Errorf("p95 start lateness %.3f ms, the reference pacer's %.3f ms", late.P95, refP95)
	}
	if d := sum.Scenarios["open"].DroppedIterations; d != 0 {
		t.Errorf("%d iterations dropped", d)
	}
	t.Logf("sent %d of 20000 planned; start lateness p50 %.3f ms, p95 %.3f ms, p99 %.3f ms, max %.3f ms; reference pacer p95 %.3f ms, p99 %.3f ms",
		r.Count, late.P50, late.P95, late.P99, late.Max, refP95, refP99)
}

// referencePacer keeps a schedule of rate a second for d with one timer,
// as simply as it can be kept, and returns how late each tick woke.
func referencePacer(rate int, d time.Duration) []time.Duration {
	every := time.Second / time.Duration(rate)
	n := int(d / every)
	late := make([]time.Duration, 0, n)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	start := time.Now()
	for k := range n {
		planned := start.Add(time.Duration(k) * every)
		if wait := time.Until(planned); wait > 0 {
			timer.Reset(wait)
			<-timer.C
		}
		late = append(late, time.Since(planned))
	}
	return late
}

func runOpen(t testing.TB, url string, rate int, d time.Duration) *metrics.Summary {
	test := loadTest(t, `
variable "base_url" {}
variable "rate" {}
variable "duration" {}
target "t" {
  base_url = var.base_url
}
scenario "open" {
  executor          = "constant-arrival-rate"
  rate              = var.rate
  duration          = var.duration
  pre_allocated_vus = 50
  max_vus           = 500
  request "r" {
    path = "/r"
  }
}
`, map[string]string{"base_url": url, "rate": strconv.Itoa(rate), "duration": d.String()})
	return runTest(t, test, Options{})
}

// freezingServer answers at once, except that from freezeAt after its
// first request it holds every request until the 1 s freeze is over.
type freezingServer struct {
	mu          sync.Mutex
	first       time.Time
	from, until time.Time
}

func (f *freezingServer) handler(freezeAt, freezeFor time.Duration) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		if f.first.IsZero() {
			f.first = time.Now()
			f.from = f.first.Add(freezeAt)
			f.until = f.from.Add(freezeFor)
		}
		until := f.until
		frozen := time.Now().After(f.from) && time.Now().Before(until)
		f.mu.Unlock()
		if frozen {
			time.Sleep(time.Until(until))
		}
		w.Write([]byte("ok"))
	}
}

const freezeTest = loopbackTarget + `scenario "open" {
  executor          = "constant-arrival-rate"
  rate              = 500
  duration          = "10s"
  pre_allocated_vus = 20
  max_vus           = 20
  # Iterations wait for one of the 20 VUs, as requests wait for one of
  # wrk2's connections, instead of being dropped.
  max_queue_wait    = "5s"
  request "r" {
    path = "/r"
  }
}
`

const freezeClosedTest = loopbackTarget + `scenario "closed" {
  executor   = "constant-vus"
  vus        = 10
  duration   = "10s"
  think_time = "20ms"
  request "r" {
    path = "/r"
  }
}
`

// TestCoordinatedOmission: at 500 requests/s a server freezes once for
// 1 s. The open model's response time, from the planned start, shows the
// freeze in its p99; its service time, from the actual send, does not,
// because most of the freeze's iterations waited in hload for a VU. The
// closed model against the same server hides the freeze: its VUs simply
// stop sending while it lasts (coordinated omission).
func TestCoordinatedOmission(t *testing.T) {
	if testing.Short() {
		t.Skip("two 10 s end-to-end runs; scripts/test.sh runs it without -short")
	}
	run := func(src string) *metrics.Summary {
		f := &freezingServer{}
		srv := httptest.NewServer(f.handler(4*time.Second, time.Second))
		defer srv.Close()
		return runTest(t, loadTest(t, src, map[string]string{"base_url": srv.URL}), Options{})
	}
	open := run(freezeTest)
	closed := run(freezeClosedTest)

	o := open.Scenarios["open"].Requests["r"]
	service := o.Metrics[metrics.MetricServiceTime]
	c := closed.Scenarios["closed"].Requests["r"]
	t.Logf("open   (500/s): %d requests, response time p50 %.2f ms p99 %.1f ms max %.1f ms; service time p50 %.2f ms p99 %.2f ms max %.1f ms; dropped %d",
		o.Count, o.Latency.P50, o.Latency.P99, o.Latency.Max, service.P50, service.P99, service.Max, open.Scenarios["open"].DroppedIterations)
	t.Logf("closed (10 VUs): %d requests, latency p50 %.2f ms p99 %.2f ms max %.1f ms",
		c.Count, c.Latency.P50, c.Latency.P99, c.Latency.Max)
	if o.Latency.P99 < 500 {
		t.Errorf("open model response-time p99 %.1f ms does not show the 1 s freeze", o.Latency.P99)
	}
	// Compared with the response time of the same run, not with a fixed
	// bound: only the few calls caught inside the freeze itself (20 VUs'
	// worth, 0.4 % of 5000) have a long service time.
	if service.P99 > o.Latency.P99/4 {
		t.Errorf("open model service-time p99 %.1f ms, response-time p99 %.1f ms: want the freeze in the response time only", service.P99, o.Latency.P99)
	}
	if d := open.Scenarios["open"].DroppedIterations; d != 0 {
		t.Errorf("%d iterations dropped", d)
	}
	if o.Count < 4900 {
		t.Errorf("open model sent %d of 5000", o.Count)
	}
	if c.Latency.P99 >= 500 || c.Latency.Max < 500 {
		t.Errorf("closed model p99 %.1f ms, max %.1f ms: want the freeze in max only", c.Latency.P99, c.Latency.Max)
	}
}

// rawRecorder keeps every call's raw record.
type rawRecorder struct {
	snapshotSink
	rawMu sync.Mutex
	raw   []metrics.RawRecord
}

func (r *rawRecorder) WriteRaw(rec metrics.RawRecord) {
	r.rawMu.Lock()
	r.raw = append(r.raw, rec)
	r.rawMu.Unlock()
}

// TestRampingArrivalRateFollowsStages: after the first second, each
// second's count of requests, as the server received them by its own
// clock, is within 2 % of the plan. The server's receive times, not
// hload's planned starts, so a pacer that sends late fails the test.
func TestRampingArrivalRateFollowsStages(t *testing.T) {
	if testing.Short() {
		t.Skip("8 s end-to-end run; scripts/test.sh runs it without -short")
	}
	var (
		mu       sync.Mutex
		received []time.Time
	)
	srv := newCountingServer(t, func(w http.ResponseWriter, r *http.Request) {
		now := time.Now()
		mu.Lock()
		received = append(received, now)
		mu.Unlock()
	})
	test := loadTest(t, loopbackTarget+`scenario "ramp" {
  executor   = "ramping-arrival-rate"
  start_rate = 50
  stages = [
    { duration = "3s", target = 600 },
    { duration = "2s", target = 600 },
    { duration = "3s", target = 150 },
  ]
  max_vus = 200
  request "r" {
    path = "/r"
  }
}
`, map[string]string{"base_url": srv.URL})
	sum := runTest(t, test, Options{})
	plan := rampingRate(test.Scenarios[0].Executor.(config.RampingArrivalRate))
	mu.Lock()
	sent := slices.Clone(received)
	mu.Unlock()
	slices.SortFunc(sent, func(a, b time.Time) int { return a.Compare(b) })
	// The plan's first iteration is at 0: the first receive is the plan's
	// start, plus one loopback trip that every later receive has too.
	start := sent[0]
	perSecond := make([]int64, 9) // the ninth second holds anything late
	for _, s := range sent {
		k := min(int(s.Sub(start)/time.Second), len(perSecond)-1)
		perSecond[k]++
	}
	for k := 1; k < 8; k++ {
		want := plan.countBy(time.Duration(k+1)*time.Second) - plan.countBy(time.Duration(k)*time.Second)
		off := math.Abs(float64(perSecond[k]-want)) / float64(want)
		t.Logf("second %d: server received %d, plan %d (%.2f%% off)", k, perSecond[k], want, off*100)
		if off > 0.02 {
			t.Errorf("second %d: server received %d, plan %d", k, perSecond[k], want)
		}
	}
	t.Logf("after the plan's 8 s: %d received", perSecond[8])
	total := plan.countBy(plan.duration())
	if got := sum.Scenarios["ramp"].Requests["r"].Count; got != total || int64(len(sent)) != total {
		t.Errorf("summary %d, server %d, plan %d", got, len(sent), total)
	}
}

// TestDroppedIterations: 2 VUs against a 50 ms server cannot hold
// 200 iterations/s; the rest are dropped and reported.
func TestDroppedIterations(t *testing.T) {
	srv := newCountingServer(t, func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(50 * time.Millisecond)
	})
	test := loadTest(t, loopbackTarget+`scenario "tight" {
  executor          = "constant-arrival-rate"
  rate              = 200
  duration          = "2s"
  pre_allocated_vus = 2
  max_vus           = 2
  request "r" {
    path = "/r"
  }
}
`, map[string]string{"base_url": srv.URL})
	sink := &snapshotSink{}
	sum := runTest(t, test, Options{Sinks: []Sink{sink}})
	sc := sum.Scenarios["tight"]
	if sc.DroppedIterations < 250 || sc.Iterations+sc.DroppedIterations != 400 {
		t.Fatalf("iterations %d, dropped %d; want about 80 run and the rest of 400 dropped", sc.Iterations, sc.DroppedIterations)
	}
	var live int64
	for _, snap := range sink.snaps {
		live += snap.Dropped["tight"]
	}
	if live != sc.DroppedIterations {
		t.Errorf("snapshots show %d dropped, summary %d", live, sc.DroppedIterations)
	}
	data, err := json.Marshal(sum)
	if err != nil {
		t.Fatal(err)
	}
	if want := `"dropped_iterations":` + strconv.FormatInt(sc.DroppedIterations, 10); !strings.Contains(string(data), want) {
		t.Errorf("summary JSON lacks %s", want)
	}
}

// TestOpenModelReusesWarmVUs: at a rate the server keeps up with, each
// iteration goes to the VU that went idle last, so that 100 iterations
// run on one or two VUs of a pool of 20 (their connections warm, the rest
// parked), the first on the lowest id. A queue of idle VUs would run 5
// on each of the 20. The server's count must equal the calls recorded.
func TestOpenModelReusesWarmVUs(t *testing.T) {
	srv := newCountingServer(t, nil)
	test := loadTest(t, loopbackTarget+`scenario "light" {
  executor          = "constant-arrival-rate"
  rate              = 100
  duration          = "1s"
  pre_allocated_vus = 20
  max_vus           = 20
  request "r" {
    path = "/r"
  }
}
`, map[string]string{"base_url": srv.URL})
	raw := &rawRecorder{}
	sum := runTest(t, test, Options{Sinks: []Sink{raw}})
	raw.rawMu.Lock()
	defer raw.rawMu.Unlock()
	if got := srv.count("/r"); got != len(raw.raw) || int64(got) != sum.Scenarios["light"].Iterations {
		t.Fatalf("server count %d, raw records %d, iterations %d", got, len(raw.raw), sum.Scenarios["light"].Iterations)
	}
	if len(raw.raw) < 90 {
		t.Fatalf("%d iterations of the 100 planned", len(raw.raw))
	}
	perVU := map[uint64]int{}
	for _, rec := range raw.raw {
		perVU[rec.VU]++
	}
	counts := slices.Collect(maps.Values(perVU))
	slices.Sort(counts)
	slices.Reverse(counts)
	// A busy machine may hold a VU past the next start now and then, and
	// the pacer then takes another; still two VUs run most iterations.
	if top := counts[0] + counts[min(1, len(counts)-1)]; top < len(raw.raw)/2 {
		t.Errorf("the two busiest of %d VUs ran %d of %d iterations (%v); want most of them", len(perVU), top, len(raw.raw), perVU)
	}
	if perVU[1] == 0 {
		t.Errorf("VU 1 ran none of the iterations (%v); the first goes to the lowest id", perVU)
	}
	t.Logf("iterations per VU: %v", perVU)
}
