package main

import (
	"bytes"
	"fmt"
	"io"
	"os"

	"github.com/hload/hload/merge"
	"github.com/hload/hload/sinks/console"
	"github.com/hload/hload/sinks/html"
)

// cmdMerge folds the summary exports of a run's segments into one:
// hload merge A.json B.json ... [--summary-export FILE] [--html FILE].
// "-" reads results from standard input, as kubectl logs prints them.
func cmdMerge(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlagSet(mergeHelp, stdout, stderr)
	var summaryExport, htmlOut string
	var noColor bool
	fs.StringVar(&summaryExport, "summary-export", "", "write the merged summary JSON to this `file`")
	fs.StringVar(&htmlOut, "html", "", "write the merged HTML report to this `file`")
	fs.BoolVar(&noColor, "no-color", false, "print without colours")
	files, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return fs.usageError("no result given")
	}
	var inputs []merge.Input
	for _, name := range files {
		if name == "-" {
			in, err := merge.ReadStream("standard input", stdin)
			if err != nil {
				return &exitError{code: exitUsage, err: err}
			}
			inputs = append(inputs, in...)
			continue
		}
		data, err := os.ReadFile(name)
		if err != nil {
			return &exitError{code: exitUsage, err: err}
		}
		in, err := merge.ReadPath(name, data)
		if err != nil {
			return &exitError{code: exitUsage, err: err}
		}
		inputs = append(inputs, in...)
	}
	sum, err := merge.Merge(inputs)
	if err != nil {
		return &exitError{code: exitUsage, err: fmt.Errorf("merge: %w", err)}
	}
	if err := console.WriteSummary(stdout, *sum, !colours(stdout, noColor, os.Getenv)); err != nil {
		return err
	}
	if summaryExport != "" {
		if err := writeJSON(summaryExport, sum); err != nil {
			return fmt.Errorf("--summary-export: %w", err)
		}
	}
	if htmlOut != "" {
		var buf bytes.Buffer
		if err := html.Render(&buf, sum); err != nil {
			return fmt.Errorf("--html: %w", err)
		}
		if err := os.WriteFile(htmlOut, buf.Bytes(), 0o644); err != nil {
			return fmt.Errorf("--html: %w", err)
		}
	}
	// As hload apply would have exited: an interrupted segment (a pod
	// evicted, a process stopped) makes the merged run interrupted, whose
	// figures hold less than the planned load, whatever its thresholds say.
	switch {
	case sum.Interrupted:
		return &exitError{code: exitInterrupted}
	case !sum.Passed:
		return &exitError{code: exitThreshold}
	}
	return nil
}
