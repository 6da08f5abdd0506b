package core

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/hload/hload/config"
	"github.com/hload/hload/core/metrics"
	"github.com/hload/hload/protocols"
	"github.com/hload/hload/protocols/delivery"
)

// Options are what a run needs besides the test.
type Options struct {
	Protocols *protocols.Registry
	// Sinks are started in order and closed in reverse order, each with
	// the summary as it stands then: a sink that fails at the end is in
	// the summary the sinks before it print. The CLI puts the console
	// first, so that its summary names the other sinks' failures.
	Sinks []Sink
	// Interval between snapshots; 1s when zero.
	Interval time.Duration
	// Segment is this machine's share of the run; the zero value is all.
	Segment Segment
	Version string
	Files   []string
	// Variables are the values given with --var, for the record.
	Variables map[string]string
	// Stop, when closed, stops the run gracefully, as at its planned end:
	// no new iterations, in-flight calls get the graceful stop. The CLI
	// closes it on the first SIGINT. Cancelling Run's ctx instead cancels
	// in-flight calls at once.
	Stop <-chan struct{}
	// Isolated returns the protocol of a target with isolate = true: its
	// built-in protocol run in its own process. The CLI starts hload
	// itself as the plugin; core knows nothing of processes. Nil makes an
	// isolated target an error.
	Isolated func(target *config.Target) (protocols.Protocol, error)
}

// runState is what every scenario of one run shares.
type runState struct {
	nextVU   atomic.Uint64
	rawSinks []RawSink
	// test redacts its sensitive values from messages; nil in tests that
	// build a run without one.
	test *config.Test
}

// redact hides the test's sensitive values in a text a server, a protocol
// or a plugin wrote: a server may echo the token it was sent.
func (s *runState) redact(text string) string {
	if s == nil || s.test == nil || text == "" {
		return text
	}
	return s.test.Redact(text)
}

// Run executes the test and returns its summary. The error reports a
// runtime failure (a target could not be opened, a sink failed); the
// summary is still returned when load was sent, so the caller can print
// it. Thresholds decide Summary.Passed, and a run in which every call
// failed, or whose sinks failed, does not pass. An interrupted run is not
// an error: its summary has Interrupted set, because its results are
// valid.
//
// A client that is a protocols.Failer, such as a plugin's, can fail the
// whole run: Run then stops at once, as an abort does, keeps what was
// measured, closes the sinks with the summary (Summary.Failed set,
// Passed false) and returns the summary with an error wrapping the
// client's.
func Run(ctx context.Context, test *config.Test, opts Options) (*metrics.Summary, error) {
	if delivery.LedgerFrom(ctx) == nil {
		// One ledger per run: requests with a delivery attribute record
		// their sends in it, and subscribers (SSE) match what they receive
		// against it.
		ctx = delivery.WithLedger(ctx, delivery.NewLedger())
	}
	r, err := openRun(ctx, test, opts)
	if err != nil {
		return nil, err
	}
	defer r.close()
	if err := r.startSinks(); err != nil {
		return nil, err
	}
	r.runScenarios()
	r.drain()
	sum := r.summarise()
	err = r.closeSinks(sum)
	r.addMergeable(sum)
	return sum, err
}

// run is one run of a test through its lifecycle: open, start sinks, run
// scenarios, drain, summarise, close sinks.
type run struct {
	test     *config.Test
	opts     Options
	interval time.Duration
	// ctx is the caller's: when it ends, calls in flight are cancelled at
	// once. runCtx is the parent of every call's context.
	ctx       context.Context
	runCtx    context.Context
	cancelRun context.CancelFunc

	state        *runState
	clients      map[string]protocols.Client
	failures     <-chan error
	stopWatching func()
	gaugers      []protocols.Gauger
	agg          *metrics.Aggregator
	scenarios    []*scenarioRun
	info         metrics.RunInfo

	snapshots snapshotState

	// How the run went, filled as it goes.
	sinkErr     error // the first failed Write
	failure     error // a client that failed the run
	interrupted bool
	aborted     string // the abort threshold that ended the run
	end         time.Time
}

// openRun opens one client per target in use and binds every scenario's
// requests to their clients and series. Nothing is sent yet.
func openRun(ctx context.Context, test *config.Test, opts Options) (*run, error) {
	if err := checkSegment(test, opts.Segment); err != nil {
		return nil, err
	}
	r := &run{
		test:     test,
		opts:     opts,
		interval: opts.Interval,
		ctx:      ctx,
		state:    &runState{rawSinks: rawSinks(opts.Sinks), test: test},
		agg:      metrics.NewAggregator(),
		info:     metrics.RunInfo{RunID: uuid.NewString(), Version: opts.Version, Files: opts.Files, Variables: opts.Variables},
	}
	if r.interval <= 0 {
		r.interval = time.Second
	}
	r.agg.KeepPoints(metrics.MergePoints)
	clients, err := openClients(ctx, test, opts)
	if err != nil {
		return nil, err
	}
	r.clients = clients
	r.failures, r.stopWatching = watchFailures(clients)
	r.gaugers = clientGaugers(clients)
	r.runCtx, r.cancelRun = context.WithCancel(ctx)
	plans := Plan(test, opts.Segment)
	for i, s := range test.Scenarios {
		sc := newScenarioRun(r, s, plans[i].Iterations)
		r.scenarios = append(r.scenarios, sc)
		r.info.Scenarios = append(r.info.Scenarios, sc.describe())
	}
	return r, nil
}

// rawSinks returns the sinks that take every call.
func rawSinks(sinks []Sink) []RawSink {
	var out []RawSink
	for _, s := range sinks {
		raw, ok := s.(RawSink)
		// A sink type may have the ability but not use it in this run (CSV
		// without raw = true); skipping it keeps the hot path short.
		if e, can := s.(interface{ RawEnabled() bool }); ok && can && !e.RawEnabled() {
			ok = false
		}
		if ok {
			out = append(out, raw)
		}
	}
	return out
}

// close cancels what is left of the run and closes the clients.
func (r *run) close() {
	r.cancelRun()
	r.stopWatching()
	closeAll(r.clients)
}

// startSinks starts every sink. When one cannot start, the ones already
// started (the console's header is out) end with a summary that says why
// nothing ran.
func (r *run) startSinks() error {
	r.info.Started = time.Now()
	for i, s := range r.opts.Sinks {
		if err := s.Start(r.ctx, r.info); err != nil {
			err = fmt.Errorf("sink %d could not start: %w", i+1, err)
			none := metrics.Summary{HloadVersion: r.info.Version, RunID: r.info.RunID, Started: r.info.Started,
				Ended: time.Now(), Failed: err.Error()}
			for _, started := range r.opts.Sinks[:i] {
				started.Close(none)
			}
			return err
		}
	}
	r.snapshots.start(r)
	return nil
}

// closeSinks closes the sinks in reverse order. A sink that fails is added
// to the summary, which then does not pass, before the next sink gets it;
// so the summary JSON and the console agree with the exit code.
func (r *run) closeSinks(sum *metrics.Summary) error {
	var errs []error
	if r.sinkErr != nil {
		errs = append(errs, r.sinkErr)
	}
	for i := len(r.opts.Sinks) - 1; i >= 0; i-- {
		if err := r.opts.Sinks[i].Close(*sum); err != nil {
			errs = append(errs, err)
			noteSinkError(sum, err)
		}
	}
	var runErr error
	if len(errs) > 0 {
		runErr = fmt.Errorf("sink failed: %w", errors.Join(errs...))
	}
	if r.failure != nil {
		runErr = errors.Join(fmt.Errorf("the run failed: %w", r.failure), runErr)
	}
	return runErr
}

// noteSinkError adds a sink's failure to the summary, which then does not
// pass: the results that sink should hold are incomplete. A sink whose
// Close repeats the error its Write returned is named once.
func noteSinkError(sum *metrics.Summary, err error) {
	sum.Passed = false
	if msg := err.Error(); !slices.Contains(sum.SinkErrors, msg) {
		sum.SinkErrors = append(sum.SinkErrors, msg)
	}
}
