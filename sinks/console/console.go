// Package console is the terminal output of a run: a header that names the
// load model, a progress line per interval and the final summary.
package console

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/hload/hload/metrics"
)

// Options shape the console output.
type Options struct {
	// Quiet silences the progress lines. The header and the summary are
	// still printed: they are the result, not progress.
	Quiet bool
	// NoColor prints the summary without ANSI colours.
	NoColor bool
	// Interval is the least time between two progress lines. The figures
	// of the snapshots in between are folded into the next line, so none
	// is lost. Zero prints a line for every snapshot.
	Interval time.Duration
}

// Sink prints a run to a terminal. It implements core.Sink.
type Sink struct {
	w    io.Writer
	opts Options

	// window folds snapshots until the next progress line.
	window    progress
	lastPrint time.Duration
	closed    bool
}

// progress is the sum of the snapshots since the last progress line.
type progress struct {
	snapshots int
	length    time.Duration
	// rps is the rate of a lone snapshot whose rates run from before its
	// start (the run's last, when a few milliseconds long); 0 otherwise.
	rps     float64
	count   int64
	errors  int64
	p95     float64
	dropped int64
	vus     int
	gauges  map[string]int64 // the last snapshot's
	// capacity is the step of each capacity search, the last snapshot's.
	capacity map[string]metrics.CapacityProgress
	elapsed  time.Duration
	seen     bool

	// The flows' figures, setup apart: a setup runs once per VU, so its
	// count is no rate of journeys, but its failures are what a watcher
	// of a login outage must see.
	flows       bool // a flow other than setup is in the test
	flowRate    float64
	flowCount   int64
	flowFailed  int64
	setupFailed int64
}

// New returns a console sink that prints to w. Once w's reader has gone
// (a broken pipe), the sink prints nothing more and reports no error.
func New(w io.Writer, opts Options) *Sink {
	return &Sink{w: &closedPipe{w: w}, opts: opts}
}

// Start prints one line naming the run and each scenario with its executor
// and load model, so a reader of the output knows which model produced the
// figures.
func (s *Sink) Start(ctx context.Context, run metrics.RunInfo) error {
	var b strings.Builder
	b.WriteString("hload")
	if run.Version != "" {
		b.WriteString(" " + run.Version)
	}
	if run.RunID != "" {
		b.WriteString(" run " + run.RunID)
	}
	b.WriteString(":")
	if len(run.Scenarios) == 0 {
		b.WriteString(" no scenarios")
	}
	for i, sc := range run.Scenarios {
		if i > 0 {
			b.WriteString(";")
		}
		fmt.Fprintf(&b, " scenario %s (%s, %s)", sc.Name, sc.Executor, modelName(sc.Model))
	}
	b.WriteString("\n")
	_, err := io.WriteString(s.w, b.String())
	return err
}

// modelName spells a scenario's model for people: "closed model" means
// VUs that loop, "open model" means a planned arrival rate.
func modelName(model string) string {
	if model == "" {
		return "unknown model"
	}
	return model + " model"
}

// Write prints one progress line for the snapshot, unless Quiet, or folds
// it into the next line when Options.Interval has not yet passed. Its
// warnings are printed at once, whatever the interval: a user must not
// miss them.
func (s *Sink) Write(snap metrics.Snapshot) error {
	if s.opts.Quiet || s.closed {
		return nil
	}
	for _, warning := range snap.Warnings {
		// A warning may quote a server's answer.
		if _, err := fmt.Fprintf(s.w, "[%5s] WARNING: %s\n", snap.Elapsed.Round(time.Second), metrics.Printable(warning)); err != nil {
			return err
		}
	}
	s.window.add(&snap)
	if snap.Final && snap.RateStart.Before(snap.Start) && s.window.empty() {
		// The run's last snapshot, a few milliseconds after the last
		// tick, in which nothing ended: its line would repeat the one
		// before at the same second, with that one's rate (the core
		// spreads a short last interval's rate over the one before) and
		// no latency.
		s.window = progress{}
		return nil
	}
	// The run's last snapshot is otherwise always printed: there is no
	// next line to fold it into.
	if s.opts.Interval > 0 && snap.Elapsed-s.lastPrint < s.opts.Interval && !snap.Final {
		return nil
	}
	s.lastPrint = snap.Elapsed
	line := progressLine(&s.window)
	s.window = progress{}
	_, err := io.WriteString(s.w, line)
	return err
}

// add folds a snapshot into the window.
func (w *progress) add(snap *metrics.Snapshot) {
	w.seen = true
	w.snapshots++
	w.length += snap.End.Sub(snap.Start)
	w.rps, w.flowRate = 0, 0
	lone := w.snapshots == 1 && snap.RateStart.Before(snap.Start)
	if lone {
		// The core put this snapshot's rates over a longer, real length;
		// its count over its own few milliseconds would be a false burst.
		for i := range snap.Series {
			w.rps += snap.Series[i].RPS
		}
	}
	for i := range snap.Flows {
		f := &snap.Flows[i]
		if f.Flow == metrics.SetupFlow {
			w.setupFailed += f.Failed
			continue
		}
		w.flows = true
		w.flowCount += f.Count
		w.flowFailed += f.Failed
		if lone {
			w.flowRate += f.Rate
		}
	}
	w.elapsed = snap.Elapsed
	for i := range snap.Series {
		f := &snap.Series[i]
		w.count += f.Count
		w.errors += f.Errors
		// The p95 of the whole interval cannot be rebuilt from the series'
		// p95s without their histograms; the worst series' p95 is an upper
		// bound of it and what a watcher wants to see climb.
		w.p95 = max(w.p95, f.Latency.P95)
	}
	w.vus = 0
	for _, n := range snap.VUs {
		w.vus += n
	}
	for _, n := range snap.Dropped {
		w.dropped += n
	}
	w.gauges = snap.Gauges
	w.capacity = snap.Capacity
}

// empty reports whether nothing ended in the window: no call, no flow,
// no setup, and no iteration was dropped.
func (w *progress) empty() bool {
	return w.count == 0 && w.errors == 0 && w.flowCount == 0 && w.flowFailed == 0 &&
		w.setupFailed == 0 && w.dropped == 0
}

// progressLine renders e.g.
// "[  12s] vus 40  rps 812  err 0.1%  p95 23.4ms  dropped 0", then, in a
// test with flows, "  flows/s 270  flows failed 3", then "  setup failed 2"
// when setups failed, then the protocols' gauges, such as
// "  sse_open_streams 200".
func progressLine(p *progress) string {
	rps := p.rps
	if rps == 0 && p.length > 0 {
		rps = float64(p.count) / p.length.Seconds()
	}
	errPct := 0.0
	if p.count > 0 {
		errPct = 100 * float64(p.errors) / float64(p.count)
	}
	line := fmt.Sprintf("[%5s] vus %d  rps %.0f  err %s%%  p95 %sms  dropped %d",
		p.elapsed.Round(time.Second), p.vus, rps, formatPercent(errPct), formatMs(p.p95), p.dropped)
	if p.flows {
		rate := p.flowRate
		if rate == 0 && p.length > 0 {
			rate = float64(p.flowCount) / p.length.Seconds()
		}
		line += fmt.Sprintf("  flows/s %.0f  flows failed %d", rate, p.flowFailed)
	}
	if p.setupFailed > 0 {
		line += fmt.Sprintf("  setup failed %d", p.setupFailed)
	}
	for _, n := range slices.Sorted(maps.Keys(p.gauges)) {
		line += fmt.Sprintf("  %s %d", n, p.gauges[n])
	}
	return line + capacityProgress(p.capacity) + "\n"
}

// Close prints the summary, even when Quiet. It prints it once, however
// often it is called.
func (s *Sink) Close(sum metrics.Summary) error {
	if s.closed {
		return nil
	}
	s.closed = true
	return WriteSummary(s.w, sum, s.opts.NoColor)
}
