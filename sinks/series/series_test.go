package series

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/hload/hload/core"
	"github.com/hload/hload/metrics"
)

// feed writes n one-second snapshots of one request, whose interval i
// has count(i) calls and a p99 of p99(i).
func feed(t *testing.T, c *Collector, n int, count func(int) int64, p99 func(int) float64) {
	t.Helper()
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if err := c.Start(context.Background(), metrics.RunInfo{Started: start,
		Scenarios: []metrics.ScenarioInfo{{Name: "s", Executor: "ramping-arrival-rate", Model: "open"}}}); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		from, to := start.Add(time.Duration(i)*time.Second), start.Add(time.Duration(i+1)*time.Second)
		k := count(i)
		snap := metrics.Snapshot{Start: from, End: to, RateStart: from, Elapsed: to.Sub(start), Final: i == n-1,
			VUs: map[string]int{"s": 3}, Iterations: map[string]int64{"s": k}, Dropped: map[string]int64{"s": 0}}
		snap.Series = []metrics.SeriesFigures{{Scenario: "s", Request: "r", RequestFigures: metrics.RequestFigures{
			Count: k, Errors: k / 10, RPS: float64(k), Latency: metrics.LatencyFigures{P50: 1, P95: 2, P99: p99(i)}}}}
		if i >= n/2 {
			// A request that starts halfway: no latency before it.
			snap.Series = append(snap.Series, metrics.SeriesFigures{Scenario: "s", Request: "late", RequestFigures: metrics.RequestFigures{
				Count: 1, RPS: 1, Latency: metrics.LatencyFigures{P50: 5, P95: 5, P99: 5}}})
		}
		if err := c.Write(snap); err != nil {
			t.Fatal(err)
		}
	}
}

// TestLongRunIsMergedNotDropped: 3,600 one-second intervals end as at
// most MaxPoints points, each holding a power of two of intervals; every
// call is still counted (requests/s times each point's length add up to
// the calls fed), a one-interval latency spike is still there, and a
// request that started halfway has no latency before it.
func TestLongRunIsMergedNotDropped(t *testing.T) {
	const n = 3600
	c := New(nil)
	var calls int64
	count := func(i int) int64 { return int64(10 + i%7) }
	for i := range n {
		calls += count(i)
	}
	feed(t, c, n, count, func(i int) float64 {
		if i == 2345 {
			return 999
		}
		return 3
	})
	s := c.Series()
	if len(s.TimeS) > MaxPoints || len(s.TimeS) < MaxPoints/2 {
		t.Fatalf("%d points, want between %d and %d", len(s.TimeS), MaxPoints/2, MaxPoints)
	}
	if s.Merged != 4 || s.IntervalS != 1 {
		t.Fatalf("merged %d intervals of %v s per point, want 4 of 1 s", s.Merged, s.IntervalS)
	}
	if last := s.TimeS[len(s.TimeS)-1]; last != n {
		t.Fatalf("the last point ends at %v s, want %d", last, n)
	}
	r := s.Scenarios[0].Requests[1]
	if r.Name != "r" {
		t.Fatalf("requests %v, want late then r", s.Scenarios[0].Requests)
	}
	var sum, errs, prev float64
	worst := 0.0
	for i, t := range s.TimeS {
		sum += r.RPS[i] * (t - prev)
		errs += r.ErrorsPerS[i] * (t - prev)
		prev = t
		worst = max(worst, r.P99[i])
	}
	if math.Abs(sum-float64(calls)) > 1e-6*float64(calls) {
		t.Errorf("the points hold %.3f calls, %d were fed", sum, calls)
	}
	if worst != 999 {
		t.Errorf("the highest p99 is %v, want the spike's 999", worst)
	}
	late := s.Scenarios[0].Requests[0]
	if !math.IsNaN(late.P99[0]) || late.RPS[0] != 0 || late.P99[len(late.P99)-1] != 5 {
		t.Errorf("the late request reads p99 %v, rps %v at the start, p99 %v at the end", late.P99[0], late.RPS[0], late.P99[len(late.P99)-1])
	}
	if errs <= 0 {
		t.Errorf("no errors/s kept: %v", errs)
	}
}

// TestPlannedAndStages: the open model's planned rate is the plan's mean
// over each point, and the stage ends are its bends.
func TestPlannedAndStages(t *testing.T) {
	plan := core.ScenarioPlan{Name: "s", Model: "open", Executor: "ramping-arrival-rate", Rates: []core.RatePoint{
		{At: 0, PerSecond: 0}, {At: 10 * time.Second, PerSecond: 100}, {At: 20 * time.Second, PerSecond: 100}}}
	c := New([]core.ScenarioPlan{plan})
	feed(t, c, 20, func(int) int64 { return 1 }, func(int) float64 { return 1 })
	s := c.Series().Scenarios[0]
	if got := s.StagesS; len(got) != 2 || got[0] != 10 || got[1] != 20 {
		t.Errorf("stages %v, want [10 20]", got)
	}
	// Over [0, 1] s the rate ramps 0 -> 10: a mean of 5; over [15, 16] it holds 100.
	if s.Planned[0] != 5 || s.Planned[15] != 100 {
		t.Errorf("planned %v at the first point and %v at the 16th, want 5 and 100", s.Planned[0], s.Planned[15])
	}
	if s.IterationsPerS[3] != 1 || s.VUs[3] != 3 {
		t.Errorf("achieved %v iterations/s with %v VUs, want 1 and 3", s.IterationsPerS[3], s.VUs[3])
	}
}

// TestIndentJSON: the export keeps its indentation but puts each series
// on one line, and reads back the same.
func TestIndentJSON(t *testing.T) {
	c := New(nil)
	feed(t, c, 3600, func(int) int64 { return 7 }, func(int) float64 { return 2.5 })
	sum := metrics.Summary{RunID: "x", Series: c.Series(), Warnings: []string{"a, [1, 2]", "[\n  1,\n  2\n]"}}
	compact, err := json.Marshal(sum)
	if err != nil {
		t.Fatal(err)
	}
	indented, err := IndentJSON(sum)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(indented, []byte("\n  \"run_id\": \"x\",\n")) || !bytes.Contains(indented, []byte(`"latency_p99_ms": [null,null,`)) {
		t.Fatalf("not indented with one-line series:\n%.600s", indented)
	}
	if len(indented) > len(compact)+len(compact)/4 {
		t.Errorf("indented %d bytes, compact %d: the series are not on one line each", len(indented), len(compact))
	}
	var back metrics.Summary
	if err := json.Unmarshal(indented, &back); err != nil {
		t.Fatal(err)
	}
	again, _ := json.Marshal(back)
	if !bytes.Equal(again, compact) {
		for i := range min(len(again), len(compact)) {
			if again[i] != compact[i] {
				t.Errorf("the indented export does not read back the same: at %d, %.80s != %.80s", i, again[i:], compact[i:])
				break
			}
		}
	}
}
