package main

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
)

// result is one tool's figures over one run, or its medians over the
// rounds (Round 0, Runs the rounds that succeeded).
type result struct {
	Tool              string  `json:"tool"`
	Round             int     `json:"round,omitempty"`
	Runs              int     `json:"runs,omitempty"`
	RPS               float64 `json:"requests_per_s"`
	Requests          int64   `json:"requests"`
	CPUSeconds        float64 `json:"cpu_s"`
	RequestsPerCPUSec float64 `json:"requests_per_cpu_s"`
	PeakRSSMB         float64 `json:"peak_rss_mb"`
	ServerCPUSeconds  float64 `json:"server_cpu_s"` // -1 when /proc could not be read
	Error             string  `json:"error,omitempty"`
}

// median is the middle of xs, or the mean of the middle two.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// medians folds each tool's successful runs into one result, in the
// order the tools first appear in runs. Each column's median is taken on
// its own, so requests per CPU-second is the median of the runs' own
// ratios.
func medians(runs []result) []result {
	var order []string
	byTool := map[string][]result{}
	for _, r := range runs {
		if _, seen := byTool[r.Tool]; !seen {
			order = append(order, r.Tool)
		}
		byTool[r.Tool] = append(byTool[r.Tool], r)
	}
	var out []result
	for _, tool := range order {
		var ok []result
		for _, r := range byTool[tool] {
			if r.Error == "" {
				ok = append(ok, r)
			}
		}
		m := result{Tool: tool, Runs: len(ok)}
		if len(ok) == 0 {
			m.Error = "failed in every round"
			out = append(out, m)
			continue
		}
		col := func(f func(result) float64) float64 {
			xs := make([]float64, len(ok))
			for i, r := range ok {
				xs[i] = f(r)
			}
			return median(xs)
		}
		m.RPS = col(func(r result) float64 { return r.RPS })
		m.Requests = int64(col(func(r result) float64 { return float64(r.Requests) }))
		m.CPUSeconds = col(func(r result) float64 { return r.CPUSeconds })
		m.RequestsPerCPUSec = col(func(r result) float64 { return r.RequestsPerCPUSec })
		m.PeakRSSMB = col(func(r result) float64 { return r.PeakRSSMB })
		m.ServerCPUSeconds = col(func(r result) float64 { return r.ServerCPUSeconds })
		out = append(out, m)
	}
	return out
}

// ratio is one goal of docs/performance.md, as measured in this invocation.
type ratio struct {
	What  string  `json:"what"`
	Value float64 `json:"value,omitempty"`
	Goal  float64 `json:"goal"` // Value must be at least this
	Meets bool    `json:"meets"`
	// Missing says why the ratio could not be computed.
	Missing string `json:"missing,omitempty"`
	// Note qualifies the figure, such as a server that was not pinned.
	Note string `json:"note,omitempty"`
}

// ratios computes the goals of docs/performance.md that the medians allow.
func ratios(meds []result, pinned bool) []ratio {
	by := map[string]result{}
	failed := map[string]bool{}
	for _, m := range meds {
		if m.Error == "" {
			by[m.Tool] = m
		} else {
			failed[m.Tool] = true
		}
	}
	without := func(tool string) string {
		if failed[tool] {
			return tool + " failed in every round"
		}
		return tool + " was not run"
	}
	of := func(what string, goal float64, a, b string, f func(result) float64) ratio {
		r := ratio{What: what, Goal: goal}
		ra, okA := by[a]
		rb, okB := by[b]
		switch {
		case !okA:
			r.Missing = without(a)
		case !okB:
			r.Missing = without(b)
		case f(rb) <= 0:
			r.Missing = b + "'s figure is zero"
		default:
			r.Value = f(ra) / f(rb)
			r.Meets = r.Value >= goal
		}
		return r
	}
	perCPU := func(r result) float64 { return r.RequestsPerCPUSec }
	rps := func(r result) float64 { return r.RPS }
	out := []ratio{
		of("hload requests per CPU-second vs vegeta", 2, "hload", "vegeta", perCPU),
		of("hload requests per CPU-second vs wrk", 0.8, "hload", "wrk", perCPU),
		of("hload requests/s vs wrk, against a 1-core server", 0.95, "hload", "wrk", rps),
		of("hload isolated vs in-process requests/s", 0.8, "hload-isolated", "hload", rps),
		// A flow of constant steps must cost no more CPU per request than
		// the same requests as separate iterations; 0.95 leaves room for
		// the noise of one run on a shared machine.
		of("hload 3-step flow vs single requests, requests per CPU-second", 0.95, "hload-flow", "hload", perCPU),
	}
	if !pinned {
		out[2].Note = "the server was not pinned to one core"
	}
	return out
}

// printResults prints one table of results under a title.
func printResults(w io.Writer, title string, rs []result) {
	const row = "%-15s %12s %8s %15s %12s %13s\n"
	fmt.Fprintf(w, "\n%s\n", title)
	fmt.Fprintf(w, row, "tool", "requests/s", "CPU s", "requests/CPU-s", "peak RSS MB", "server CPU s")
	for _, r := range rs {
		if r.Error != "" {
			fmt.Fprintf(w, "%-15s failed: %s\n", r.Tool, oneLine(r.Error))
			continue
		}
		server := "?"
		if r.ServerCPUSeconds >= 0 {
			server = fmt.Sprintf("%.2f", r.ServerCPUSeconds)
		}
		fmt.Fprintf(w, row, r.Tool, thousands(r.RPS), fmt.Sprintf("%.2f", r.CPUSeconds),
			thousands(r.RequestsPerCPUSec), fmt.Sprintf("%.1f", r.PeakRSSMB), server)
	}
}

// printRatios prints each ratio with its goal and whether it meets it.
func printRatios(w io.Writer, rs []ratio) {
	fmt.Fprintln(w, "\ngoals (docs/performance.md), from the medians")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, r := range rs {
		if r.Missing != "" {
			fmt.Fprintf(tw, "%s\tn/a\tgoal >= %gx\t%s\n", r.What, r.Goal, r.Missing)
			continue
		}
		verdict := "below"
		if r.Meets {
			verdict = "meets"
		}
		if r.Note != "" {
			verdict += " (" + r.Note + ")"
		}
		fmt.Fprintf(tw, "%s\t%.2fx\tgoal >= %gx\t%s\n", r.What, r.Value, r.Goal, verdict)
	}
	tw.Flush()
}

// thousands formats x rounded, with commas between thousands.
func thousands(x float64) string {
	s := strconv.FormatInt(int64(x+0.5), 10)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 160 {
		s = s[:160] + "..."
	}
	return s
}
