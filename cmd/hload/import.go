package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/hload/hload/internal/outfile"
)

const importUsage = `hload import writes a test file from real traffic.

Usage:
  hload import har [flags] FILE.har           a browser's recording (DevTools: Save all as HAR)
  hload import access-log [flags] FILE...     nginx's or Apache's access log, or JSON lines

Run 'hload import COMMAND -h' for a command's help and flags.
`

func cmdImport(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, importUsage)
		return &exitError{code: exitUsage}
	}
	switch args[0] {
	case "har":
		return cmdImportHAR(args[1:], stdout, stderr)
	case "access-log":
		return cmdImportAccessLog(args[1:], stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, importUsage)
		return nil
	}
	fmt.Fprintf(stderr, "hload: unknown import command %q\n\n%s", args[0], importUsage)
	return &exitError{code: exitUsage}
}

// writeImported checks src, a test an importer wrote, with the code that
// `hload validate` runs, and writes it to out ("-" or "": stdout), whole
// or not at all. A file that does not validate is the importer's bug: it
// is exit 1, its diagnostics on stderr, and nothing is written. vars are
// the --var values the check uses for the file's variables without a
// default (none, for a file that sets a default for each).
func writeImported(src []byte, out string, vars map[string]string, stdout, stderr io.Writer) error {
	return writeImportedWith(src, nil, out, vars, stdout, stderr)
}

// writeImportedWith is writeImported for a test that reads files of its
// own (a data feeder's CSV), given by name relative to the test's folder:
// the check sees them beside the test, and they are written beside out
// before it, or nothing is. out must then be a file.
func writeImportedWith(src []byte, files map[string][]byte, out string, vars map[string]string, stdout, stderr io.Writer) error {
	dir, err := os.MkdirTemp("", "hload-import-")
	if err != nil {
		return &exitError{code: exitRuntime, err: err}
	}
	defer os.RemoveAll(dir)
	check := filepath.Join(dir, "imported.hcl")
	if err := os.WriteFile(check, src, 0o644); err != nil {
		return &exitError{code: exitRuntime, err: err}
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return &exitError{code: exitRuntime, err: err}
		}
	}
	fs := newFlagSet(validateHelp, stdout, stderr)
	var common commonFlags
	common.register(fs)
	for k, v := range vars {
		common.vars[k] = v
	}
	plugins := newPluginHost(context.Background())
	defer plugins.killAll()
	if _, err := loadTest([]string{check}, &common, validateOnly, plugins, stderr, runsNothing); err != nil {
		return &exitError{code: exitRuntime, err: fmt.Errorf("the imported test does not validate, which is a bug in hload import; nothing was written: %w", err)}
	}
	if out == "" || out == "-" {
		if len(files) > 0 {
			return &exitError{code: exitRuntime, err: fmt.Errorf("hload import: a test with files of its own needs -o FILE")}
		}
		_, err := stdout.Write(src)
		return err
	}
	var written []string
	for name, data := range files {
		path := filepath.Join(filepath.Dir(out), name)
		if err := outfile.Write(path, data); err != nil {
			for _, w := range written {
				os.Remove(w)
			}
			return &exitError{code: exitRuntime, err: fmt.Errorf("writing %s: %w", path, err)}
		}
		written = append(written, path)
	}
	if err := outfile.Write(out, src); err != nil {
		for _, w := range written {
			os.Remove(w)
		}
		return &exitError{code: exitRuntime, err: fmt.Errorf("writing %s: %w", out, err)}
	}
	return nil
}
