package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/hload/hload/core"
	"github.com/hload/hload/sinks"
)

func cmdPlan(args []string, types *sinks.Registry, stdout, stderr io.Writer) error {
	fs := newFlagSet(planHelp, stdout, stderr)
	var (
		common  commonFlags
		segment segmentFlags
		latency time.Duration
	)
	common.register(fs)
	segment.register(fs.FlagSet)
	fs.DurationVar(&latency, "latency", 100*time.Millisecond, "open model: the iteration latency to size the VU pool for (Little's law)")
	files, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if latency <= 0 {
		// Little's law with a latency of zero or less sizes no pool, or
		// a negative one.
		return &exitError{code: exitUsage, err: fmt.Errorf("--latency %s: the latency of an iteration must be longer than zero, such as --latency 250ms", latency)}
	}
	seg, err := segment.resolve()
	if err != nil {
		return &exitError{code: exitUsage, err: err}
	}
	plugins := newPluginHost(context.Background())
	defer plugins.killAll()
	test, err := loadTest(files, &common, validateOnly, plugins, stderr, runsNothing, withSinkTypes(types))
	if err != nil {
		return err
	}
	if err := core.CheckSegment(test, seg); err != nil {
		return &exitError{code: exitUsage, err: err}
	}
	machine := core.ReadMachine()
	if err := checkLimits(test, seg, machine, &common, stderr); err != nil {
		return err
	}
	for i, p := range core.Plan(test, seg) {
		if i > 0 {
			fmt.Fprintln(stdout)
		}
		printPlan(stdout, p, latency)
	}
	fmt.Fprintln(stdout)
	printNeed(stdout, core.Estimate(test, seg), machine)
	return nil
}

// printNeed prints what the test is estimated to need at its peak, beside
// the tightest limit of each kind this machine sets.
func printNeed(w io.Writer, need core.Need, m core.Machine) {
	fmt.Fprintf(w, "this machine: at its peak the test runs %d VUs at once\n", need.VUs)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, k := range []struct {
		kind core.LimitKind
		name string
		need string
	}{
		{core.LimitMemory, "memory", fmt.Sprintf("about %s, at %s per VU", core.FormatBytes(need.Of(core.LimitMemory)), core.FormatBytes(core.MemoryPerVU))},
		{core.LimitAddressSpace, "address space", fmt.Sprintf("about %s, at %s per VU", core.FormatBytes(need.Of(core.LimitAddressSpace)), core.FormatBytes(core.AddressPerVU))},
		{core.LimitFiles, "open files", fmt.Sprintf("%d: %d connections and %d for hload", need.Of(core.LimitFiles), need.Connections, core.FilesReserve)},
	} {
		limit := "no limit set"
		if l, ok := m.Tightest(k.kind); ok && k.kind == core.LimitFiles {
			limit = fmt.Sprintf("%s: %d free", l.Name, l.Free())
		} else if ok {
			limit = fmt.Sprintf("%s: %s free", l.Name, core.FormatBytes(l.Free()))
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", k.name, k.need, limit)
	}
	tw.Flush()
}

func printPlan(w io.Writer, p core.ScenarioPlan, latency time.Duration) {
	fmt.Fprintf(w, "scenario %q: %s executor, %s model\n", p.Name, p.Executor, p.Model)
	if p.Capacity != nil {
		fmt.Fprintf(w, "  duration     at most %s (+ up to %s graceful stop)\n", p.Duration, p.GracefulStop)
	} else if p.Bounded {
		fmt.Fprintf(w, "  duration     %s (+ up to %s graceful stop)\n", p.Duration, p.GracefulStop)
	} else {
		fmt.Fprintf(w, "  duration     until every VU finishes its iterations (ramp-up %s)\n", p.Duration)
	}
	if p.Capacity != nil {
		printCapacityPlan(w, p)
	} else if p.Model == "open" {
		printOpenPlan(w, p, latency)
	} else {
		fmt.Fprintf(w, "  max VUs      %d\n", p.MaxVUs)
		if p.Iterations >= 0 {
			fmt.Fprintf(w, "  iterations   %d exactly\n", p.Iterations)
		}
		fmt.Fprintln(w, "  VUs over time (linear between points):")
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		for _, pt := range p.Points {
			fmt.Fprintf(tw, "    \t%s\t%d VUs\t\n", pt.At.Round(time.Millisecond), pt.VUs)
		}
		tw.Flush()
	}
	printMix(w, p)
}

// printMix prints the setup's steps, then what an iteration picks from:
// each bare request and each flow with its weight, its share and, for a
// flow, its steps in order.
func printMix(w io.Writer, p core.ScenarioPlan) {
	if p.Setup != nil {
		fmt.Fprintf(w, "  setup        target %s: %s; once per VU, before its first iteration\n",
			strings.Join(p.Setup.Targets(), ", "), steps(*p.Setup))
	}
	fmt.Fprintln(w, "  mix (an iteration runs one entry, picked by weight):")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, f := range p.Mix {
		kind, what := "flow", steps(f)
		if f.Single {
			kind, what = "request", notes(f.Steps[0])
		}
		line := fmt.Sprintf("    %s %s\ttarget %s\tweight %d\t%.1f %%", kind, f.Name, strings.Join(f.Targets(), ", "), f.Weight, f.Share*100)
		if what != "" {
			line += "\t" + what
		}
		fmt.Fprintln(tw, line)
	}
	tw.Flush()
}

// steps renders a flow's steps in order, such as
// "list (captures product) -> buy; 50ms between steps".
func steps(f core.FlowShare) string {
	parts := make([]string, len(f.Steps))
	for i, st := range f.Steps {
		parts[i] = st.Name
		if c := notes(st); c != "" {
			parts[i] += " " + c
		}
	}
	s := strings.Join(parts, " -> ")
	if t := f.ThinkTime; t.Max > 0 && len(f.Steps) > 1 {
		if t.Min == t.Max {
			s += fmt.Sprintf("; %s between steps", t.Min)
		} else {
			s += fmt.Sprintf("; uniform(%s, %s) between steps", t.Min, t.Max)
		}
	}
	return s
}

// notes renders what a step captures, as "(captures token, session)",
// and whether the flow goes on when it fails; "" when neither.
func notes(st core.StepPlan) string {
	var notes []string
	if len(st.Captures) > 0 {
		notes = append(notes, "captures "+strings.Join(st.Captures, ", "))
	}
	if st.ContinueOnFailure {
		notes = append(notes, "on_failure continue")
	}
	if len(notes) == 0 {
		return ""
	}
	return "(" + strings.Join(notes, "; ") + ")"
}

// printPool prints an open model's VU pool and the connections it opens.
func printPool(w io.Writer, p core.ScenarioPlan) {
	fmt.Fprintf(w, "  VU pool      %d pre-allocated, up to %d (max_vus); it grows only while iterations wait, %d VUs at a time\n",
		p.PreAllocatedVUs, p.MaxVUs, p.GrowsBy)
	if p.ConnectionsPerVU > 0 {
		fmt.Fprintf(w, "  connections  %d opened before the first iteration, up to %d at max_vus (%d per VU)\n",
			p.PreAllocatedVUs*p.ConnectsAhead, p.MaxVUs*p.ConnectionsPerVU, p.ConnectionsPerVU)
	}
}

// printOpenPlan prints an arrival-rate schedule and sizes its VU pool.
func printOpenPlan(w io.Writer, p core.ScenarioPlan, latency time.Duration) {
	fmt.Fprintf(w, "  iterations   %d planned\n", p.Iterations)
	printPool(w, p)
	fmt.Fprintln(w, "  rate over time (iterations/s, linear between points):")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	for _, r := range p.Rates {
		fmt.Fprintf(tw, "    \t%s\t%s/s\t\n", r.At.Round(time.Millisecond), strconv.FormatFloat(r.PerSecond, 'f', -1, 64))
	}
	tw.Flush()
	fmt.Fprintf(w, "  VUs needed at the peak rate of %s/s (Little's law: rate x latency):\n", strconv.FormatFloat(p.PeakRate, 'f', -1, 64))
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, l := range []time.Duration{10 * time.Millisecond, latency, time.Second} {
		need := p.VUsFor(l)
		verdict := "fits max_vus"
		if need > p.MaxVUs {
			verdict = "exceeds max_vus: iterations will be dropped"
		}
		fmt.Fprintf(tw, "    at %s\t%d VUs\t%s\n", l, need, verdict)
	}
	tw.Flush()
}
