// Package compare sets two runs' summary exports (the JSON that hload apply
// --summary-export writes) side by side, request by request, and judges
// rules such as "latency p95 > +10%" on the change, so that a CI job can
// fail a build on a regression.
//
// It reads the exports with metrics' own types, so a field the run
// writes is a field compare reads, and it does nothing else: the CLI prints
// the comparison and maps the rules' verdict to an exit code.
package compare

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"

	"github.com/hload/hload/metrics"
)

// Run is one side of a comparison: the file it was read from and its
// summary.
type Run struct {
	Path    string
	Summary *metrics.Summary
}

// Load reads a summary export. Its errors name the file, and say when the
// file is JSON but not a summary export.
func Load(path string) (Run, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Run{}, err // *PathError names the file
	}
	var sum metrics.Summary
	if err := json.Unmarshal(data, &sum); err != nil {
		var syntax *json.SyntaxError
		if errors.As(err, &syntax) {
			return Run{}, fmt.Errorf("%s: not JSON (at byte %d: %v); compare reads the file that hload apply --summary-export writes", path, syntax.Offset, err)
		}
		return Run{}, fmt.Errorf("%s: not a summary export (%v); compare reads the file that hload apply --summary-export writes", path, err)
	}
	// Every export has these; a JSON file of another kind has none of
	// them. Unknown fields are allowed: later versions may add some.
	if sum.HloadVersion == "" || sum.RunID == "" || sum.Started.IsZero() || sum.Scenarios == nil {
		return Run{}, fmt.Errorf("%s: not a summary export: it lacks hload_version, run_id, started or scenarios; compare reads the file that hload apply --summary-export writes", path)
	}
	return Run{Path: path, Summary: &sum}, nil
}

// Figure is one figure of a request that the comparison shows.
type Figure int

// The figures, in the order the comparison shows them.
const (
	Count Figure = iota
	RPS
	Mean
	P50
	P90
	P95
	P99
	Max
	ErrorRate
)

// Figures lists every Figure in order.
var Figures = []Figure{Count, RPS, Mean, P50, P90, P95, P99, Max, ErrorRate}

var figureNames = [...]string{"count", "requests/s", "mean", "p50", "p90", "p95", "p99", "max", "error %"}

// String is the figure's name in the comparison's table.
func (f Figure) String() string { return figureNames[f] }

// Of returns the figure of r in the export's units: milliseconds for
// latencies, a fraction for the error rate.
func (f Figure) Of(r *metrics.RequestFigures) float64 {
	switch f {
	case Count:
		return float64(r.Count)
	case RPS:
		return r.RPS
	case Mean:
		return r.Latency.Mean
	case P50:
		return r.Latency.P50
	case P90:
		return r.Latency.P90
	case P95:
		return r.Latency.P95
	case P99:
		return r.Latency.P99
	case Max:
		return r.Latency.Max
	case ErrorRate:
		return r.ErrorRate
	}
	panic(fmt.Sprintf("compare: unknown figure %d", f))
}

// HigherIsBetter reports which way the figure improves: +1 when higher is
// better (requests/s), -1 when lower is (latencies, the error rate), 0
// when it is neither (count: more calls is not a better service).
func (f Figure) HigherIsBetter() int {
	switch f {
	case Count:
		return 0
	case RPS:
		return 1
	}
	return -1
}

// percentileResolution is how close, in percent, a percentile is to the
// true value: the runs' HDR histograms keep three significant digits.
const percentileResolution = 0.1

// percentile reports whether the figure is a percentile of a histogram,
// not an exact figure.
func (f Figure) percentile() bool { return f >= P50 && f <= P99 }

// Verdict says whether a change is for the better.
type Verdict int

// The verdicts. Neutral is a change of a figure that is neither better
// nor worse either way (count).
const (
	Same Verdict = iota
	Better
	Worse
	Neutral
)

// String is the verdict as the table marks it; "" for Neutral.
func (v Verdict) String() string {
	return [...]string{"same", "better", "worse", ""}[v]
}

// Change is one figure in both runs.
type Change struct {
	Figure Figure
	Base   float64
	New    float64
	// Percent is the change relative to the base run, in percent: 0 when
	// both are 0, +Inf when only the base is 0.
	Percent float64
	Verdict Verdict
}

// change compares one figure of two runs.
func change(f Figure, base, new float64) Change {
	c := Change{Figure: f, Base: base, New: new, Percent: percent(base, new)}
	switch d := cmp.Compare(new, base) * f.HigherIsBetter(); {
	case f.HigherIsBetter() == 0:
		c.Verdict = Neutral
	case f.percentile() && math.Abs(c.Percent) <= percentileResolution:
		// Within the histogram's resolution the two are the same value.
	case d > 0:
		c.Verdict = Better
	case d < 0:
		c.Verdict = Worse
	}
	return c
}

// percent is new's change from base in percent; 0 when both are 0, and
// +Inf (or -Inf) when only base is.
func percent(base, new float64) float64 {
	switch {
	case base == new:
		return 0
	case base == 0:
		return math.Inf(cmp.Compare(new, 0))
	}
	return (new - base) / math.Abs(base) * 100
}

// Request is one request of one scenario, in either run or both.
type Request struct {
	Scenario string
	Request  string
	// Base and New are the request's figures in each run; nil in the run
	// that does not have it.
	Base, New *metrics.RequestFigures
	// Changes are its figures in both runs, in the order of Figures; nil
	// unless both runs have it.
	Changes []Change
}

// Name is "scenario/request", as a rule's scope writes it.
func (r Request) Name() string { return r.Scenario + "/" + r.Request }

// Comparison is two runs side by side.
type Comparison struct {
	Base, New Run
	// Requests are every request of either run, sorted by scenario then
	// request; one that only one run has is listed too.
	Requests []Request
}

// Compare sets two runs side by side, request by request.
func Compare(base, new Run) *Comparison {
	c := &Comparison{Base: base, New: new}
	index := map[[2]string]int{}
	add := func(sum *metrics.Summary, set func(*Request, *metrics.RequestFigures)) {
		for scenario, sc := range sum.Scenarios {
			if sc == nil {
				continue
			}
			for name, r := range sc.Requests {
				if r == nil {
					continue
				}
				key := [2]string{scenario, name}
				i, ok := index[key]
				if !ok {
					i = len(c.Requests)
					index[key] = i
					c.Requests = append(c.Requests, Request{Scenario: scenario, Request: name})
				}
				set(&c.Requests[i], r)
			}
		}
	}
	add(base.Summary, func(r *Request, f *metrics.RequestFigures) { r.Base = f })
	add(new.Summary, func(r *Request, f *metrics.RequestFigures) { r.New = f })
	slices.SortFunc(c.Requests, func(a, b Request) int {
		return cmp.Or(cmp.Compare(a.Scenario, b.Scenario), cmp.Compare(a.Request, b.Request))
	})
	for i := range c.Requests {
		r := &c.Requests[i]
		if r.Base == nil || r.New == nil {
			continue
		}
		for _, f := range Figures {
			r.Changes = append(r.Changes, change(f, f.Of(r.Base), f.Of(r.New)))
		}
	}
	return c
}
