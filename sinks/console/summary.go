package console

import (
	"bytes"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/hload/hload/metrics"
)

// ANSI colours for the verdicts only: the tables stay plain so that they
// paste cleanly into a write-up.
const (
	ansiGreen = "\x1b[32m"
	ansiRed   = "\x1b[31m"
	ansiReset = "\x1b[0m"
)

// WriteSummary prints the final summary of a run: per scenario its model
// and a table of per-request figures, then errors, status codes, checks,
// protocol metrics, thresholds and a verdict line. The CLI uses it to print
// a summary without a sink; Sink.Close uses it too.
func WriteSummary(w io.Writer, sum metrics.Summary, noColor bool) error {
	p := &printer{noColor: noColor}
	p.run(&sum)
	for _, name := range slices.Sorted(maps.Keys(sum.Scenarios)) {
		p.scenario(name, sum.Scenarios[name], sum.DurationS)
	}
	p.metrics(sum.Metrics)
	p.gauges(sum.GaugesMax)
	p.generator(sum.Generator)
	p.warnings(sum.Warnings)
	p.sinkErrors(sum.SinkErrors)
	p.thresholds(sum.Thresholds)
	p.verdict(&sum)
	// One write, so a failing terminal or pipe gives one error.
	_, err := w.Write(p.buf.Bytes())
	return err
}

type printer struct {
	buf     bytes.Buffer
	noColor bool
}

func (p *printer) printf(format string, args ...any) {
	fmt.Fprintf(&p.buf, format, args...)
}

// paint colours a verdict word; both colours add the same number of bytes,
// so columns that hold a painted word stay aligned.
func (p *printer) paint(word string, ok bool) string {
	if p.noColor {
		return word
	}
	if ok {
		return ansiGreen + word + ansiReset
	}
	return ansiRed + word + ansiReset
}

func (p *printer) run(sum *metrics.Summary) {
	p.printf("\nhload")
	if sum.HloadVersion != "" {
		p.printf(" %s", sum.HloadVersion)
	}
	if sum.RunID != "" {
		p.printf(" run %s", sum.RunID)
	}
	if !sum.Started.IsZero() {
		p.printf(", %s", sum.Started.Format(time.RFC3339))
		if !sum.Ended.IsZero() {
			p.printf(" to %s", sum.Ended.Format(time.RFC3339))
		}
	}
	p.printf(", %ss\n", strconv.FormatFloat(sum.DurationS, 'f', 1, 64))
	if sum.Interrupted {
		p.printf("%s: the run was stopped before its planned end; the figures cover the %.1fs it ran.\n",
			p.paint("INTERRUPTED", false), sum.DurationS)
	}
	if sum.Aborted != "" {
		p.printf("%s: threshold %q was crossed and stopped the run early.\n", p.paint("ABORTED", false), sum.Aborted)
	}
	if sum.Failed != "" {
		// Only the first line: the error's details (a plugin's stderr)
		// follow the summary on stderr.
		first, _, _ := strings.Cut(metrics.Printable(sum.Failed), "\n")
		if sum.DurationS == 0 {
			// Nothing ran (a sink could not start): no figures to qualify,
			// and the verdict line says why.
			return
		}
		p.printf("%s: %s; the figures cover the %.1fs before it.\n", p.paint("FAILED", false), first, sum.DurationS)
	}
	if g := sum.Generator; g != nil && g.Saturated {
		// Before any figure: a reader must not take them for the server's.
		p.printf("%s: hload itself was the bottleneck, so the figures measured hload as much as the server; see generator below.\n",
			p.paint("SATURATED", false))
	}
	p.printf("Latencies in ms; KB/s in KiB per second.\n")
}

// generator prints hload's own CPU use over the run on one line, and when
// it was saturated, why, and what to do about it.
func (p *printer) generator(g *metrics.GeneratorFigures) {
	if g == nil {
		return
	}
	cores := "1 core"
	if g.CPUCoresAvailable != 1 {
		cores = fmt.Sprintf("%d cores", g.CPUCoresAvailable)
	}
	p.printf("\ngenerator\n  hload used %s%% of its %s on average, %s%% at most in an interval (%s CPU-seconds)",
		formatPercent(100*g.CPUUtilizationMean), cores, formatPercent(100*g.CPUUtilizationMax),
		strconv.FormatFloat(g.CPUSeconds, 'f', 2, 64))
	if w := g.RunQueueWaitShareMax; w != nil {
		p.printf("; its threads waited for a CPU up to %s%%", formatPercent(100**w))
	}
	p.printf("; saturated in %d of %d intervals\n", g.SaturatedIntervals, g.Intervals)
	if g.Saturated {
		p.printf("  %s: %s.\n", p.paint("SATURATED", false), g.Reason)
		p.printf("  The figures measured hload as much as the server. Give hload more CPU (fewer other processes on its cores, more cores), or spread the load over several machines (--segment), before comparing them.\n")
	}
}

func (p *printer) scenario(name string, sc *metrics.ScenarioSummary, durationS float64) {
	if sc == nil {
		return
	}
	p.printf("\nscenario %s: %s, %s, %d iterations, %d dropped iterations\n",
		name, sc.Executor, modelName(sc.Model), sc.Iterations, sc.DroppedIterations)
	if sc.DroppedIterations > 0 {
		// In an open model a drop is load that was planned and never sent.
		p.printf("  %d planned iterations found no free VU and were not started; raise max_vus or lower the rate.\n",
			sc.DroppedIterations)
	}
	p.capacity(sc.Capacity)
	names := slices.Sorted(maps.Keys(sc.Requests))
	if len(names) == 0 {
		p.printf("  no requests\n")
		p.flows(sc.Flows)
		return
	}
	width := utf8.RuneCountInString("request")
	for _, n := range names {
		width = max(width, utf8.RuneCountInString(n))
	}

	// Numbers align right; the request column is padded by hand so that
	// it reads left-aligned in a right-aligned table.
	tw := tabwriter.NewWriter(&p.buf, 0, 0, 2, ' ', tabwriter.AlignRight)
	cells := func(c ...string) {
		for _, s := range c {
			io.WriteString(tw, s)
			io.WriteString(tw, "\t")
		}
		io.WriteString(tw, "\n")
	}
	cells(pad("  request", width+2), "count", "rps", "err%", "mean", "stdev", "min", "p50", "p90", "p95", "p99", "max", "KB/s in", "KB/s out")
	for _, n := range names {
		r := sc.Requests[n]
		if r == nil {
			continue
		}
		l := r.Latency
		cells(pad("  "+n, width+2),
			strconv.FormatInt(r.Count, 10),
			strconv.FormatFloat(r.RPS, 'f', 1, 64),
			formatPercent(100*r.ErrorRate),
			formatMs(l.Mean), formatMs(l.Stdev), formatMs(l.Min), formatMs(l.P50),
			formatMs(l.P90), formatMs(l.P95), formatMs(l.P99), formatMs(l.Max),
			kibPerSecond(r.BytesReceived, durationS), kibPerSecond(r.BytesSent, durationS))
	}
	tw.Flush()

	reqs := sc.Requests
	p.errors(names, reqs, width)
	p.perRequest("status", names, reqs, width, func(r *metrics.RequestFigures) string {
		return counts(r.Status)
	})
	p.perRequest("checks", names, reqs, width, func(r *metrics.RequestFigures) string {
		c := r.Checks
		if c.Passed+c.Failed == 0 {
			return ""
		}
		// Rounded down, so that a failed check never shows as 100%.
		rate := math.Floor(10000*float64(c.Passed)/float64(c.Passed+c.Failed)) / 100
		return fmt.Sprintf("passed %d  failed %d  (%s%% passed)", c.Passed, c.Failed,
			strconv.FormatFloat(rate, 'f', 2, 64))
	})
	p.flows(sc.Flows)
}

// flows prints a scenario's flows, its setup first: how many ended,
// completed and failed, the duration of the completed ones, and the
// failed ones by the kind of the step that failed them. A scenario with
// neither flows nor setup prints nothing, so its summary reads as before.
func (p *printer) flows(flows map[string]*metrics.FlowFigures) {
	names := slices.DeleteFunc(slices.Sorted(maps.Keys(flows)), func(n string) bool {
		return flows[n] == nil || n == metrics.SetupFlow
	})
	if flows[metrics.SetupFlow] != nil {
		names = slices.Insert(names, 0, metrics.SetupFlow)
	}
	if len(names) == 0 {
		return
	}
	width := utf8.RuneCountInString("flow")
	for _, n := range names {
		width = max(width, utf8.RuneCountInString(n))
	}
	p.printf("\n")
	tw := tabwriter.NewWriter(&p.buf, 0, 0, 2, ' ', tabwriter.AlignRight)
	// The last cell has no tab after it, so tabwriter leaves it out of
	// the right-aligned columns: a list of kinds reads left-aligned.
	row := func(last string, c ...string) {
		for _, s := range c {
			io.WriteString(tw, s)
			io.WriteString(tw, "\t")
		}
		if last != "" {
			io.WriteString(tw, "  "+last)
		}
		io.WriteString(tw, "\n")
	}
	row("failed by kind", pad("  flow", width+2), "ended", "completed", "failed", "fail%", "p50", "p95", "p99", "max")
	for _, n := range names {
		f := flows[n]
		d := f.Duration
		row(counts(f.FailedByKind), pad("  "+n, width+2),
			strconv.FormatInt(f.Count, 10),
			strconv.FormatInt(f.Completed, 10),
			strconv.FormatInt(f.Failed, 10),
			formatPercent(100*f.FailureRate),
			formatMs(d.P50), formatMs(d.P95), formatMs(d.P99), formatMs(d.Max))
	}
	tw.Flush()
}

// perRequest prints a titled list with one line per request whose line is
// not empty, and nothing at all when every line is empty.
func (p *printer) perRequest(title string, names []string, reqs map[string]*metrics.RequestFigures,
	width int, line func(*metrics.RequestFigures) string) {
	titled := false
	for _, n := range names {
		r := reqs[n]
		if r == nil {
			continue
		}
		l := line(r)
		if l == "" {
			continue
		}
		if !titled {
			p.printf("\n  %s\n", title)
			titled = true
		}
		p.printf("    %s  %s\n", pad(n, width), l)
	}
}

// errors prints the errors of each request by kind, each kind followed by
// the first messages the protocol gave for it, so that the reason of a
// failure is on screen, not only its count.
func (p *printer) errors(names []string, reqs map[string]*metrics.RequestFigures, width int) {
	titled := false
	for _, n := range names {
		r := reqs[n]
		if r == nil || len(r.ErrorsByKind) == 0 {
			continue
		}
		line := counts(r.ErrorsByKind)
		if line == "" {
			continue
		}
		if !titled {
			p.printf("\n  errors by kind\n")
			titled = true
		}
		p.printf("    %s  %s\n", pad(n, width), line)
		for _, kind := range slices.Sorted(maps.Keys(r.ErrorMessages)) {
			for _, m := range r.ErrorMessages[kind] {
				p.printf("    %s    %s: %s\n", pad("", width), metrics.Printable(kind), oneLine(m))
			}
		}
	}
}

// oneLine keeps a message on one line of the table, its control
// characters escaped: messages carry the server's words.
func oneLine(m string) string {
	return strings.Join(strings.Fields(metrics.Printable(m)), " ")
}

// metrics prints the protocol metrics other than the request latency, such
// as time to first byte or SSE delivery latency, each with its count and
// its rate per second; a count, such as sse_events, has no time figures.
func (p *printer) metrics(ms map[string]metrics.MetricFigures) {
	if len(ms) == 0 {
		return
	}
	names := slices.Sorted(maps.Keys(ms))
	width := utf8.RuneCountInString("metric")
	for _, n := range names {
		width = max(width, utf8.RuneCountInString(n))
	}
	p.printf("\nmetrics\n")
	tw := tabwriter.NewWriter(&p.buf, 0, 0, 2, ' ', tabwriter.AlignRight)
	row := func(c ...string) {
		for _, s := range c {
			io.WriteString(tw, s)
			io.WriteString(tw, "\t")
		}
		io.WriteString(tw, "\n")
	}
	row(pad("  metric", width+2), "count", "per s", "mean", "min", "p50", "p90", "p95", "p99", "max")
	for _, n := range names {
		m := ms[n]
		cells := []string{pad("  "+n, width+2), strconv.FormatInt(m.Count, 10), strconv.FormatFloat(m.Rate, 'f', 1, 64)}
		if !m.CountOnly() {
			cells = append(cells, formatMs(m.Mean), formatMs(m.Min), formatMs(m.P50), formatMs(m.P90),
				formatMs(m.P95), formatMs(m.P99), formatMs(m.Max))
		}
		row(cells...)
	}
	tw.Flush()
}

// gauges prints the peak of each level a protocol held, such as open SSE
// streams, on one line.
func (p *printer) gauges(peaks map[string]int64) {
	if len(peaks) == 0 {
		return
	}
	p.printf("\npeaks\n ")
	for _, n := range slices.Sorted(maps.Keys(peaks)) {
		p.printf(" %s %d", n, peaks[n])
	}
	p.printf("\n")
}

// warnings prints the problems that did not stop the run, such as
// expressions that failed for some iterations, so they are not missed.
func (p *printer) warnings(ws []string) {
	if len(ws) == 0 {
		return
	}
	p.printf("\nwarnings\n")
	for _, w := range ws {
		// A warning may quote a server's answer.
		p.printf("  - %s\n", metrics.Printable(w))
	}
}

// sinkErrors prints the sinks that failed: results they should hold were
// lost, so the run does not pass.
func (p *printer) sinkErrors(errs []string) {
	if len(errs) == 0 {
		return
	}
	p.printf("\nsink errors\n")
	for _, e := range errs {
		p.printf("  - %s\n", oneLine(e))
	}
}

func (p *printer) thresholds(ts []metrics.ThresholdResult) {
	if len(ts) == 0 {
		return
	}
	p.printf("\nthresholds\n")
	tw := tabwriter.NewWriter(&p.buf, 0, 0, 2, ' ', 0)
	for _, t := range ts {
		word := "PASS"
		if !t.Passed {
			word = "FAIL"
		}
		name := t.Metric
		var filter []string
		if t.Scenario != "" {
			filter = append(filter, "scenario="+t.Scenario)
		}
		if t.Request != "" {
			filter = append(filter, "request="+t.Request)
		}
		if t.Flow != "" {
			filter = append(filter, "flow="+t.Flow)
		}
		if len(filter) > 0 {
			name += "{" + strings.Join(filter, ",") + "}"
		}
		abort := ""
		if t.Abort {
			abort = "\tabort"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\tvalue %s%s\n", p.paint(word, t.Passed), name, t.Condition, formatValue(t), abort)
	}
	tw.Flush()
}

// verdict prints the last line: what the exit code will say, in words.
func (p *printer) verdict(sum *metrics.Summary) {
	failed, total := failedThresholds(sum)
	calls, errs := callTotals(sum)
	p.printf("\n")
	switch {
	case sum.Failed != "":
		p.printf("%s: the run failed: %s\n", p.paint("FAIL", false), strings.SplitN(metrics.Printable(sum.Failed), "\n", 2)[0])
	case len(sum.SinkErrors) > 0:
		p.printf("%s: a sink failed, and the results it holds are incomplete: %s\n",
			p.paint("FAIL", false), oneLine(sum.SinkErrors[0]))
	case sum.Interrupted:
		state := "no threshold failed"
		if failed > 0 {
			state = fmt.Sprintf("%d of %d thresholds failed", failed, total)
		}
		p.printf("%s: the run was stopped early; %s on the part that ran.\n", p.paint("INTERRUPTED", false), state)
	case sum.Aborted != "":
		p.printf("%s: aborted by threshold %q; %d of %d thresholds failed.%s\n", p.paint("FAIL", false), sum.Aborted, failed, total, saturatedNote(sum))
	case !sum.Passed && failed > 0:
		// A latency threshold that failed while hload was saturated may
		// have failed on hload's delays, not the server's.
		p.printf("%s: %d of %d thresholds failed.%s\n", p.paint("FAIL", false), failed, total, saturatedNote(sum))
	case !sum.Passed && calls > 0 && errs == calls:
		p.printf("%s: every one of the %d calls failed; see the errors by kind above.\n", p.paint("FAIL", false), calls)
	case !sum.Passed:
		p.printf("%s: the run failed.\n", p.paint("FAIL", false))
	case total == 0:
		p.printf("%s: the run completed; no thresholds were set.%s\n", p.paint("PASS", true), warned(sum))
	default:
		p.printf("%s: all %d thresholds held.%s\n", p.paint("PASS", true), total, warned(sum))
	}
}

// warned points a PASS at the warnings, so that it is never read alone,
// and says when the figures it rests on measured hload itself.
func warned(sum *metrics.Summary) string {
	s := ""
	if n := len(sum.Warnings); n > 0 {
		s = fmt.Sprintf(" Read the %d warning(s) above.", n)
	}
	return s + saturatedNote(sum)
}

// saturatedNote says, after a verdict, that the figures it rests on
// measured hload itself.
func saturatedNote(sum *metrics.Summary) string {
	if g := sum.Generator; g != nil && g.Saturated {
		return " hload was saturated: the figures measured hload as much as the server."
	}
	return ""
}

// failedThresholds counts the thresholds that failed, of all.
func failedThresholds(sum *metrics.Summary) (failed, total int) {
	for _, t := range sum.Thresholds {
		if !t.Passed {
			failed++
		}
	}
	return failed, len(sum.Thresholds)
}

// callTotals counts the run's calls and failed calls.
func callTotals(sum *metrics.Summary) (calls, errs int64) {
	for _, sc := range sum.Scenarios {
		for _, r := range sc.Requests {
			if r != nil {
				calls += r.Count
				errs += r.Errors
			}
		}
	}
	return calls, errs
}

// pad left-aligns s in width runes.
func pad(s string, width int) string {
	if n := utf8.RuneCountInString(s); n < width {
		return s + strings.Repeat(" ", width-n)
	}
	return s
}

// counts renders a map of counts sorted by key: "200 1190  500 10".
func counts(m map[string]int64) string {
	var b strings.Builder
	for i, k := range slices.Sorted(maps.Keys(m)) {
		if i > 0 {
			b.WriteString("  ")
		}
		b.WriteString(metrics.Printable(k)) // a plugin names its error kinds
		b.WriteByte(' ')
		b.WriteString(strconv.FormatInt(m[k], 10))
	}
	return b.String()
}

// formatMs keeps about three significant digits, down to a microsecond:
// 0.412, 2.55, 23.4, 1610.
func formatMs(v float64) string {
	switch a := math.Abs(v); {
	case a == 0:
		return "0"
	case a < 1:
		return strconv.FormatFloat(v, 'f', 3, 64)
	case a < 10:
		return strconv.FormatFloat(v, 'f', 2, 64)
	case a < 100:
		return strconv.FormatFloat(v, 'f', 1, 64)
	default:
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
}

// formatPercent prints a percentage without hiding a rare error as 0.
func formatPercent(v float64) string {
	switch {
	case v == 0:
		return "0"
	case v < 0.01:
		return "<0.01"
	case v < 10:
		return strconv.FormatFloat(v, 'f', 2, 64)
	default:
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
}

// formatValue prints a threshold's measured value with its unit, read off
// the metric and the condition's aggregation: rates of errors, checks and
// failed flows as percentages, requests per second with /s, counts bare, and every other
// aggregation (percentiles, mean, min, max of a latency or a protocol
// metric) in milliseconds.
func formatValue(t metrics.ThresholdResult) string {
	agg, _, _ := strings.Cut(strings.TrimSpace(t.Condition), " ")
	v := t.Value
	switch {
	case agg == "count":
		return strconv.FormatFloat(v, 'f', -1, 64)
	case t.Metric == metrics.MetricErrors || t.Metric == metrics.MetricChecks || t.Metric == metrics.MetricFlowFailures:
		return strconv.FormatFloat(math.Round(v*1e6)/1e4, 'f', -1, 64) + "%"
	case t.Metric == metrics.MetricRPS:
		return strconv.FormatFloat(math.Round(v*10)/10, 'f', -1, 64) + "/s"
	case math.Abs(v) < 1:
		return strconv.FormatFloat(v, 'g', 4, 64) + "ms"
	}
	return strconv.FormatFloat(math.Round(v*1000)/1000, 'f', -1, 64) + "ms"
}

// kibPerSecond is bytes / duration / 1024, as JMeter's KB/s.
func kibPerSecond(bytes int64, durationS float64) string {
	if durationS <= 0 {
		return "0"
	}
	return strconv.FormatFloat(float64(bytes)/durationS/1024, 'f', 1, 64)
}
