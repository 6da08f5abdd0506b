package main

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
)

// result is one tool's figures over one run, or its medians over the
// rounds (Round 0, Runs the rounds that succeeded).
type result struct {
	Case              string  `json:"case"`
	Tool              string  `json:"tool"`
	Round             int     `json:"round,omitempty"`
	Runs              int     `json:"runs,omitempty"`
	RPS               float64 `json:"requests_per_s"`
	Requests          int64   `json:"requests"`
	CPUSeconds        float64 `json:"cpu_s"`
	RequestsPerCPUSec float64 `json:"requests_per_cpu_s"`
	CPUMicrosPerReq   float64 `json:"cpu_us_per_request"`
	PeakRSSMB         float64 `json:"peak_rss_mb"`
	ServerCPUSeconds  float64 `json:"server_cpu_s"`    // -1 when /proc could not be read
	ServerRequests    int64   `json:"server_requests"` // what the server counted during the run; -1 unknown
	// ServerConnections are the HTTP connections the server accepted
	// during the run; -1 unknown.
	ServerConnections int64 `json:"server_connections"`
	// ServerStallMs is the longest the server's core stopped serving
	// during the run, by its own clock; nil unknown.
	ServerStallMs *float64 `json:"server_stall_max_ms,omitempty"`
	// Of the open-model cases: the requests the rate plans over the run,
	// hload's dropped iterations and the p99 of its start lateness.
	Planned       int64    `json:"planned,omitempty"`
	Dropped       int64    `json:"dropped,omitempty"`
	LatenessP99Ms *float64 `json:"start_lateness_p99_ms,omitempty"`
	// VUs is the idle-VU case's VU count.
	VUs int `json:"vus,omitempty"`
	// Saturated is why hload said it was the bottleneck of the run, from
	// its summary's generator section; in the medians, with the rounds
	// that said so. Its figures measured hload as much as the server.
	Saturated string `json:"generator_saturated,omitempty"`
	Error     string `json:"error,omitempty"`
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
	out := []result{}
	for _, tool := range order {
		var ok []result
		for _, r := range byTool[tool] {
			if r.Error == "" {
				ok = append(ok, r)
			}
		}
		first := byTool[tool][0]
		m := result{Case: first.Case, Tool: tool, Runs: len(ok), VUs: first.VUs}
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
		m.ServerRequests = int64(col(func(r result) float64 { return float64(r.ServerRequests) }))
		m.ServerConnections = int64(col(func(r result) float64 { return float64(r.ServerConnections) }))
		m.CPUMicrosPerReq = col(func(r result) float64 { return r.CPUMicrosPerReq })
		m.Planned = int64(col(func(r result) float64 { return float64(r.Planned) }))
		m.Dropped = int64(col(func(r result) float64 { return float64(r.Dropped) }))
		saturated, reason := 0, ""
		for _, r := range ok {
			if r.Saturated != "" {
				saturated, reason = saturated+1, r.Saturated
			}
		}
		if saturated > 0 {
			m.Saturated = fmt.Sprintf("in %d of %d rounds: %s", saturated, len(ok), reason)
		}
		m.LatenessP99Ms = medianOf(ok, func(r result) *float64 { return r.LatenessP99Ms })
		m.ServerStallMs = medianOf(ok, func(r result) *float64 { return r.ServerStallMs })
		out = append(out, m)
	}
	return out
}

// medianOf is the median of a figure the runs may not have, or nil when
// none has it.
func medianOf(rs []result, f func(result) *float64) *float64 {
	var xs []float64
	for _, r := range rs {
		if v := f(r); v != nil {
			xs = append(xs, *v)
		}
	}
	if len(xs) == 0 {
		return nil
	}
	v := median(xs)
	return &v
}

// ratio is one goal of docs/performance.md, as measured in this
// invocation: a ratio of two tools' figures, or one figure of one tool.
type ratio struct {
	Case  string  `json:"case"`
	What  string  `json:"what"`
	Value float64 `json:"value"`
	Unit  string  `json:"unit"` // "x" for a ratio; "%", "ms", "KB" or "" for a figure
	Goal  float64 `json:"goal"`
	// AtMost says Value must be at most Goal; otherwise at least. Under,
	// with AtMost, says it must be below Goal, not equal to it.
	AtMost bool `json:"at_most,omitempty"`
	Under  bool `json:"under,omitempty"`
	Meets  bool `json:"meets"`
	// Missing says why the figure could not be computed.
	Missing string `json:"missing,omitempty"`
	// Note qualifies the figure, such as a server that was not pinned.
	Note string `json:"note,omitempty"`
}

// Of the open model, the thresholds both the goals and the sweep hold
// hload to: sent within sentOffPlanPct of the plan, start lateness p99
// under latenessP99Ms.
const (
	sentOffPlanPct = 0.5
	latenessP99Ms  = 2.0
)

// goalSet is the medians of the tools that succeeded in at least one
// round, and the tools that failed in every round, from which the goals
// are computed.
type goalSet struct {
	by     map[string]result
	failed map[string]bool
}

// without says why a goal has no figure of tool.
func (g goalSet) without(tool string) string {
	if g.failed[tool] {
		return tool + " failed in every round"
	}
	return tool + " was not run"
}

func judge(r ratio) ratio {
	switch {
	case r.AtMost && r.Under:
		r.Meets = r.Value < r.Goal
	case r.AtMost:
		r.Meets = r.Value <= r.Goal
	default:
		r.Meets = r.Value >= r.Goal
	}
	return r
}

// of is a's figure over b's.
func (g goalSet) of(c, what string, goal float64, atMost bool, a, b string, f func(result) float64) ratio {
	r := ratio{Case: c, What: what, Unit: "x", Goal: goal, AtMost: atMost}
	ra, okA := g.by[a]
	rb, okB := g.by[b]
	switch {
	case !okA:
		r.Missing = g.without(a)
	case !okB:
		r.Missing = g.without(b)
	case f(rb) <= 0:
		r.Missing = b + "'s figure is zero"
	default:
		r.Value = f(ra) / f(rb)
		r = judge(r)
	}
	return r
}

// figure is one of a's figures, which must be at most goal; f returns
// why there is none when a's result does not hold it.
func (g goalSet) figure(c, what, unit string, goal float64, a string, f func(result) (float64, string)) ratio {
	r := ratio{Case: c, What: what, Unit: unit, Goal: goal, AtMost: true}
	ra, okA := g.by[a]
	if !okA {
		r.Missing = g.without(a)
		return r
	}
	v, missing := f(ra)
	if missing != "" {
		r.Missing = missing
		return r
	}
	r.Value = v
	return judge(r)
}

// under is figure, with a value that must be below goal.
func (g goalSet) under(c, what, unit string, goal float64, a string, f func(result) (float64, string)) ratio {
	r := g.figure(c, what, unit, goal, a, f)
	r.Under = true
	if r.Missing == "" {
		r = judge(r)
	}
	return r
}

// offPlanPct is how far the requests sent are from the plan, in % of it,
// from the difference of the counts: requests/planned-1 would put a run
// exactly 0.5 % off a rounding error past the goal.
func offPlanPct(r result) float64 {
	return math.Abs(float64(r.Requests-r.Planned)) * 100 / float64(r.Planned)
}

func cpuPerRequest(r result) float64 { return r.CPUMicrosPerReq }

// ratios computes the goals of docs/performance.md that the medians allow.
func ratios(meds []result, pinned bool) []ratio {
	g := goalSet{by: map[string]result{}, failed: map[string]bool{}}
	for _, m := range meds {
		if m.Error == "" {
			g.by[m.Tool] = m
		} else {
			g.failed[m.Tool] = true
		}
	}
	perCPU := func(r result) float64 { return r.RequestsPerCPUSec }
	rps := func(r result) float64 { return r.RPS }
	out := []ratio{
		g.of("get", "hload requests per CPU-second vs vegeta", 2, false, "hload", "vegeta", perCPU),
		g.of("get", "hload requests per CPU-second vs wrk", 0.8, false, "hload", "wrk", perCPU),
		g.of("get", "hload requests/s vs wrk, against a 1-core server", 0.95, false, "hload", "wrk", rps),
		g.of("get", "hload isolated vs in-process requests/s", 0.8, false, "hload-isolated", "hload", rps),
		// A flow of constant steps must cost no more CPU per request than
		// the same requests as separate iterations; 0.95 leaves room for
		// the noise of one run on a shared machine.
		g.of("get", "hload 3-step flow vs single requests, requests per CPU-second", 0.95, false, "hload-flow", "hload", perCPU),
		g.of("post", "hload CPU per request, constant POST vs GET", 1.3, true, "hload-post", "hload", cpuPerRequest),
		g.of("post-dynamic", "hload CPU per request, dynamic POST vs constant POST", 1.3, true, "hload-post-dynamic", "hload-post", cpuPerRequest),
	}
	if !pinned {
		out[2].Note = "the server was not pinned to one core"
	}
	for _, rate := range openRates {
		out = append(out, g.openGoals(rate)...)
	}
	out = append(out, g.idleSlope(),
		g.of("plugin", "hload dynamic POST isolated vs in-process requests/s", 0.8, false, "hload-post-dynamic-isolated", "hload-post-dynamic", rps),
		// One VU: the time per call is 1 / requests/s, so the unchecked
		// run's rate over the checked one's is the checked call's time
		// over the unchecked one's.
		g.of("big-body", "hload time per call of a 200 MB body, body_contains vs unchecked", 1.3, true, "hload-big-body", "hload-big-body-checked", rps),
		g.figure("big-body", "hload peak RSS, body_contains on 200 MB bodies", "MB", 64, "hload-big-body-checked", func(r result) (float64, string) {
			if r.PeakRSSMB <= 0 {
				return 0, "hload-big-body-checked did not report it"
			}
			return r.PeakRSSMB, ""
		}))
	// Only the goals of the cases that ran.
	ran := map[string]bool{}
	for _, m := range meds {
		ran[m.Case] = true
	}
	kept := out[:0]
	for _, r := range out {
		if ran[r.Case] {
			kept = append(kept, r)
		}
	}
	return kept
}

// openGoals are the goals of hload with its default pool at one rate.
// Its connections are the server's count: a default pool that connected
// every VU up to max_vus (rate x 1 s) would open thousands.
func (g goalSet) openGoals(rate int) []ratio {
	c := fmt.Sprintf("open-%d", rate)
	tool := "hload-" + c
	at := fmt.Sprintf("hload at %d/s: ", rate)
	planned := func(f func(result) float64) func(result) (float64, string) {
		return func(r result) (float64, string) {
			if r.Planned <= 0 {
				return 0, tool + " has no plan"
			}
			return f(r), ""
		}
	}
	return []ratio{
		g.figure(c, at+"sent off the plan", "%", sentOffPlanPct, tool, planned(offPlanPct)),
		g.figure(c, at+"dropped iterations, of the plan", "%", 0.1, tool, planned(func(r result) float64 {
			return float64(r.Dropped) * 100 / float64(r.Planned)
		})),
		g.under(c, at+"start lateness p99", "ms", latenessP99Ms, tool, func(r result) (float64, string) {
			if r.LatenessP99Ms == nil {
				return 0, tool + " did not report it"
			}
			return *r.LatenessP99Ms, ""
		}),
		g.under(c, at+"connections the server accepted", "", 500, tool, func(r result) (float64, string) {
			if r.ServerConnections < 0 {
				return 0, "the server's count was not read"
			}
			return float64(r.ServerConnections), ""
		}),
		g.of(c, fmt.Sprintf("hload CPU per request, open at %d/s vs closed GET", rate), 1.7, true, tool, "hload", cpuPerRequest),
		// What any Go client spends at this rate on this machine, in the
		// same round: what is above it is hload's own.
		g.of(c, fmt.Sprintf("hload CPU per request vs the floor's, open at %d/s", rate), 1.3, true, tool, "floor-"+c, cpuPerRequest),
	}
}

// idleSlope is the peak RSS one more waiting VU costs: the slope between
// the idle-VU case's two runs, so that what hload costs with no VU at all
// does not count.
func (g goalSet) idleSlope() ratio {
	r := ratio{Case: "idle-vus", Unit: "KB", Goal: 20, AtMost: true,
		What: fmt.Sprintf("hload peak RSS per added VU, %d to %d VUs", idleVUs[0], idleVUs[1])}
	lo, okLo := g.by[fmt.Sprintf("hload-idle-%d", idleVUs[0])]
	hi, okHi := g.by[fmt.Sprintf("hload-idle-%d", idleVUs[1])]
	switch {
	case !okLo:
		r.Missing = g.without(fmt.Sprintf("hload-idle-%d", idleVUs[0]))
	case !okHi:
		r.Missing = g.without(fmt.Sprintf("hload-idle-%d", idleVUs[1]))
	default:
		r.Value = (hi.PeakRSSMB - lo.PeakRSSMB) * 1024 / float64(idleVUs[1]-idleVUs[0])
		r.Meets = r.Value <= r.Goal
	}
	return r
}

// printResults prints the results under a title, a table per case.
func printResults(w io.Writer, title string, rs []result) {
	var order []string
	byCase := map[string][]result{}
	for _, r := range rs {
		if _, seen := byCase[r.Case]; !seen {
			order = append(order, r.Case)
		}
		byCase[r.Case] = append(byCase[r.Case], r)
	}
	for _, c := range order {
		printCase(w, title+", case "+c, byCase[c])
	}
}

// printCase prints one case's table; the open-model columns only when a
// tool of the case has a plan, the VUs only in the idle-VU case.
func printCase(w io.Writer, title string, rs []result) {
	open, idle := false, false
	for _, r := range rs {
		open = open || r.Planned > 0
		idle = idle || r.VUs > 0
	}
	fmt.Fprintf(w, "\n%s\n", title)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := "tool\trequests\trequests/s\tCPU s\tCPU us/request\trequests/CPU-s\tpeak RSS MB\tserver CPU s\tserver count\t"
	if open {
		head += "planned\tdropped\tlateness p99 ms\tconns\tserver stall ms\t"
	}
	if idle {
		head += "VUs\t"
	}
	fmt.Fprintln(tw, head)
	for _, r := range rs {
		if r.Error != "" {
			tw.Flush()
			fmt.Fprintf(w, "%s failed: %s\n", r.Tool, oneLine(r.Error))
			continue
		}
		server := "?"
		if r.ServerCPUSeconds >= 0 {
			server = fmt.Sprintf("%.2f", r.ServerCPUSeconds)
		}
		row := fmt.Sprintf("%s\t%s\t%s\t%.2f\t%.1f\t%s\t%.1f\t%s\t%s\t", r.Tool, thousands(float64(r.Requests)), thousands(r.RPS), r.CPUSeconds,
			r.CPUMicrosPerReq, thousands(r.RequestsPerCPUSec), r.PeakRSSMB, server, count(r.ServerRequests))
		if open {
			late := "-"
			if r.LatenessP99Ms != nil {
				late = fmt.Sprintf("%.2f", *r.LatenessP99Ms)
			}
			planned := "-"
			if r.Planned > 0 {
				planned = thousands(float64(r.Planned))
			}
			stall := "-"
			if r.ServerStallMs != nil {
				stall = fmt.Sprintf("%.1f", *r.ServerStallMs)
			}
			row += fmt.Sprintf("%s\t%d\t%s\t%s\t%s\t", planned, r.Dropped, late, count(r.ServerConnections), stall)
		}
		if idle {
			row += strconv.Itoa(r.VUs) + "\t"
		}
		fmt.Fprintln(tw, row)
	}
	tw.Flush()
	for _, r := range rs {
		if r.Saturated != "" {
			// Whole: the reason is the figures that made the verdict.
			fmt.Fprintf(w, "%s said it was the bottleneck (generator.saturated), %s\n", r.Tool, strings.Join(strings.Fields(r.Saturated), " "))
		}
	}
}

// printRatios prints each goal with its figure and whether it meets it,
// under its case.
func printRatios(w io.Writer, rs []ratio) {
	fmt.Fprintln(w, "\ngoals (docs/performance.md), from the medians")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, r := range rs {
		cmp := ">="
		if r.AtMost {
			cmp = "<="
		}
		if r.AtMost && r.Under {
			cmp = "<"
		}
		goal := fmt.Sprintf("goal %s %s", cmp, withUnit(r.Goal, r.Unit))
		if r.Missing != "" {
			fmt.Fprintf(tw, "%s\t%s\tn/a\t%s\t%s\n", r.Case, r.What, goal, r.Missing)
			continue
		}
		verdict := "below"
		if r.Meets {
			verdict = "meets"
		}
		if r.Note != "" {
			verdict += " (" + r.Note + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.Case, r.What, withUnit(r.Value, r.Unit), goal, verdict)
	}
	tw.Flush()
}

// withUnit formats a goal's figure in its unit.
func withUnit(v float64, unit string) string {
	switch unit {
	case "x":
		return fmt.Sprintf("%.2fx", v)
	case "":
		return strconv.FormatFloat(v, 'f', -1, 64)
	default:
		return fmt.Sprintf("%.2f %s", v, unit)
	}
}

// count formats one of the server's counts, "?" when it is unknown.
func count(n int64) string {
	if n < 0 {
		return "?"
	}
	return thousands(float64(n))
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
