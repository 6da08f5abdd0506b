package compare

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/hload/hload/metrics"
)

// WriteText prints the comparison as the terminal shows it: each run's
// header, then per request a table of its figures with base, new, the
// change in percent and whether it is better or worse.
func (c *Comparison) WriteText(w io.Writer) error {
	ew := &errWriter{w: w}
	for _, side := range []struct {
		label string
		run   Run
	}{{"base", c.Base}, {"new ", c.New}} {
		s := side.run.Summary
		ew.printf("%s  %s: run %s, started %s, %.1f s, hload %s, %s\n", side.label, side.run.Path,
			s.RunID, s.Started.UTC().Format(time.RFC3339), s.DurationS, s.HloadVersion, VerdictOf(s))
	}
	for _, side := range []struct {
		label string
		run   Run
	}{{"base", c.Base}, {"new", c.New}} {
		if g := side.run.Summary.Generator; g != nil && g.Saturated {
			// A saturated generator measured itself as much as the
			// server, so a change between the runs may be hload's own.
			ew.printf("warning: in the %s run hload itself was saturated, so its figures measured hload as much as the server: %s\n", side.label, g.Reason)
		}
	}
	if len(c.Requests) == 0 {
		ew.printf("\nneither run has a request\n")
	}
	for _, r := range c.Requests {
		ew.printf("\nscenario %q, request %q%s\n", r.Scenario, r.Request, presence(r))
		rows := [][]string{{"figure", "base", "new", "change", ""}}
		for _, f := range Figures {
			cells := r.Cells(f)
			rows = append(rows, append([]string{f.String()}, cells[:]...))
		}
		writeTable(ew, rows)
	}
	for _, cp := range c.Capacities() {
		ew.printf("\ncapacity search %q: saturation points\n", cp.Scenario)
		ew.printf("  base  %s\n  new   %s\n", Point(cp.Base), Point(cp.New))
		rows := [][]string{{"figure", "base", "new", "change", ""}}
		for i := range cp.Changes {
			cells := cp.Cells(i)
			rows = append(rows, append([]string{cp.Changes[i].Figure.String()}, cells[:]...))
		}
		writeTable(ew, rows)
	}
	return ew.err
}

// Cells are a figure's cells in the comparison's table, as the text and
// the HTML page show them: base, new, the change in percent and the
// verdict ("better", "worse" or ""). A run that lacks the request has
// "-", and there is no change.
func (r Request) Cells(f Figure) [4]string {
	switch {
	case r.Changes != nil:
		ch := r.Changes[f]
		return [4]string{Format(f, ch.Base), Format(f, ch.New), FormatPercent(ch.Percent), verdictText(ch.Verdict)}
	case r.Base != nil:
		return [4]string{Format(f, f.Of(r.Base)), "-", "", ""}
	}
	return [4]string{"-", Format(f, f.Of(r.New)), "", ""}
}

// Presence says when only one run has the request: "only in the base
// run", "only in the new run", or "".
func (r Request) Presence() string { return strings.TrimPrefix(presence(r), ": ") }

// writeTable prints rows indented, the first column (the figure's name)
// aligned left, the numbers right, and the last (the verdict) as it is.
func writeTable(w io.Writer, rows [][]string) {
	widths := make([]int, len(rows[0]))
	for _, row := range rows {
		for i, cell := range row {
			widths[i] = max(widths[i], utf8.RuneCountInString(cell))
		}
	}
	for _, row := range rows {
		line := "  " + pad(row[0], widths[0], false)
		for i := 1; i < len(row)-1; i++ {
			line += "  " + pad(row[i], widths[i], true)
		}
		if v := row[len(row)-1]; v != "" {
			line += "  " + v
		}
		fmt.Fprintln(w, strings.TrimRight(line, " "))
	}
}

// pad pads s with spaces to width, on the left when right is true.
func pad(s string, width int, right bool) string {
	fill := strings.Repeat(" ", width-utf8.RuneCountInString(s))
	if right {
		return fill + s
	}
	return s + fill
}

// VerdictOf names a run's verdict for its header line: "passed", "did not
// pass" or "interrupted".
func VerdictOf(s *metrics.Summary) string {
	switch {
	case s.Interrupted:
		return "interrupted"
	case s.Passed:
		return "passed"
	}
	return "did not pass"
}

// presence says when only one run has a request.
func presence(r Request) string {
	switch {
	case r.New == nil:
		return ": only in the base run"
	case r.Base == nil:
		return ": only in the new run"
	}
	return ""
}

// verdictText leaves a change that is neither better nor worse unmarked.
func verdictText(v Verdict) string {
	if v == Neutral || v == Same {
		return ""
	}
	return v.String()
}

// Format renders a figure's value with its unit, as the table shows it.
func Format(f Figure, v float64) string {
	switch f {
	case Count:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case RPS:
		return strconv.FormatFloat(v, 'f', 1, 64) + "/s"
	case ErrorRate:
		return strconv.FormatFloat(v*100, 'f', 2, 64) + " %"
	}
	return FormatMillis(v)
}

// FormatMillis renders milliseconds with three significant digits or
// more, so that a sub-millisecond latency does not read as 0.
func FormatMillis(ms float64) string {
	prec := 1
	switch a := math.Abs(ms); {
	case a < 10:
		prec = 3
	case a < 100:
		prec = 2
	}
	return strconv.FormatFloat(ms, 'f', prec, 64) + " ms"
}

// FormatPercent renders a change in percent with its sign; a change from
// 0 is "+inf %".
func FormatPercent(p float64) string {
	switch {
	case math.IsInf(p, 1):
		return "+inf %"
	case math.IsInf(p, -1):
		return "-inf %"
	case p == 0:
		return "0.0 %"
	case p > 0:
		return "+" + strconv.FormatFloat(p, 'f', 1, 64) + " %"
	}
	return strconv.FormatFloat(p, 'f', 1, 64) + " %"
}

// errWriter keeps the first write error, so that printing checks it once.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	e.err = err
	return n, err
}

func (e *errWriter) printf(format string, args ...any) { fmt.Fprintf(e, format, args...) }
