package main

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"

	"github.com/hload/hload/config"
	"github.com/hload/hload/core"
	"github.com/hload/hload/protocols"
	hloadamqp "github.com/hload/hload/protocols/amqp"
	hloadhttp "github.com/hload/hload/protocols/http"
	hloadsse "github.com/hload/hload/protocols/sse"
	"github.com/hload/hload/sinks"
	"github.com/hload/hload/sinks/csv"
	"github.com/hload/hload/sinks/html"
	"github.com/hload/hload/sinks/influxdb"
)

// varFlags collects repeated --var k=v flags.
type varFlags map[string]string

func (v varFlags) String() string { return "" }

func (v varFlags) Set(s string) error {
	k, val, ok := strings.Cut(s, "=")
	if !ok || strings.TrimSpace(k) == "" {
		return fmt.Errorf("want name=value, got %q", s)
	}
	v[strings.TrimSpace(k)] = val
	return nil
}

// commonFlags are the flags every command that loads a test shares.
type commonFlags struct {
	vars    varFlags
	noColor bool
	cmd     *flagSet // the command's, for its usage line
}

func (c *commonFlags) register(fs *flagSet) {
	c.vars = varFlags{}
	c.cmd = fs
	fs.Var(c.vars, "var", "set a variable: `name=value` (repeatable)")
	fs.BoolVar(&c.noColor, "no-color", false, "print without colours")
}

// parseInterleaved parses flags that may come before or after the files,
// as in `hload apply test.hcl --var n=1`.
func parseInterleaved(fs *flagSet, args []string) ([]string, error) {
	var files []string
	for {
		if err := fs.parseFlags(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return files, nil
		}
		files = append(files, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// registry builds the protocols this binary knows. It is explicit, so
// tests and plugins can build their own.
func registry() *protocols.Registry {
	return protocols.NewRegistry(hloadhttp.New(), hloadamqp.New(), hloadsse.New())
}

// sinkTypes builds the sink types this binary knows, by the label of
// their block. It is explicit, as registry is, so tests can add their own.
// A new sink is a package under sinks/ and one more argument here.
func sinkTypes() *sinks.Registry {
	return sinks.NewRegistry(csv.Type(), html.Type(), influxdb.Type())
}

// loadOption changes how loadTest loads, for one command.
type loadOption func(*config.Options)

// runsNothing is the loadOption of the commands that only check or print
// a test (validate, plan): every random draw comes from a fixed seed, so
// that the same files always get the same verdict. apply must not use it:
// its draws would repeat from run to run.
func runsNothing(o *config.Options) { o.FixedDraws = true }

// withSinkTypes is the loadOption of the commands that take the sink
// types from their caller: a block of a type not in types is a config
// error. The others decode the blocks with the built-in types.
func withSinkTypes(types *sinks.Registry) loadOption {
	return func(o *config.Options) { o.Sinks = types.Specs() }
}

// loadTest loads the files and renders any diagnostics to stderr, with
// file, line, column and a snippet. A config error exits 2. plugins starts
// the config's plugin blocks; a plugin that cannot start exits 1, as it is
// a runtime failure rather than a mistake in the file.
func loadTest(files []string, c *commonFlags, demoURL func() (string, error), plugins *pluginHost, stderr io.Writer, opts ...loadOption) (*config.Test, error) {
	if len(files) == 0 {
		return nil, c.cmd.usageError("no test file given")
	}
	o := config.Options{
		Protocols: registry(),
		Sinks:     sinkTypes().Specs(),
		Vars:      c.vars,
		LookupEnv: os.LookupEnv,
		DemoURL:   demoURL,
		Plugins:   plugins.declared,
	}
	for _, opt := range opts {
		opt(&o)
	}
	test, diags := config.Load(files, o)
	renderDiagnostics(test, diags, c, stderr)
	if err := plugins.startError(); err != nil && diags.HasErrors() {
		return nil, &exitError{code: exitRuntime, err: fmt.Errorf("%w\nnothing was run", err)}
	}
	if diags.HasErrors() {
		n := len(diags.Errs())
		return nil, &exitError{code: exitUsage, err: fmt.Errorf("%d error(s) in the config%s; nothing was run", n, errorPlaces(diags))}
	}
	return test, nil
}

// renderDiagnostics writes diags to stderr with file, line, column and a
// snippet of each, from the files of test (which may be nil), with the
// test's sensitive values redacted.
func renderDiagnostics(test *config.Test, diags hcl.Diagnostics, c *commonFlags, stderr io.Writer) {
	if len(diags) == 0 {
		return
	}
	var parsed map[string]*hcl.File
	if test != nil {
		parsed = test.Files
		diags = test.RedactDiagnostics(diags)
	}
	w := hcl.NewDiagnosticTextWriter(stderr, parsed, 100, colours(stderr, c.noColor, os.Getenv))
	w.WriteDiagnostics(diags)
}

// checkLimits refuses, as a config error, a test that this machine cannot
// run as segment seg: too many VUs for its memory or address space, or
// connections for its open-file limit. A default max_vus is lowered to
// fit first, with a warning. core.CheckLimits decides, for
// validate, plan and apply alike, before any load is sent.
func checkLimits(test *config.Test, seg core.Segment, machine core.Machine, c *commonFlags, stderr io.Writer) error {
	renderDiagnostics(test, core.FitDefaults(test, seg, machine), c, stderr)
	diags := core.CheckLimits(test, seg, machine)
	if !diags.HasErrors() {
		return nil
	}
	renderDiagnostics(test, diags, c, stderr)
	return &exitError{code: exitUsage, err: fmt.Errorf("the test is too large for this machine%s; nothing was run", errorPlaces(diags))}
}

// errorPlaces lists where the first errors are, as file:line:col, which
// editors and CI logs turn into links: ", at test.hcl:5:13".
func errorPlaces(diags hcl.Diagnostics) string {
	const shown = 3
	var places []string
	for _, d := range diags {
		if d.Severity != hcl.DiagError || d.Subject == nil {
			continue
		}
		place := fmt.Sprintf("%s:%d:%d", d.Subject.Filename, d.Subject.Start.Line, d.Subject.Start.Column)
		if !slices.Contains(places, place) { // several errors on one attribute
			places = append(places, place)
		}
	}
	switch {
	case len(places) == 0:
		return ""
	case len(places) > shown:
		return fmt.Sprintf(", at %s and %d more", strings.Join(places[:shown], ", "), len(places)-shown)
	}
	return ", at " + strings.Join(places, ", ")
}

// isTerminal reports whether w is a character device, so colours are only
// sent to a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
