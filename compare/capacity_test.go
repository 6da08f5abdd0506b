package compare

import (
	"bytes"
	"strings"
	"testing"

	"github.com/hload/hload/metrics"
)

// capacityRun is a run of a capacity search whose saturation point is at
// step (from 1) of steps, each step's figures derived from its load.
func capacityRun(id string, loads []float64, step int, reason string) *metrics.Summary {
	sum := summary(id, map[string]*metrics.RequestFigures{"r": request(100, 0, 50, 1, 2, 3)})
	c := &metrics.CapacitySummary{Model: "open", Unit: "iterations/s"}
	for _, l := range loads {
		c.Steps = append(c.Steps, metrics.CapacityStep{Load: l, DurationS: 1, Count: int64(l), RPS: l, OKRPS: l * 0.99, P95: 1000 / l})
	}
	c.Saturation = metrics.CapacitySaturation{Step: step, CapacityStep: c.Steps[step-1], Reason: reason}
	sum.Scenarios["shop"].Capacity = c
	return sum
}

// TestCapacityComparison: two runs' capacity searches are compared by
// their saturation points: the load and the throughput up are better, the
// p95 down is better, each with its change in percent; the text shows it
// under the requests' tables. A scenario with a search in one run only has
// no such section.
func TestCapacityComparison(t *testing.T) {
	base := capacityRun("b", []float64{100, 150, 200}, 2, "max_error_rate")
	new := capacityRun("n", []float64{100, 150, 200, 300}, 3, "saturated")
	c := Compare(Run{Path: "base.json", Summary: base}, Run{Path: "new.json", Summary: new})
	caps := c.Capacities()
	if len(caps) != 1 || caps[0].Scenario != "shop" {
		t.Fatalf("capacities %+v, want the one of shop", caps)
	}
	want := map[CapacityFigure]CapacityChange{
		CapLoad:  {CapLoad, 150, 200, 100.0 / 3, Better},
		CapRPS:   {CapRPS, 150, 200, 100.0 / 3, Better},
		CapOKRPS: {CapOKRPS, 148.5, 198, 100.0 / 3, Better},
		CapP95:   {CapP95, 1000.0 / 150, 5, -25, Better},
	}
	for _, ch := range caps[0].Changes {
		w := want[ch.Figure]
		if !near(ch.Base, w.Base) || !near(ch.New, w.New) || !near(ch.Percent, w.Percent) || ch.Verdict != w.Verdict {
			t.Errorf("%s: %+v, want %+v", ch.Figure, ch, w)
		}
	}
	var out bytes.Buffer
	if err := c.WriteText(&out); err != nil {
		t.Fatal(err)
	}
	at := strings.Index(out.String(), "\ncapacity search")
	if at < 0 {
		t.Fatalf("the text has no capacity section:\n%s", out.String())
	}
	section := out.String()[at:]
	wantText := `
capacity search "shop": saturation points
  base  step 2 of 3, stopped by max_error_rate
  new   step 3 of 4, stopped by saturated
  figure                     base               new   change
  load           150 iterations/s  200 iterations/s  +33.3 %  better
  requests/s              150.0/s           200.0/s  +33.3 %  better
  ok requests/s           148.5/s           198.0/s  +33.3 %  better
  p95                    6.667 ms          5.000 ms  -25.0 %  better
`
	if section != wantText {
		t.Errorf("the capacity section:\n%s\nwant:\n%s", section, wantText)
	}

	// The other way round, every change is worse.
	for _, ch := range Compare(Run{Summary: new}, Run{Summary: base}).Capacities()[0].Changes {
		if ch.Verdict != Worse {
			t.Errorf("reversed %s: %v, want worse", ch.Figure, ch.Verdict)
		}
	}
	// A search in one run only: nothing to compare.
	base.Scenarios["shop"].Capacity = nil
	if caps := Compare(Run{Summary: base}, Run{Summary: new}).Capacities(); len(caps) != 0 {
		t.Errorf("a search in one run only was compared: %+v", caps)
	}
}

func near(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }
