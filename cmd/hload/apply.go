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
	"github.com/hload/hload/sinks/console"
	"github.com/hload/hload/sinks/csv"
	"github.com/hload/hload/sinks/dashboard"
	"github.com/hload/hload/sinks/export"
	"github.com/hload/hload/sinks/html"
	"github.com/hload/hload/sinks/influxdb"
	"github.com/hload/hload/sinks/series"
)

func cmdApply(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet(applyHelp, stdout, stderr)
	var (
		common        commonFlags
		summaryExport string
		segment       segmentFlags
		start         startFlags
		dash          dashboardFlags
		quiet         bool
	)
	common.register(fs)
	fs.StringVar(&summaryExport, "summary-export", "", "write the summary JSON to this `file`; - prints it as the last line of stdout, on one line")
	segment.register(fs.FlagSet)
	start.register(fs.FlagSet)
	dash.register(fs.FlagSet)
	fs.BoolVar(&quiet, "quiet", false, "print no live progress, only the summary")
	files, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	seg, err := segment.resolve()
	if err != nil {
		return &exitError{code: exitUsage, err: err}
	}
	barrier, err := start.resolve()
	if err != nil {
		return &exitError{code: exitUsage, err: err}
	}
	dashCfg, err := dash.resolve()
	if err != nil {
		return &exitError{code: exitUsage, err: err}
	}
	if summaryExport != "" && summaryExport != "-" {
		// Before the config, which may start plugins, and long before the
		// load: a typo in the folder is found now, not after the run.
		if err := outfile.Check(summaryExport); err != nil {
			return &exitError{code: exitUsage, err: fmt.Errorf("--summary-export: %w", err)}
		}
	}
	// A reader of stdout that goes away (`hload apply ... | head -1`)
	// must not kill the run: with SIGPIPE notified, a write to the closed
	// pipe fails with EPIPE instead, which the console ignores. The
	// channel is never read; Notify does not block on it.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)

	// Each signal means what core.Interrupter says where the run is: the
	// first stops it gracefully, the second cancels the calls in flight,
	// and one after the load ends the wait for the sinks' flush. Either
	// way the summary is printed.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	interrupts := core.NewInterrupter(cancel)
	stop := interrupts.Stop()
	signals := make(chan os.Signal, 2)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(signals)
	applied := make(chan struct{})
	defer close(applied)
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

	demoTarget := &lazyDemo{ctx: ctx}
	defer demoTarget.close()
	// Deferred before anything can start a plugin: every path out of
	// apply, config errors and signals included, kills them.
	plugins := newPluginHost(ctx)
	defer plugins.killAll()
	test, err := loadTest(files, &common, demoTarget.url, plugins, stderr)
	if err != nil {
		return err
	}
	if err := core.CheckSegment(test, seg); err != nil {
		return &exitError{code: exitUsage, err: err}
	}
	if err := checkLimits(test, seg, core.ReadMachine(), &common, stderr); err != nil {
		return err
	}

	configured, err := newSinks(test, seg, stderr)
	if err != nil {
		return err
	}
	// The console first, so it is closed last and its summary names every
	// other sink's failure; the export next, so the file holds that
	// summary and its own failure comes before the console's verdict.
	sinks := configured.prepend(console.New(stdout, console.Options{Quiet: quiet, NoColor: !colours(stdout, common.noColor, os.Getenv)}), "the console")
	// The export carries the per-interval series, for `hload report`.
	collector := series.New(core.Plan(test, seg))
	if summaryExport != "" && summaryExport != "-" {
		sinks = sinks.insert(1, export.New(summaryExport, collector.Series), "--summary-export")
	}
	sinks.add(collector, "")
	if dashCfg.addr != "" {
		// Listening now, before any load: a port in use fails the command.
		d, err := dashboard.Listen(dashboard.Options{Addr: dashCfg.addr, Token: dashCfg.token,
			Plans: core.Plan(test, seg), Series: collector.Series})
		if err != nil {
			return &exitError{code: exitUsage, err: fmt.Errorf("--dashboard: %w", err)}
		}
		defer dashCfg.end(d, stop, stderr)
		fmt.Fprintf(stderr, "hload: live dashboard at %s\n", d.URL())
		// Closed after the other sinks, before the console: its summary
		// names their failures.
		sinks = sinks.insert(1, d, "the dashboard")
	}

	if !barrier.time.IsZero() {
		if err := barrier.late(time.Now()); err != nil {
			return &exitError{code: exitUsage, err: err}
		}
		if err := waitUntil(ctx, stop, barrier.time); err != nil {
			return &exitError{code: exitInterrupted, err: err}
		}
	}
	sum, runErr := core.Run(ctx, test, core.Options{
		Protocols: plugins.protocols(),
		Sinks:     sinks.sinks,
		SinkNames: sinks.names,
		Segment:   seg,
		Version:   version,
		Files:     files,
		// The summary records the --var values: sensitive ones redacted.
		Variables:   test.RedactVariables(common.vars),
		Stop:        stop,
		Interrupter: interrupts,
		Isolated:    plugins.isolated,
	})
	if sum != nil && summaryExport == "-" {
		// After the console's summary, as the last line of stdout.
		sum.Series = collector.Series()
		if err := writeSummaryExport(summaryExport, sum, stdout); err != nil {
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

// newSinks builds the test's sink blocks, without starting them, and
// checks the files they will write: validate builds them too, so a bad
// setting or a folder that does not exist is found before a run. The
// console sink is the caller's. Each is named by its type and block.
func newSinks(test *config.Test, seg core.Segment, stderr io.Writer) (sinkList, error) {
	var sinks sinkList
	for _, s := range test.Sinks {
		var sk core.Sink
		var err error
		switch s.Type {
		case "csv":
			sk, err = csv.New(s.Config, "")
		case "html":
			sk, err = html.New(s.Config, core.Plan(test, seg))
		case "influxdb":
			if s.Sensitive("tags") {
				// InfluxDB would store it in clear on every point.
				return sinkList{}, &exitError{code: exitUsage, err: fmt.Errorf("%s: sink %q: a value of tags is sensitive (from env(), HLOAD_VAR_ or a variable with sensitive = true), and InfluxDB would store it in clear on every point; "+
					"tag with a value that is not secret, such as a variable with sensitive = false", s.DeclRange, s.Type)}
			}
			segTag := ""
			if seg.Count > 1 {
				segTag = seg.String()
			}
			sk, err = influxdb.New(s.Config, influxdb.Options{Log: stderr, Segment: segTag})
		default:
			continue // config knows no other type
		}
		if err == nil {
			err = checkOutputs(sk)
		}
		name := fmt.Sprintf("%s: sink %q", s.DeclRange, s.Type)
		if err != nil {
			return sinkList{}, &exitError{code: exitUsage, err: fmt.Errorf("%s: %w", name, err)}
		}
		sinks.add(sk, name)
	}
	return sinks, nil
}

// checkOutputs checks the files a sink will write (Path, and a CSV
// sink's RawPath), without creating them.
func checkOutputs(sk core.Sink) error {
	var paths []string
	if p, ok := sk.(interface{ Path() string }); ok {
		paths = append(paths, p.Path())
	}
	if p, ok := sk.(interface{ RawPath() string }); ok && p.RawPath() != "" {
		paths = append(paths, p.RawPath())
	}
	for _, p := range paths {
		if err := outfile.Check(p); err != nil {
			return err
		}
	}
	return nil
}

func cmdValidate(args []string, stdout, stderr io.Writer) error {
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
	test, err := loadTest(files, &common, validateOnly, plugins, stderr, runsNothing)
	if err != nil {
		return err
	}
	if err := core.CheckSegment(test, seg); err != nil {
		return &exitError{code: exitUsage, err: err}
	}
	if err := checkLimits(test, seg, core.ReadMachine(), &common, stderr); err != nil {
		return err
	}
	if _, err := newSinks(test, seg, stderr); err != nil {
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
