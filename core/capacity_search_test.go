package core

import (
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hload/hload/config"
	"github.com/hload/hload/demo"
	"github.com/hload/hload/metrics"
	"github.com/hload/hload/protocols"
	hloadhttp "github.com/hload/hload/protocols/http"
)

// TestCapacitySearchFindsKnownLimit (Must show 3): an open capacity
// search against the demo's capacity endpoint, 4 workers of 20 ms, so at
// most 200 requests/s. Its steps (100, 125, 156.25, 195.31, 244.14, 305.18
// and 400 /s) cross that limit once; the search must stop at saturation,
// name a point within 15 % of the limit, and stop before the error rate
// passes max_error_rate. The endpoint's own counts check hload's.
func TestCapacitySearchFindsKnownLimit(t *testing.T) {
	pool := demo.NewCapacity(demo.CapacityOptions{Workers: 4, ServiceTime: 20 * time.Millisecond, Queue: 64})
	srv := httptest.NewServer(pool)
	defer srv.Close()
	test := loadTest(t, `
variable "base_url" {}
target "demo" { base_url = var.base_url }
scenario "search" {
  executor       = "capacity-search"
  start_rate     = 100
  max_rate       = 400
  step_factor    = 1.25
  step_duration  = "1500ms"
  min_gain       = 50
  max_error_rate = 0.05
  graceful_stop  = "5s"
  request "r" { path = "/capacity" }
}
`, map[string]string{"base_url": srv.URL})
	sum := runTest(t, test, Options{})
	sc := sum.Scenarios["search"]
	c := sc.Capacity
	if c == nil {
		t.Fatal("no capacity in the summary")
	}
	for i, s := range c.Steps {
		t.Logf("step %d: load %g/s, %.1f calls/s, %.1f ok/s, error rate %.4f, p50 %.1f p95 %.1f p99 %.1f ms",
			i+1, s.Load, s.RPS, s.OKRPS, s.ErrorRate, s.P50, s.P95, s.P99)
	}
	sat := c.Saturation
	t.Logf("saturation: step %d, %.1f ok/s, %s: %s; endpoint served %d, rejected %d",
		sat.Step, sat.OKRPS, sat.Reason, sat.Detail, pool.Served(), pool.Rejected())

	limit := pool.MaxPerSecond()
	if sat.Reason != "saturated" {
		t.Errorf("the search stopped for %q (%s), want saturated", sat.Reason, sat.Detail)
	}
	if off := math.Abs(sat.OKRPS-limit) / limit; off > 0.15 {
		t.Errorf("saturation point %.1f requests/s, %.0f %% off the endpoint's capacity of %.0f", sat.OKRPS, off*100, limit)
	}
	for i, s := range c.Steps {
		if s.ErrorRate > 0.05 {
			t.Errorf("step %d's error rate %.3f passed max_error_rate 0.05: the search did not stop before it", i+1, s.ErrorRate)
		}
		// No step may read faster than the endpoint can serve: the
		// measured throughput is the endpoint's, not hload's pace.
		if s.OKRPS > limit*1.05 {
			t.Errorf("step %d read %.1f successful calls/s, above the endpoint's capacity of %.0f", i+1, s.OKRPS, limit)
		}
	}
	if n := len(c.Steps); n < 2 || sat.Step != n-1 || c.Steps[n-1].Load <= limit {
		t.Errorf("%d steps, saturation at step %d: want the search to stop at the first step past %.0f/s, the one before it the point", n, sat.Step, limit)
	}
	// The endpoint's own counts: every successful call hload counted is
	// one it served, and it rejected no more than hload counted failed.
	r := sc.Requests["r"]
	if served := pool.Served(); r.Count-r.Errors != served || r.Errors != pool.Rejected() {
		t.Errorf("hload counted %d calls, %d failed; the endpoint served %d and rejected %d", r.Count, r.Errors, served, pool.Rejected())
	}
	// The steps' calls are the run's, but for those still in flight when
	// the last step ended: in the endpoint's 4 workers and 64 places of
	// queue, and on the wire either way, a request written but not yet
	// taken by the endpoint or a response not yet read. A busy machine
	// leaves a few there: one run found 69 in flight.
	const onTheWire = 16
	var inSteps int64
	for _, s := range c.Steps {
		inSteps += s.Count
	}
	if inSteps > r.Count || inSteps < r.Count-4-64-onTheWire {
		t.Errorf("the steps hold %d calls, the run %d", inSteps, r.Count)
	}
}

// TestJudgeStep checks the rules that end a search, one at a time.
func TestJudgeStep(t *testing.T) {
	e := config.CapacitySearch{MinGain: 50, MaxErrorRate: 0.05, MaxP95: 100 * time.Millisecond}
	prev := &metrics.CapacityStep{Load: 100, Count: 100, OKRPS: 100, P95: 10}
	tests := []struct {
		name   string
		prev   *metrics.CapacityStep
		cur    metrics.CapacityStep
		reason string
	}{
		{"first step holds", nil, metrics.CapacityStep{Load: 100, Count: 10, OKRPS: 100, P95: 10}, ""},
		{"grows with the load", prev, metrics.CapacityStep{Load: 125, Count: 10, OKRPS: 124, P95: 12}, ""},
		// 125 for a 25 % load gain, half of that is 12.5 %; 10 % is below.
		{"flat and slower", prev, metrics.CapacityStep{Load: 125, Count: 10, OKRPS: 110, P95: 30}, "saturated"},
		{"flat but not slower", prev, metrics.CapacityStep{Load: 125, Count: 10, OKRPS: 110, P95: 9}, ""},
		{"just above min_gain", prev, metrics.CapacityStep{Load: 125, Count: 10, OKRPS: 113, P95: 30}, ""},
		{"errors", prev, metrics.CapacityStep{Load: 125, Count: 10, OKRPS: 125, ErrorRate: 0.06, P95: 10}, "max_error_rate"},
		{"slow", prev, metrics.CapacityStep{Load: 125, Count: 10, OKRPS: 125, P95: 101}, "max_p95"},
		{"nothing ended", prev, metrics.CapacityStep{Load: 125}, "no_calls"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reason, detail := judgeStep(e, 2, tt.prev, tt.cur)
			if reason != tt.reason {
				t.Errorf("reason %q (%s), want %q", reason, detail, tt.reason)
			}
		})
	}
}

// TestCapacitySearchRefusesSegment: a sharded run would let each machine
// judge the steps alone; Run and the plan's check refuse it.
func TestCapacitySearchRefusesSegment(t *testing.T) {
	test := loadTest(t, `
target "demo" { base_url = "http://127.0.0.1:1" }
scenario "search" {
  executor      = "capacity-search"
  steps         = [10, 20]
  step_duration = "1s"
  request "r" { path = "/" }
}
`, nil)
	opts := Options{Protocols: protocols.NewRegistry(hloadhttp.New()), Segment: Segment{Index: 0, Count: 2}}
	_, err := Run(t.Context(), test, opts)
	if err == nil || !strings.Contains(err.Error(), "cannot be sharded") || !strings.Contains(err.Error(), `"search"`) {
		t.Errorf("Run with --segment 1/2: %v, want a refusal naming the scenario", err)
	}
	if err := CheckSegment(test, Segment{}); err != nil {
		t.Errorf("the whole run: %v", err)
	}
}

// TestCapacitySearchClosedModel steps VUs against the same endpoint: 1,
// 2 and 4 VUs each add a worker's 50 requests/s; 8 VUs find all 4 workers
// busy and only wait longer, so the search stops there and names 4 VUs.
func TestCapacitySearchClosedModel(t *testing.T) {
	pool := demo.NewCapacity(demo.CapacityOptions{Workers: 4, ServiceTime: 20 * time.Millisecond, Queue: 64})
	// The server's own count of the calls it held at once: 8 VUs keep up
	// to 8 there, 4 in service and 4 queued.
	var inFlight, peak atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		pool.ServeHTTP(w, r)
	}))
	defer srv.Close()
	test := loadTest(t, `
variable "base_url" {}
target "demo" { base_url = var.base_url }
scenario "search" {
  executor      = "capacity-search"
  model         = "closed"
  steps         = [1, 2, 4, 8, 16]
  step_duration = "1s"
  request "r" { path = "/capacity" }
}
`, map[string]string{"base_url": srv.URL})
	sum := runTest(t, test, Options{})
	c := sum.Scenarios["search"].Capacity
	for i, s := range c.Steps {
		t.Logf("step %d: %g VUs, %.1f ok/s, p95 %.1f ms", i+1, s.Load, s.OKRPS, s.P95)
	}
	sat := c.Saturation
	t.Logf("saturation: step %d (%g VUs, %.1f ok/s), %s: %s", sat.Step, sat.Load, sat.OKRPS, sat.Reason, sat.Detail)
	// A VU's round trip adds to the service time, so on a busy machine 4
	// VUs may fall short of the 4 workers' 200/s and 8 fill them (seen in
	// CI beside other test packages: 154.3 ok/s at 4 VUs, 198.9 at 8).
	// The point is 4 VUs, or 8 when 4 fell that short; the best step
	// reaches the endpoint's limit either way.
	if c.Model != "closed" || c.Unit != "vus" || sat.Reason != "saturated" || (sat.Load != 4 && sat.Load != 8) || len(c.Steps) != int(sat.Step)+1 {
		t.Errorf("model %q, unit %q, stopped for %q at %d steps with the point at %g VUs (step %d); want closed, vus, saturated the step after the point, at 4 or 8 VUs",
			c.Model, c.Unit, sat.Reason, len(c.Steps), sat.Load, sat.Step)
	}
	if p := peak.Load(); p <= 4 && len(c.Steps) >= 4 {
		t.Errorf("the server held at most %d calls at once; the step of 8 VUs did not run 8", p)
	}
	best := 0.0
	for _, s := range c.Steps {
		best = max(best, s.OKRPS)
	}
	if off := math.Abs(best-pool.MaxPerSecond()) / pool.MaxPerSecond(); off > 0.15 {
		t.Errorf("the best step read %.1f requests/s, %.0f %% off the endpoint's %.0f", best, off*100, pool.MaxPerSecond())
	}
	if r := sum.Scenarios["search"].Requests["r"]; r.Count-r.Errors != pool.Served() {
		t.Errorf("hload counted %d successful calls, the endpoint served %d", r.Count-r.Errors, pool.Served())
	}
}
