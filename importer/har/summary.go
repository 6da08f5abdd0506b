package har

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// WriteSummary prints what Import inferred: the steps kept and left out,
// the captures found and the values moved to variables, for the person
// who reads the file next.
func (r *Result) WriteSummary(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "%d of %d requests kept, in the order recorded:\n", len(r.Steps), r.Entries)
	for _, s := range r.Steps {
		where := "flow"
		if s.Setup {
			where = "setup"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s %s\t%d\tentry %d, line %d\n", where, s.Name, s.Method, s.Path, s.Status, s.Entry, s.Line)
	}
	if len(r.Skipped) > 0 {
		fmt.Fprintf(tw, "%d left out:\n", len(r.Skipped))
		for _, s := range r.Skipped {
			fmt.Fprintf(tw, "  entry %d, line %d\t%s %s\t%s\n", s.Entry, s.Line, s.Method, s.URL, s.Reason)
		}
	}
	fmt.Fprintf(tw, "%d captures:\n", len(r.Captures))
	for _, c := range r.Captures {
		fmt.Fprintf(tw, "  vu.vars.%s\t%s of %s\tsent in %s\n", c.Name, c.Expr, c.Step, strings.Join(c.SentIn, ", "))
	}
	var plain, secret []string
	for _, v := range r.Variables {
		if v.Sensitive {
			secret = append(secret, fmt.Sprintf("  var.%s\t%s\n", v.Name, v.From))
		} else {
			plain = append(plain, fmt.Sprintf("%s = %s", v.Name, v.Default))
		}
	}
	fmt.Fprintf(tw, "variables: %s\n", strings.Join(plain, ", "))
	if len(secret) > 0 {
		fmt.Fprintf(tw, "%d values typed into the recording moved to sensitive variables, with no default (pass each with --var NAME=... or HLOAD_VAR_NAME):\n", len(secret))
		for _, s := range secret {
			fmt.Fprint(tw, s)
		}
	}
	return tw.Flush()
}
