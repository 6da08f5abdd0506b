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
	"github.com/hload/hload/metrics"
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
	// SinkNames name Sinks, by position, in messages, such as
	// `test.hcl:21,1-11: sink "csv"`. A sink without a name is called by
	// its position when it cannot start, and its errors go as they are.
	SinkNames []string
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
	// Interrupter, when set, gives an interrupt after the load its
	// meaning: the sinks stop waiting, and the run counts as interrupted.
	Interrupter *Interrupter
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
	if none, err := r.startSinks(); err != nil {
		return none, err
	}
	r.runScenarios()
	r.abandon = r.opts.Interrupter.loadEnded()
	r.drain()
	r.closeClients()
	sum := r.summarise()
	return sum, r.closeSinks(sum)
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

	state   *runState
	clients map[string]protocols.Client
	// clientsClosed: closeClients has run.
	clientsClosed bool
	failures      <-chan error
	stopWatching  func()
	gaugers       []protocols.Gauger
	agg           *metrics.Aggregator
	scenarios     []*scenarioRun
	info          metrics.RunInfo

	snapshots snapshotState

	// How the run went, filled as it goes.
	writeErrs   []error // by sink, the first failed Write, named
	failure     error   // a client that failed the run
	interrupted bool
	// abandon is closed when the user interrupts the end of the run.
	abandon <-chan struct{}
	aborted string // the abort threshold that ended the run
	end     time.Time
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
		// writeErrs: one per sink, so a sink's Close can replace what its
		// Write said.
		writeErrs: make([]error, len(opts.Sinks)),
		agg:       metrics.NewAggregator(),
		info:      metrics.RunInfo{RunID: uuid.NewString(), Version: opts.Version, Files: opts.Files, Variables: opts.Variables},
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

// closeClients closes the clients, and takes in a failure that came
// until they were closed: a plugin that stops answering after its last
// call, in the drain or in its Close, fails the run as one that stops
// during the load. A plugin's Close is bounded in time. Safe to call
// twice.
func (r *run) closeClients() {
	if r.clientsClosed {
		return
	}
	r.clientsClosed = true
	r.cancelRun()
	closeAll(r.clients)
	r.stopWatching()
	if r.failure == nil {
		select {
		case r.failure = <-r.failures:
		default:
		}
	}
}

// close cancels what is left of the run and closes the clients, on every
// path out of Run.
func (r *run) close() {
	r.cancelRun()
	r.closeClients()
}

// sinkName is what messages call sink i, or "" when the caller gave it
// no name.
func (r *run) sinkName(i int) string {
	if i < len(r.opts.SinkNames) {
		return r.opts.SinkNames[i]
	}
	return ""
}

// sinkError names sink i in err, when it has a name, and hides the test's
// sensitive values in it: a sink's error may name a path or a URL read
// from env(), and it reaches the summary after the summary was redacted.
func (r *run) sinkError(i int, err error) error {
	if msg := r.state.redact(err.Error()); msg != err.Error() {
		err = errors.New(msg) // the sink's own error held a secret
	}
	if name := r.sinkName(i); name != "" {
		return fmt.Errorf("%s: %w", name, err)
	}
	return err
}

// startSinks starts every sink. When one cannot start, the ones already
// started are closed, last first as at the end of a run, with a summary
// that says why nothing ran: the console's header is out, and a summary
// export writes that summary. It returns that summary too.
func (r *run) startSinks() (*metrics.Summary, error) {
	r.info.Started = time.Now()
	for i, s := range r.opts.Sinks {
		if err := s.Start(r.ctx, r.info); err != nil {
			name := r.sinkName(i)
			if name == "" {
				name = fmt.Sprintf("sink %d", i+1)
			}
			err = fmt.Errorf("%s could not start: %s", name, r.state.redact(err.Error()))
			none := &metrics.Summary{HloadVersion: r.info.Version, RunID: r.info.RunID, Started: r.info.Started,
				Ended: time.Now(), Files: r.info.Files, Variables: r.info.Variables, Failed: err.Error()}
			for j := i - 1; j >= 0; j-- {
				if cerr := r.opts.Sinks[j].Close(*none); cerr != nil {
					cerr = r.sinkError(j, cerr)
					err = errors.Join(err, cerr)
					noteSinkError(none, cerr)
				}
			}
			return none, err
		}
	}
	r.snapshots.start(r)
	return nil, nil
}

// sinkWrote keeps the first error of sink i's Writes. The run goes on, and
// the next snapshot warns; the summary will not pass.
func (r *run) sinkWrote(i int, err error) {
	if err != nil && r.writeErrs[i] == nil {
		r.writeErrs[i] = r.sinkError(i, err)
	}
}

// closeSinks closes the sinks in reverse order. A sink that fails is added
// to the summary, which then does not pass, before the next sink gets it;
// so the summary JSON and the console agree with the exit code. A sink's
// Close error, which says what its failure cost, replaces the error its
// Write returned.
func (r *run) closeSinks(sum *metrics.Summary) error {
	errs := make([]error, len(r.opts.Sinks))
	copy(errs, r.writeErrs)
	mergeable, err := r.mergeable()
	if err != nil {
		sum.Warnings = append(sum.Warnings, fmt.Sprintf("the summary export carries no mergeable figures: %v", err))
	}
	defer func() { sum.Mergeable = mergeable }()
	abandoned, stopWatching := r.watchAbandon()
	defer stopWatching()
	defer func() {
		if abandoned() {
			sum.Interrupted = true
		}
	}()
	for i := len(r.opts.Sinks) - 1; i >= 0; i-- {
		if abandoned() {
			sum.Interrupted = true // for the console's verdict
		}
		if err := r.closeSink(i, sum, mergeable); err != nil {
			errs[i] = err
		}
	}
	var runErr error
	if err := errors.Join(errs...); err != nil {
		runErr = fmt.Errorf("sink failed: %w", err)
	}
	if r.failure != nil {
		runErr = errors.Join(fmt.Errorf("the run failed: %w", r.failure), runErr)
	}
	return runErr
}

// closeSink closes sink i with the summary as it stands, and adds what
// the sink says to it: its warnings, its failure, named, in place of what
// its Write said. It returns that failure.
func (r *run) closeSink(i int, sum *metrics.Summary, mergeable *metrics.Mergeable) error {
	s := r.opts.Sinks[i]
	given := *sum
	if _, ok := s.(Exporter); ok {
		given.Mergeable = mergeable
	}
	err := s.Close(given)
	if w, ok := s.(Warner); ok {
		sum.Warnings = append(sum.Warnings, w.Warnings()...)
	}
	if err == nil {
		return nil
	}
	err = r.sinkError(i, err)
	if before := r.writeErrs[i]; before != nil {
		// A copy: the sinks closed before hold this slice.
		sum.SinkErrors = slices.DeleteFunc(slices.Clone(sum.SinkErrors), func(m string) bool { return m == before.Error() })
	}
	noteSinkError(sum, err)
	return err
}

// watchAbandon has the sinks that can give up waiting do so when the user
// interrupts the end of the run. abandoned says whether that happened;
// stop ends the watching.
func (r *run) watchAbandon() (abandoned func() bool, stop func()) {
	var flag atomic.Bool
	quit := make(chan struct{})
	go func() {
		select {
		case <-r.abandon:
		case <-quit:
			return
		}
		flag.Store(true)
		for _, s := range r.opts.Sinks {
			if a, ok := s.(Abandoner); ok {
				a.Abandon()
			}
		}
	}()
	return flag.Load, func() { close(quit) }
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
