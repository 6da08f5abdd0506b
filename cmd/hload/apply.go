package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/hload/hload/config"
	"github.com/hload/hload/core"
	"github.com/hload/hload/demo"
	"github.com/hload/hload/sinks/console"
	"github.com/hload/hload/sinks/csv"
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
		quiet         bool
	)
	common.register(fs)
	fs.StringVar(&summaryExport, "summary-export", "", "write the summary JSON to this `file`; - prints it as the last line of stdout, on one line")
	segment.register(fs.FlagSet)
	start.register(fs.FlagSet)
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

	// The first signal stops the run gracefully; the second cancels calls
	// in flight at once. Either way sinks are flushed and the summary
	// printed.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stop := make(chan struct{})
	signals := make(chan os.Signal, 2)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(signals)
	go func() {
		select {
		case <-signals:
		case <-ctx.Done():
			return
		}
		fmt.Fprintln(stderr, "\nhload: stopping gracefully; press Ctrl-C again to cancel requests in flight")
		close(stop)
		select {
		case <-signals:
			cancel()
		case <-ctx.Done():
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

	sinks := []core.Sink{console.New(stdout, console.Options{Quiet: quiet, NoColor: !colours(stdout, common.noColor, os.Getenv)})}
	configured, err := newSinks(test, seg, stderr)
	if err != nil {
		return err
	}
	sinks = append(sinks, configured...)
	// The export carries the per-interval series, for `hload report`.
	collector := series.New(core.Plan(test, seg))
	sinks = append(sinks, collector)

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
		Sinks:     sinks,
		Segment:   seg,
		Version:   version,
		Files:     files,
		// The summary records the --var values: sensitive ones redacted.
		Variables: test.RedactVariables(common.vars),
		Stop:      stop,
		Isolated:  plugins.isolated,
	})
	if sum != nil && summaryExport != "" {
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

// newSinks builds the test's sink blocks, without starting them: validate
// builds them too, so a bad setting is found before a run. The console
// sink is the caller's.
func newSinks(test *config.Test, seg core.Segment, stderr io.Writer) ([]core.Sink, error) {
	var sinks []core.Sink
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
				return nil, &exitError{code: exitUsage, err: fmt.Errorf("%s: sink %q: a value of tags is sensitive (from env(), HLOAD_VAR_ or a variable with sensitive = true), and InfluxDB would store it in clear on every point; "+
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
		if err != nil {
			return nil, &exitError{code: exitUsage, err: fmt.Errorf("%s: sink %q: %w", s.DeclRange, s.Type, err)}
		}
		sinks = append(sinks, sk)
	}
	return sinks, nil
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
