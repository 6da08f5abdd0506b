package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/hload/hload/importer/accesslog"
)

// cmdImportAccessLog is `hload import access-log`: it reads the logs,
// prints the mix it inferred, and writes the test (importer/accesslog
// does the inference).
func cmdImportAccessLog(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet(importAccessLogHelp, stdout, stderr)
	format := fs.String("format", "", "the logs' `format`: combined (nginx's and Apache's) or json (JSON lines); default: from each file's first line")
	out := fs.String("o", "-", "write the test to `file` (- is standard output)")
	minShare := fs.Float64("min-share", 1, "fold a template of less than this `percent` of the requests into its nearest, or leave it out")
	scale := fs.Float64("scale", 1, "multiply the log's rates by this `factor`")
	peak := fs.Bool("peak", false, "a constant-arrival-rate at the busiest minute's rate, instead of the log's rate over time")
	feeder := fs.Bool("feeder", false, "replay the ids seen from a CSV feeder per request, written beside the -o file, instead of random draws")
	files, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	f := accesslog.Format(*format)
	if f != accesslog.FormatAuto && f != accesslog.FormatCombined && f != accesslog.FormatJSON {
		return fs.usageError("--format must be combined or json, not %q", *format)
	}
	if *minShare < 0 || *minShare >= 100 {
		return fs.usageError("--min-share is a percent from 0 to under 100, not %g", *minShare)
	}
	if *scale <= 0 {
		return fs.usageError("--scale must be above 0, not %g", *scale)
	}
	if len(files) == 0 {
		return fs.usageError("which log? give at least one file")
	}
	if *feeder && (*out == "-" || *out == "") {
		return fs.usageError("--feeder writes CSV files beside the test: give -o FILE")
	}

	opts := accesslog.Options{Files: files, MinShare: *minShare / 100, Scale: *scale, Peak: *peak}
	var entries []accesslog.Entry
	seen := map[accesslog.Format]bool{}
	for _, name := range files {
		log, err := readAccessLog(name, f)
		if err != nil {
			return &exitError{code: exitUsage, err: err}
		}
		entries = append(entries, log.Entries...)
		opts.Skipped += log.Skipped
		if !seen[log.Format] {
			seen[log.Format] = true
			if opts.Format != "" {
				opts.Format += " and "
			}
			opts.Format += log.Format
		}
	}
	if *feeder {
		opts.FeederPrefix = strings.TrimSuffix(filepath.Base(*out), filepath.Ext(*out))
	}
	result, err := accesslog.Infer(entries, opts)
	if err != nil {
		return &exitError{code: exitUsage, err: err}
	}
	// The table goes where the test does not.
	table := stdout
	if *out == "-" || *out == "" {
		table = stderr
	}
	result.WriteTable(table)
	if err := writeImportedWith(result.HCL(), result.Feeders, *out, nil, stdout, stderr); err != nil {
		return err
	}
	if *out != "-" && *out != "" {
		fmt.Fprintf(table, "wrote %s: %d requests from %d logged\n", *out, len(result.Templates), result.Total)
	}
	return nil
}

func readAccessLog(name string, f accesslog.Format) (*accesslog.Log, error) {
	file, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	return accesslog.Parse(file, name, f)
}
