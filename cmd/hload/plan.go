package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/hload/hload/core"
)

func cmdPlan(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("plan", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		common  commonFlags
		segment string
		latency time.Duration
	)
	common.register(fs)
	fs.StringVar(&segment, "segment", "1/1", "plan only share i of n of the load")
	fs.DurationVar(&latency, "latency", 100*time.Millisecond, "open model: the iteration latency to size the VU pool for (Little's law)")
	files, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	seg, err := core.ParseSegment(segment)
	if err != nil {
		return &exitError{code: exitUsage, err: err}
	}
	plugins := newPluginHost(context.Background())
	defer plugins.killAll()
	test, err := loadTest(files, &common, validateOnly, plugins, stderr, runsNothing)
	if err != nil {
		return err
	}
	for i, p := range core.Plan(test, seg) {
		if i > 0 {
			fmt.Fprintln(stdout)
		}
		printPlan(stdout, p, latency)
	}
	return nil
}

func printPlan(w io.Writer, p core.ScenarioPlan, latency time.Duration) {
	fmt.Fprintf(w, "scenario %q: %s executor, %s model\n", p.Name, p.Executor, p.Model)
	if p.Bounded {
		fmt.Fprintf(w, "  duration     %s (+ up to %s graceful stop)\n", p.Duration, p.GracefulStop)
	} else {
		fmt.Fprintf(w, "  duration     until every VU finishes its iterations (ramp-up %s)\n", p.Duration)
	}
	if p.Model == "open" {
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
	fmt.Fprintln(w, "  request mix:")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, r := range p.Requests {
		fmt.Fprintf(tw, "    %s\ttarget %s\tweight %d\t%.1f %%\n", r.Name, r.Target, r.Weight, r.Share*100)
	}
	tw.Flush()
}

// printOpenPlan prints an arrival-rate schedule and sizes its VU pool.
func printOpenPlan(w io.Writer, p core.ScenarioPlan, latency time.Duration) {
	fmt.Fprintf(w, "  iterations   %d planned\n", p.Iterations)
	fmt.Fprintf(w, "  VU pool      %d pre-allocated, up to %d (max_vus)\n", p.PreAllocatedVUs, p.MaxVUs)
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
