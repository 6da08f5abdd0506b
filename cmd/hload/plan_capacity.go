package main

import (
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/hload/hload/core"
)

// printCapacityPlan prints the steps a capacity search may take and the
// rules that stop it.
func printCapacityPlan(w io.Writer, p core.ScenarioPlan) {
	c := p.Capacity
	if p.Model == "open" {
		printPool(w, p)
	}
	fmt.Fprintf(w, "  steps        up to %d of %s each; the search stops at the first that does not hold:\n", len(c.Steps), c.StepDuration)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	for i, load := range c.Steps {
		fmt.Fprintf(tw, "    step %d\tfrom %s\t%s %s\t\n", i+1, (time.Duration(i) * c.StepDuration).Round(time.Millisecond),
			strconv.FormatFloat(load, 'f', -1, 64), c.Unit)
	}
	tw.Flush()
	fmt.Fprintf(w, "  saturation   a step whose successful calls/s grew by less than %g %% of its load's gain while its p95 grew\n", c.MinGain)
	if c.MaxErrorRate > 0 {
		fmt.Fprintf(w, "  stops        at an error rate above %g %%\n", c.MaxErrorRate*100)
	}
	if c.MaxP95 > 0 {
		fmt.Fprintf(w, "  stops        at a p95 above %s\n", c.MaxP95)
	}
}
