package console

import (
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/hload/hload/metrics"
)

// capacityProgress renders where each capacity search stands, such as
// "  search step 3/7 156.25 iterations/s"; "" without one.
func capacityProgress(steps map[string]metrics.CapacityProgress) string {
	var b strings.Builder
	for _, name := range slices.Sorted(maps.Keys(steps)) {
		c := steps[name]
		if c.Step == 0 {
			continue
		}
		b.WriteString("  " + name + " step " + strconv.Itoa(c.Step) + "/" + strconv.Itoa(c.Steps) + " " +
			strconv.FormatFloat(c.Load, 'f', -1, 64) + " " + c.Unit)
	}
	return b.String()
}

// capacity prints a capacity search's curve, one line per step with the
// saturation point marked, and why the search stopped.
func (p *printer) capacity(c *metrics.CapacitySummary) {
	if c == nil {
		return
	}
	p.printf("  capacity search (%s):\n", c.Unit)
	tw := tabwriter.NewWriter(&p.buf, 0, 0, 2, ' ', tabwriter.AlignRight)
	// The mark follows the last tab, outside the aligned columns, so that
	// the lines without one end without padding.
	row := func(mark string, s ...string) {
		for _, x := range s {
			io.WriteString(tw, x)
			io.WriteString(tw, "\t")
		}
		io.WriteString(tw, mark+"\n")
	}
	row("", "    step", "load", "rps", "ok rps", "err%", "p50", "p95", "p99")
	for i, s := range c.Steps {
		mark := ""
		if i+1 == c.Saturation.Step {
			mark = "  <- saturation point"
		}
		row(mark, "    "+strconv.Itoa(i+1), strconv.FormatFloat(s.Load, 'f', -1, 64),
			strconv.FormatFloat(s.RPS, 'f', 1, 64), strconv.FormatFloat(s.OKRPS, 'f', 1, 64),
			formatPercent(100*s.ErrorRate), formatMs(s.P50), formatMs(s.P95), formatMs(s.P99))
	}
	tw.Flush()
	sat := c.Saturation
	if sat.Step > 0 {
		p.printf("  saturation point: step %d, %s %s, %s successful calls/s, p95 %sms\n", sat.Step,
			strconv.FormatFloat(sat.Load, 'f', -1, 64), c.Unit, strconv.FormatFloat(sat.OKRPS, 'f', 1, 64), formatMs(sat.P95))
	} else {
		p.printf("  saturation point: none, no step held\n")
	}
	p.printf("  stopped (%s): %s\n", sat.Reason, sat.Detail)
}
