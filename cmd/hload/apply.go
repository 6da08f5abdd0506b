package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/hload/hload/config"
	"github.com/hload/hload/core"
	"github.com/hload/hload/demo"
	"github.com/hload/hload/internal/outfile"
	"github.com/hload/hload/metrics"
	"github.com/hload/hload/sinks"
	"github.com/hload/hload/sinks/console"
	"github.com/hload/hload/sinks/dashboard"
	"github.com/hload/hload/sinks/export"
	"github.com/hload/hload/sinks/series"
)

// cmdApply runs a test: the steps of a run, from the flags to the exit
// code. types are the sink types its blocks may name.
func cmdApply(args []string, types *sinks.Registry, stdout, stderr io.Writer) error {
	a, err := parseApply(args, stdout, stderr)
	if err != nil {
		return err
	}
	// A reader of stdout that goes away (`hload apply ... | head -1`)
	// must not kill the run: with SIGPIPE notified, a write to the closed
	// pipe fails with EPIPE instead, which the console ignores. The
	// channel is never read; Notify does not block on it.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	interrupts := core.NewInterrupter(cancel)
	stop := interrupts.Stop()
	defer relaySignals(interrupts, stderr)()

	demoTarget := &lazyDemo{ctx: ctx}
	defer demoTarget.close()
	// Deferred before anything can start a plugin: every path out of
	// apply, config errors and signals included, kills them.
	plugins := newPluginHost(ctx)
	defer plugins.killAll()
	test, err := loadTest(a.files, &a.common, demoTarget.url, plugins, stderr, withSinkTypes(types))
	if err != nil {
		return err
	}
	if err := core.CheckSegment(test, a.seg); err != nil {
		return &exitError{code: exitUsage, err: err}
	}
	if err := checkLimits(test, a.seg, core.ReadMachine(), &a.common, stderr); err != nil {
		return err
	}

	// The export and the dashboard carry the per-interval series, for
	// `hload report`.
	collector := series.New(core.Plan(test, a.seg))
	outs, err := a.runSinks(test, types, collector, stdout, stderr)
	if err != nil {
		return err
	}
	if a.dash.addr != "" {
		// Listening now, before any load: a port in use fails the command.
		d, err := dashboard.Listen(dashboard.Options{Addr: a.dash.addr, Token: a.dash.token,
			Plans: core.Plan(test, a.seg), Series: collector.Series})
		if err != nil {
			return &exitError{code: exitUsage, err: fmt.Errorf("--dashboard: %w", err)}
		}
		defer a.dash.end(d, stop, stderr)
		fmt.Fprintf(stderr, "hload: live dashboard at %s\n", d.URL())
		// Closed after the other sinks, before the console: its summary
		// names their failures.
		outs = outs.insert(1, d, "the dashboard")
	}

	if err := awaitStart(ctx, stop, a.barrier); err != nil {
		return err
	}
	sum, runErr := core.Run(ctx, test, core.Options{
		Protocols: plugins.protocols(),
		Sinks:     outs.sinks,
		SinkNames: outs.names,
		Segment:   a.seg,
		Version:   version,
		Files:     a.files,
		// The summary records the --var values: sensitive ones redacted.
		Variables:   test.RedactVariables(a.common.vars),
		Stop:        stop,
		Interrupter: interrupts,
		Isolated:    plugins.isolated,
	})
	return a.outcome(test, sum, runErr, collector, stdout)
}

// applyOptions are apply's flags, resolved, and its files.
type applyOptions struct {
	common        commonFlags
	files         []string
	summaryExport string
	quiet         bool
	seg           core.Segment
	barrier       startBarrier
	dash          dashboardConfig
}

// parseApply reads apply's flags and checks every one of them before the
// config is loaded: a mistake in a flag is a usage error (exit 2).
func parseApply(args []string, stdout, stderr io.Writer) (*applyOptions, error) {
	fs := newFlagSet(applyHelp, stdout, stderr)
	var (
		a       applyOptions
		segment segmentFlags
		start   startFlags
		dash    dashboardFlags
		err     error
	)
	a.common.register(fs)
	fs.StringVar(&a.summaryExport, "summary-export", "", "write the summary JSON to this `file`; - prints it as the last line of stdout, on one line")
	segment.register(fs.FlagSet)
	start.register(fs.FlagSet)
	dash.register(fs.FlagSet)
	fs.BoolVar(&a.quiet, "quiet", false, "print no live progress, only the summary")
	if a.files, err = parseInterleaved(fs, args); err != nil {
		return nil, err
	}
	if a.seg, err = segment.resolve(); err != nil {
		return nil, &exitError{code: exitUsage, err: err}
	}
	if a.barrier, err = start.resolve(); err != nil {
		return nil, &exitError{code: exitUsage, err: err}
	}
	if a.dash, err = dash.resolve(); err != nil {
		return nil, &exitError{code: exitUsage, err: err}
	}
	if a.exportsToFile() {
		// Before the config, which may start plugins, and long before the
		// load: a typo in the folder is found now, not after the run.
		if err := outfile.Check(a.summaryExport); err != nil {
			return nil, &exitError{code: exitUsage, err: fmt.Errorf("--summary-export: %w", err)}
		}
	}
	return &a, nil
}

// exportsToFile reports whether --summary-export names a file, rather
// than stdout (-) or nothing.
func (a *applyOptions) exportsToFile() bool {
	return a.summaryExport != "" && a.summaryExport != "-"
}

// relaySignals makes each SIGINT and SIGTERM mean what core.Interrupter
// says where the run is: the first stops it gracefully, the second cancels
// the calls in flight, and one after the load ends the wait for the sinks'
// flush. Either way the summary is printed. The returned function stops
// the relay.
func relaySignals(interrupts *core.Interrupter, stderr io.Writer) (stop func()) {
	signals := make(chan os.Signal, 2)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	applied := make(chan struct{})
	go func() {
		for {
			select {
			case <-signals:
			case <-applied:
				return
			}
			fmt.Fprintln(stderr, "\nhload: "+interrupts.Interrupt())
		}
	}()
	return func() {
		close(applied)
		signal.Stop(signals)
	}
}

// runSinks builds the run's sinks, without starting them: the test's blocks
// (see sinks.Registry.New), then the ones the flags add. The console comes
// first, so it is closed last and its summary names every other sink's
// failure; the export next, so the file holds that summary and its own
// failure comes before the console's verdict; collector last.
func (a *applyOptions) runSinks(test *config.Test, types *sinks.Registry, collector *series.Collector, stdout, stderr io.Writer) (sinkList, error) {
	configured, err := newSinks(test, types, a.seg, stderr)
	if err != nil {
		return sinkList{}, err
	}
	colour := colours(stdout, a.common.noColor, os.Getenv)
	outs := configured.prepend(console.New(stdout, console.Options{Quiet: a.quiet, NoColor: !colour}), "the console")
	if a.exportsToFile() {
		outs = outs.insert(1, export.New(a.summaryExport, collector.Series), "--summary-export")
	}
	outs.add(collector, "")
	return outs, nil
}

// awaitStart waits for the --start-at barrier, if any, unless it is
// already too late to start.
func awaitStart(ctx context.Context, stop <-chan struct{}, b startBarrier) error {
	if b.time.IsZero() {
		return nil
	}
	if err := b.late(time.Now()); err != nil {
		return &exitError{code: exitUsage, err: err}
	}
	if err := waitUntil(ctx, stop, b.time); err != nil {
		return &exitError{code: exitInterrupted, err: err}
	}
	return nil
}

// outcome prints the summary export for --summary-export -, and maps
// the run's outcome to its exit code.
func (a *applyOptions) outcome(test *config.Test, sum *metrics.Summary, runErr error, collector *series.Collector, stdout io.Writer) error {
	if sum != nil && a.summaryExport == "-" {
		// After the console's summary, as the last line of stdout.
		sum.Series = collector.Series()
		if err := writeSummaryExport(a.summaryExport, sum, stdout); err != nil {
			runErr = errors.Join(runErr, fmt.Errorf("--summary-export: %w", err))
		}
	}
	switch {
	case runErr != nil:
		// A plugin's last words may quote a sensitive value.
		return &exitError{code: exitRuntime, err: errors.New(test.Redact(runErr.Error()))}
	case sum.Interrupted:
		return &exitError{code: exitInterrupted}
	case !sum.Passed:
		return &exitError{code: exitThreshold}
	}
	return nil
}

// lazyDemo starts the embedded demo target the first time a config asks
// for demo_url(), so a test file is all a newcomer needs.
type lazyDemo struct {
	ctx  context.Context
	once sync.Once
	srv  *demo.Server
	err  error
}

func (d *lazyDemo) url() (string, error) {
	d.once.Do(func() {
		d.srv, d.err = demo.Start(d.ctx, "127.0.0.1:0", demo.Options{})
	})
	if d.err != nil {
		return "", fmt.Errorf("starting the embedded demo target: %w", d.err)
	}
	return d.srv.URL(), nil
}

func (d *lazyDemo) close() {
	if d.srv != nil {
		d.srv.Close()
	}
}

func waitUntil(ctx context.Context, stop <-chan struct{}, t time.Time) error {
	timer := time.NewTimer(time.Until(t))
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-stop:
		return errors.New("interrupted while waiting for --start-at")
	case <-ctx.Done():
		return ctx.Err()
	}
}

func writeJSON(path string, v any) error {
	data, err := series.IndentJSON(v)
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}

// validateOnly is the DemoURL for commands that must not start anything.
func validateOnly() (string, error) { return "http://127.0.0.1:0", nil }

// sinkList is the sinks of a run, in order, with the names messages call
// them by.
type sinkList struct {
	sinks []core.Sink
	names []string
}

func (l *sinkList) add(s core.Sink, name string) {
	l.sinks = append(l.sinks, s)
	l.names = append(l.names, name)
}

func (l sinkList) insert(i int, s core.Sink, name string) sinkList {
	return sinkList{slices.Insert(l.sinks, i, s), slices.Insert(l.names, i, name)}
}

func (l sinkList) prepend(s core.Sink, name string) sinkList { return l.insert(0, s, name) }

// newSinks builds the sinks of the test's blocks, from types, without
// starting them, and checks the files they will write: validate builds
// them too, so a bad setting or a folder that does not exist is found
// before a run. Each is named by its block's place and type.
func newSinks(test *config.Test, types *sinks.Registry, seg core.Segment, stderr io.Writer) (sinkList, error) {
	built, names, err := types.New(test, seg, stderr)
	if err != nil {
		return sinkList{}, &exitError{code: exitUsage, err: err}
	}
	return sinkList{built, names}, nil
}

func cmdValidate(args []string, types *sinks.Registry, stdout, stderr io.Writer) error {
	fs := newFlagSet(validateHelp, stdout, stderr)
	var (
		common  commonFlags
		segment segmentFlags
	)
	common.register(fs)
	segment.register(fs.FlagSet)
	files, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	seg, err := segment.resolve()
	if err != nil {
		return &exitError{code: exitUsage, err: err}
	}
	plugins := newPluginHost(context.Background())
	defer plugins.killAll()
	test, err := loadTest(files, &common, validateOnly, plugins, stderr, runsNothing, withSinkTypes(types))
	if err != nil {
		return err
	}
	if err := core.CheckSegment(test, seg); err != nil {
		return &exitError{code: exitUsage, err: err}
	}
	if err := checkLimits(test, seg, core.ReadMachine(), &common, stderr); err != nil {
		return err
	}
	if _, err := newSinks(test, types, seg, stderr); err != nil {
		return err
	}
	requests := 0
	for _, s := range test.Scenarios {
		requests += len(s.Requests)
	}
	fmt.Fprintf(stdout, "%s: valid: %d target(s), %d scenario(s), %d request(s), %d threshold(s)\n",
		files[0], len(test.Targets), len(test.Scenarios), requests, len(test.Thresholds))
	return nil
}
