package console

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/hload/hload/metrics"
)

// TestCapacityProgressAndCurve: the live line names the step a capacity
// search is at, and the summary prints its curve with the saturation
// point marked and why the search stopped.
func TestCapacityProgressAndCurve(t *testing.T) {
	var out bytes.Buffer
	s := New(&out, Options{NoColor: true})
	snap := metrics.Snapshot{Elapsed: 3 * time.Second, End: time.Unix(3, 0), Start: time.Unix(2, 0), RateStart: time.Unix(2, 0),
		Capacity: map[string]metrics.CapacityProgress{"search": {Step: 3, Steps: 7, Load: 156.25, Unit: "iterations/s"}}}
	if err := s.Write(snap); err != nil {
		t.Fatal(err)
	}
	if want := "  search step 3/7 156.25 iterations/s\n"; !strings.HasSuffix(out.String(), want) {
		t.Errorf("progress line %q, want it to end %q", out.String(), want)
	}

	out.Reset()
	step := func(load, ok float64, p95 float64) metrics.CapacityStep {
		return metrics.CapacityStep{Load: load, RPS: ok, OKRPS: ok, P50: 20, P95: p95, P99: p95}
	}
	c := &metrics.CapacitySummary{Model: "open", Unit: "iterations/s",
		Steps: []metrics.CapacityStep{step(100, 99.5, 22), step(125, 124.8, 23), step(156.25, 160.1, 300)}}
	c.Saturation = metrics.CapacitySaturation{Step: 2, CapacityStep: c.Steps[1], Reason: "saturated", Detail: "step 3 raised the load by 25.0 %"}
	sum := metrics.Summary{Scenarios: map[string]*metrics.ScenarioSummary{"search": {Executor: "capacity-search", Model: "open", Capacity: c}}}
	if err := s.Close(sum); err != nil {
		t.Fatal(err)
	}
	want := `  capacity search (iterations/s):
      step    load    rps  ok rps  err%   p50   p95   p99
         1     100   99.5    99.5     0  20.0  22.0  22.0
         2     125  124.8   124.8     0  20.0  23.0  23.0  <- saturation point
         3  156.25  160.1   160.1     0  20.0   300   300
  saturation point: step 2, 125 iterations/s, 124.8 successful calls/s, p95 23.0ms
  stopped (saturated): step 3 raised the load by 25.0 %
`
	if !strings.Contains(out.String(), want) {
		t.Errorf("summary:\n%s\nwant it to hold:\n%s", out.String(), want)
	}
}
