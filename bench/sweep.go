package main

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// sweepStep is one run of the open-model sweep: a tool at one rate.
type sweepStep struct {
	Rate int  `json:"rate"`
	Held bool `json:"held"`
	// Sent is vegeta's criterion, lateness aside: sent within 0.5 % of
	// the plan, none dropped, none failed. It is what compares hload and
	// the floor with vegeta, which reports no lateness.
	Sent bool   `json:"sent_in_full"`
	Why  string `json:"why_not,omitempty"`
	Run  result `json:"run"`
}

// sweepRun is one tool's sweep in one round: the rates it ran, in
// increasing order, up to the first it did not send in full.
type sweepRun struct {
	Tool        string      `json:"tool"`
	Round       int         `json:"round"`
	Steps       []sweepStep `json:"steps"`
	Highest     int         `json:"highest_held_rate"` // 0 when the first rate did not hold
	HighestSent int         `json:"highest_sent_rate"` // the same, by Sent
}

// sweepMedian is one tool's highest held rate and highest rate sent in
// full in each round, and their medians.
type sweepMedian struct {
	Tool       string  `json:"tool"`
	Highest    []int   `json:"highest_held_rates"`
	Median     float64 `json:"median_highest_held_rate"`
	Sent       []int   `json:"highest_sent_rates"`
	MedianSent float64 `json:"median_highest_sent_rate"`
}

// parseRates reads -sweep-rates: increasing rates per second, since a
// tool's sweep stops at the first rate it does not send in full.
func parseRates(s string) ([]int, error) {
	var rates []int
	for _, f := range strings.Split(s, ",") {
		rate, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || rate < 1 || len(rates) > 0 && rate <= rates[len(rates)-1] {
			return nil, fmt.Errorf("-sweep-rates %q: want increasing requests per second, such as %s", s, defaultSweepRates)
		}
		rates = append(rates, rate)
	}
	return rates, nil
}

// held says whether a sweep run kept up with its rate, and why not.
// lateness says the tool is held to its start lateness: hload reports it,
// vegeta does not, so vegeta's rate holds on what it sent and on no
// request failing (a run with failed requests has an Error).
func held(r result, lateness bool) (bool, string) {
	switch {
	case r.Error != "":
		return false, oneLine(r.Error)
	case r.Planned <= 0:
		return false, "no plan"
	case offPlanPct(r) > sentOffPlanPct:
		return false, fmt.Sprintf("sent %.2f %% of the plan", float64(r.Requests)/float64(r.Planned)*100)
	case r.Dropped > 0:
		return false, fmt.Sprintf("%d dropped", r.Dropped)
	case lateness && r.LatenessP99Ms == nil:
		return false, "no start lateness reported"
	case lateness && *r.LatenessP99Ms >= latenessP99Ms:
		return false, fmt.Sprintf("start lateness p99 %.2f ms", *r.LatenessP99Ms)
	}
	return true, ""
}

// highest is the highest rate that met ok below the first that did not:
// a rate held above one that was not would be luck, not capacity.
func highest(steps []sweepStep, ok func(sweepStep) bool) int {
	h := 0
	for _, s := range steps {
		if !ok(s) {
			break
		}
		h = s.Rate
	}
	return h
}

func isHeld(s sweepStep) bool { return s.Held }
func isSent(s sweepStep) bool { return s.Sent }

// sweepRound runs each tool at each rate in turn, the tools interleaved
// at each rate as the rounds interleave them, and stops a tool at the
// first rate it does not send in full: one it sent in full but started
// late is not held, and the next rate still shows how far it sends. run runs one tool at one rate. A run whose
// requests failed is a rate not held; any other error (the tool did not
// run, its figures could not be read, hload's count differs from the
// server's) also fails the harness, and is in failed.
func sweepRound(rates []int, tools []*tool, round int, run func(t *tool, rate int) (result, error)) (runs []sweepRun, failed []string) {
	runs = make([]sweepRun, len(tools))
	for i, t := range tools {
		runs[i] = sweepRun{Tool: t.name, Round: round}
	}
	for _, rate := range rates {
		for i, t := range tools {
			if steps := runs[i].Steps; len(steps) > 0 && !steps[len(steps)-1].Sent {
				continue
			}
			res, err := run(t, rate)
			res.Round = round
			if err != nil {
				res.Error = err.Error()
				if !errors.As(err, new(requestsFailed)) {
					failed = append(failed, fmt.Sprintf("%s at %d/s in round %d: %s", t.name, rate, round, oneLine(err.Error())))
				}
			}
			// hload (the tool the harness builds) and the floor report
			// their start lateness; the peers do not.
			ok, why := held(res, t.program == "")
			sent, _ := held(res, false)
			runs[i].Steps = append(runs[i].Steps, sweepStep{Rate: rate, Held: ok, Sent: sent, Why: why, Run: res})
		}
	}
	for i := range runs {
		runs[i].Highest = highest(runs[i].Steps, isHeld)
		runs[i].HighestSent = highest(runs[i].Steps, isSent)
	}
	return runs, failed
}

// sweepMedians is each tool's highest held rate per round, in the order
// the tools first appear, with their median.
func sweepMedians(runs []sweepRun) []sweepMedian {
	var out []sweepMedian
	index := map[string]int{}
	for _, r := range runs {
		i, seen := index[r.Tool]
		if !seen {
			i = len(out)
			index[r.Tool] = i
			out = append(out, sweepMedian{Tool: r.Tool})
		}
		out[i].Highest = append(out[i].Highest, r.Highest)
		out[i].Sent = append(out[i].Sent, r.HighestSent)
	}
	for i, m := range out {
		out[i].Median = medianRate(m.Highest)
		out[i].MedianSent = medianRate(m.Sent)
	}
	return out
}

func medianRate(rates []int) float64 {
	xs := make([]float64, len(rates))
	for i, r := range rates {
		xs[i] = float64(r)
	}
	return median(xs)
}

// sweepNote says when a rate held, under each sweep table.
var sweepNote = fmt.Sprintf("a rate was sent in full when the tool sent within %g %% of the plan, dropped none and no request failed; "+
	"it held when it was sent in full and, for hload and the floor, their start lateness p99 was under %g ms (vegeta reports no lateness: sent in full is held). "+
	"A tool stops at the first rate it does not send in full.",
	sentOffPlanPct, latenessP99Ms)

// printSweep prints one round's sweep: every rate each tool ran, and the
// highest it held.
func printSweep(w io.Writer, title string, duration time.Duration, runs []sweepRun) {
	fmt.Fprintf(w, "\n%s, each rate for %s\n", title, duration)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "tool\trate/s\tsent/plan\tdropped\tlateness p99 ms\tconns\theld\t")
	for _, run := range runs {
		for _, s := range run.Steps {
			sent, late := "-", "-"
			if s.Run.Planned > 0 {
				sent = fmt.Sprintf("%.2f %%", float64(s.Run.Requests)/float64(s.Run.Planned)*100)
			}
			if s.Run.LatenessP99Ms != nil {
				late = fmt.Sprintf("%.2f", *s.Run.LatenessP99Ms)
			}
			verdict := "yes\t"
			if !s.Held {
				verdict = "no\t  " + s.Why
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\n", run.Tool, thousands(float64(s.Rate)), sent, s.Run.Dropped, late, count(s.Run.ServerConnections), verdict)
		}
	}
	tw.Flush()
	for _, run := range runs {
		fmt.Fprintf(w, "%s: highest rate held %s, sent in full %s\n", run.Tool, heldRate(float64(run.Highest)), heldRate(float64(run.HighestSent)))
	}
	fmt.Fprintln(w, sweepNote)
}

// printSweepMedians prints each tool's highest held rate and highest rate
// sent in full in each round, and their medians.
func printSweepMedians(w io.Writer, rounds int, ms []sweepMedian) {
	fmt.Fprintf(w, "\ncase open-sweep, the highest rate held and sent in full per round, over %s\n", plural(rounds, "round"))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := "tool\t\t"
	for round := 1; round <= rounds; round++ {
		head += fmt.Sprintf("round %d\t", round)
	}
	fmt.Fprintln(tw, head+"median\t")
	for _, m := range ms {
		for _, by := range []struct {
			name   string
			rates  []int
			median float64
		}{{"held", m.Highest, m.Median}, {"sent in full", m.Sent, m.MedianSent}} {
			row := m.Tool + "\t" + by.name + "\t"
			for _, h := range by.rates {
				row += heldRate(float64(h)) + "\t"
			}
			fmt.Fprintln(tw, row+heldRate(by.median)+"\t")
		}
	}
	tw.Flush()
}

// heldRate formats a highest held rate; 0 is none held.
func heldRate(rate float64) string {
	if rate <= 0 {
		return "none"
	}
	return thousands(rate) + "/s"
}
