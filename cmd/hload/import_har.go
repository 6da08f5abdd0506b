package main

import (
	"fmt"
	"io"
	"os"

	"github.com/hload/hload/importer/har"
)

// cmdImportHAR is `hload import har`: parse, infer, print what was
// inferred, and write the test whole or not at all.
func cmdImportHAR(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet(importHARHelp, stdout, stderr)
	var out string
	var includeStatic bool
	fs.StringVar(&out, "o", "", "write the test to this `file` (default: standard output)")
	fs.BoolVar(&includeStatic, "include-static", false, "keep images, scripts, styles, fonts and media")
	files, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(files) != 1 {
		return fs.usageError("import har takes one HAR file, not %d", len(files))
	}
	data, err := os.ReadFile(files[0])
	if err != nil {
		return &exitError{code: exitUsage, err: err}
	}
	h, err := har.Parse(files[0], data)
	if err != nil {
		return &exitError{code: exitUsage, err: err}
	}
	res, err := har.Import(h, har.Options{IncludeStatic: includeStatic})
	if err != nil {
		return &exitError{code: exitUsage, err: err}
	}
	// The test goes to stdout when no -o is given: what is said about it
	// then goes to stderr.
	report := stdout
	if out == "" || out == "-" {
		report = stderr
	}
	// validate needs a value for each secret, which the file never holds.
	vars := map[string]string{}
	for _, v := range res.Variables {
		if v.Sensitive {
			vars[v.Name] = "placeholder"
		}
	}
	if err := writeImported(res.HCL, out, vars, stdout, stderr); err != nil {
		return err
	}
	if err := res.WriteSummary(report); err != nil {
		return err
	}
	if out != "" && out != "-" {
		fmt.Fprintf(report, "wrote %s; hload validate passes on it\n", out)
	}
	return nil
}
