package compare

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"

	"github.com/hload/hload/metrics"
)

// CapacityFigure is a figure of a capacity search's saturation point.
type CapacityFigure int

// The saturation point's figures, in the order the comparison shows them.
const (
	CapLoad  CapacityFigure = iota // the step's load, in the search's unit
	CapRPS                         // every call that ended per second
	CapOKRPS                       // the successful calls per second: the throughput
	CapP95                         // the step's p95, ms
)

// CapacityFigures lists every CapacityFigure in order.
var CapacityFigures = []CapacityFigure{CapLoad, CapRPS, CapOKRPS, CapP95}

var capacityFigureNames = [...]string{"load", "requests/s", "ok requests/s", "p95"}

// String is the figure's name in the comparison's table.
func (f CapacityFigure) String() string { return capacityFigureNames[f] }

// Of returns the figure of a saturation point.
func (f CapacityFigure) Of(s metrics.CapacitySaturation) float64 {
	switch f {
	case CapLoad:
		return s.Load
	case CapRPS:
		return s.RPS
	case CapOKRPS:
		return s.OKRPS
	}
	return s.P95
}

// Format renders the figure's value as the comparison shows it; unit is
// the search's unit of load.
func (f CapacityFigure) Format(v float64, unit string) string {
	switch f {
	case CapLoad:
		return strconv.FormatFloat(v, 'f', -1, 64) + " " + unit
	case CapP95:
		return FormatMillis(v)
	}
	return Format(RPS, v)
}

// CapacityChange is one figure of the saturation point in both runs.
type CapacityChange struct {
	Figure  CapacityFigure
	Base    float64
	New     float64
	Percent float64
	Verdict Verdict
}

// Capacity is a scenario that ran a capacity search in both runs: its two
// saturation points side by side.
type Capacity struct {
	Scenario  string
	Base, New *metrics.CapacitySummary
	// Changes are the saturation point's figures, in the order of
	// CapacityFigures. A higher load or throughput is better, a higher
	// p95 worse. The load's change is not judged (Neutral) when the two
	// searches count their load in different units (VUs and a rate).
	Changes []CapacityChange
}

// Capacities returns the scenarios that ran a capacity search in both
// runs, sorted by name.
func (c *Comparison) Capacities() []Capacity {
	var out []Capacity
	for name, b := range c.Base.Summary.Scenarios {
		n := c.New.Summary.Scenarios[name]
		if b == nil || n == nil || b.Capacity == nil || n.Capacity == nil {
			continue
		}
		cp := Capacity{Scenario: name, Base: b.Capacity, New: n.Capacity}
		for _, f := range CapacityFigures {
			base, new := f.Of(b.Capacity.Saturation), f.Of(n.Capacity.Saturation)
			ch := CapacityChange{Figure: f, Base: base, New: new, Percent: percent(base, new)}
			better := cmp.Compare(new, base)
			if f == CapP95 {
				better = -better
			}
			switch {
			case f == CapLoad && b.Capacity.Unit != n.Capacity.Unit:
				ch.Verdict, ch.Percent = Neutral, 0
			case better > 0:
				ch.Verdict = Better
			case better < 0:
				ch.Verdict = Worse
			}
			cp.Changes = append(cp.Changes, ch)
		}
		out = append(out, cp)
	}
	slices.SortFunc(out, func(a, b Capacity) int { return cmp.Compare(a.Scenario, b.Scenario) })
	return out
}

// Cells are the cells of the i-th change in the comparison's table, as
// the text and the HTML page show them: base, new, change and verdict.
func (cp Capacity) Cells(i int) [4]string {
	ch := cp.Changes[i]
	change := FormatPercent(ch.Percent)
	if ch.Figure == CapLoad && cp.Base.Unit != cp.New.Unit {
		change = "" // VUs against a rate: no change to tell
	}
	return [4]string{ch.Figure.Format(ch.Base, cp.Base.Unit), ch.Figure.Format(ch.New, cp.New.Unit), change, verdictText(ch.Verdict)}
}

// Point says where a search's saturation point is and why it stopped,
// such as "step 3 of 4, stopped by max_error_rate".
func Point(c *metrics.CapacitySummary) string {
	if c.Saturation.Step == 0 {
		return fmt.Sprintf("no step of %d held, stopped by %s", len(c.Steps), c.Saturation.Reason)
	}
	return fmt.Sprintf("step %d of %d, stopped by %s", c.Saturation.Step, len(c.Steps), c.Saturation.Reason)
}
