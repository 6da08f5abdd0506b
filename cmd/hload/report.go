package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/hload/hload/metrics"
	"github.com/hload/hload/sinks/html"
)

// cmdReport renders the HTML report of a summary export:
// hload report RESULT.json -o report.html.
func cmdReport(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet(reportHelp, stdout, stderr)
	var out string
	fs.StringVar(&out, "o", "report.html", "write the report to this `file`")
	files, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(files) != 1 {
		return fs.usageError("report takes one summary export, not %d file(s)", len(files))
	}
	data, err := os.ReadFile(files[0])
	if err != nil {
		return &exitError{code: exitUsage, err: err}
	}
	var sum metrics.Summary
	if err := json.Unmarshal(data, &sum); err != nil {
		return &exitError{code: exitUsage, err: fmt.Errorf("%s: not a summary export (hload apply --summary-export): %w", files[0], err)}
	}
	if sum.RunID == "" && sum.Scenarios == nil {
		return &exitError{code: exitUsage, err: fmt.Errorf("%s: not a summary export (hload apply --summary-export): it has no run_id and no scenarios", files[0])}
	}
	sum.Mergeable = nil // for hload merge; the page draws from the figures
	var buf bytes.Buffer
	if err := html.Render(&buf, &sum); err != nil {
		return err
	}
	if err := os.WriteFile(out, buf.Bytes(), 0o644); err != nil {
		return err
	}
	if sum.Series == nil {
		fmt.Fprintf(stderr, "hload: %s has no series (an export of an older hload): the report has its tables but no charts\n", files[0])
	}
	fmt.Fprintf(stdout, "%s: report written\n", out)
	return nil
}
