package core

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/hashicorp/hcl/v2"

	"github.com/hload/hload/config"
	"github.com/hload/hload/core/metrics"
	"github.com/hload/hload/protocols"
	"github.com/hload/hload/protocols/delivery"
)

// Options are what a run needs besides the test.
type Options struct {
	Protocols *protocols.Registry
	Sinks     []Sink
	// Interval between snapshots; 1s when zero.
	Interval time.Duration
	// Segment is this machine's share of the run; the zero value is all.
	Segment Segment
	Version string
	Files   []string
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

	evalMu     sync.Mutex
	evalErrors map[string]string // "scenario/request" -> first evaluation error
}

func (r *runState) noteEvalError(scenario, request string, diags hcl.Diagnostics) {
	r.evalMu.Lock()
	defer r.evalMu.Unlock()
	key := scenario + "/" + request
	if _, seen := r.evalErrors[key]; !seen {
		r.evalErrors[key] = diags.Error()
	}
}

// Run executes the test and returns its summary. The error reports a
// runtime failure (a target could not be opened, a sink failed); the
// summary is still returned when load was sent, so the caller can print
// it. Thresholds decide Summary.Passed. An interrupted run is not an
// error: its summary has Interrupted set, because its results are valid.
//
// A client that is a protocols.Failer, such as a plugin's, can fail the
// whole run: Run then stops at once, as an abort does, keeps what was
// measured, closes the sinks with the summary (Summary.Failed set,
// Passed false) and returns the summary with an error wrapping the
// client's.
func Run(ctx context.Context, test *config.Test, opts Options) (*metrics.Summary, error) {
	interval := opts.Interval
	if interval <= 0 {
		interval = time.Second
	}
	if delivery.LedgerFrom(ctx) == nil {
		// One ledger per run: requests with a delivery attribute record
		// their sends in it, and subscribers (SSE) match what they receive
		// against it.
		ctx = delivery.WithLedger(ctx, delivery.NewLedger())
	}
	state := &runState{evalErrors: map[string]string{}}
	for _, s := range opts.Sinks {
		raw, ok := s.(RawSink)
		// A sink type may have the ability but not use it in this run (CSV
		// without raw = true); skipping it keeps the hot path short.
		if e, can := s.(interface{ RawEnabled() bool }); ok && can && !e.RawEnabled() {
			ok = false
		}
		if ok {
			state.rawSinks = append(state.rawSinks, raw)
		}
	}

	clients, err := openClients(ctx, test, opts)
	if err != nil {
		return nil, err
	}
	defer closeAll(clients)
	failures, stopWatching := watchFailures(clients)
	defer stopWatching()

	agg := metrics.NewAggregator()
	runCtx, cancelRun := context.WithCancel(ctx)
	defer cancelRun()
	scenarios := make([]*scenarioRun, len(test.Scenarios))
	info := metrics.RunInfo{RunID: uuid.NewString(), Version: opts.Version, Files: opts.Files}
	for i, s := range test.Scenarios {
		sc := &scenarioRun{
			run:       state,
			cfg:       s,
			name:      s.Name,
			thinkTime: s.ThinkTime,
			ending:    make(chan struct{}),
		}
		sc.callCtx, sc.cancelCall = context.WithCancel(runCtx)
		sc.open = model(s.Executor) == "open"
		// One cursor per feeder per scenario: sequential feeders walk
		// their rows per scenario, unique ones share the feeder's count.
		cursors := map[*config.Feeder]*feederCursor{}
		weights := make([]int, len(s.Requests))
		si := metrics.ScenarioInfo{Name: s.Name, Executor: s.Executor.Name(), Model: model(s.Executor)}
		for j, r := range s.Requests {
			weights[j] = r.Weight
			req := request{
				cfg:      r,
				client:   clients[r.Target],
				series:   agg.Series(s.Name, r.Name),
				keepBody: needsBody(r.Checks),
			}
			for _, f := range r.Feeders() {
				fc := cursors[f]
				if fc == nil {
					fc = &feederCursor{name: f.Name, feeder: f, cursor: f.NewCursor()}
					cursors[f] = fc
				}
				req.feeders = append(req.feeders, fc)
			}
			sc.requests = append(sc.requests, req)
			si.Requests = append(si.Requests, r.Name)
		}
		sc.picker = newPicker(weights)
		scenarios[i] = sc
		info.Scenarios = append(info.Scenarios, si)
	}

	info.Started = time.Now()
	for i, s := range opts.Sinks {
		if err := s.Start(ctx, info); err != nil {
			err = fmt.Errorf("sink %d could not start: %w", i+1, err)
			// The sinks already started (the console's header is out)
			// end with a summary that says why nothing ran.
			none := metrics.Summary{HloadVersion: info.Version, RunID: info.RunID, Started: info.Started,
				Ended: time.Now(), Failed: err.Error()}
			for _, started := range opts.Sinks[:i] {
				started.Close(none)
			}
			return nil, err
		}
	}

	start := info.Started
	done := make(chan struct{})
	var wg sync.WaitGroup
	for _, sc := range scenarios {
		wg.Go(func() { sc.execute(runCtx, opts.Segment) })
	}
	go func() { wg.Wait(); close(done) }()

	var (
		sinkErr     error
		failure     error // a client that failed the run
		interrupted bool
		aborted     string
		stop        = opts.Stop
	)
	endAll := func() {
		for _, sc := range scenarios {
			sc.end()
		}
	}
	droppedBefore := make(map[string]int64, len(scenarios))
	gaugers := clientGaugers(clients)
	gaugesMax := map[string]int64{}
	writeSnapshot := func(from, to time.Time) {
		snap := metrics.Snapshot{
			Start:   from,
			End:     to,
			Elapsed: to.Sub(start),
			Series:  agg.Flush(from, to),
			VUs:     make(map[string]int, len(scenarios)),
			Dropped: make(map[string]int64, len(scenarios)),
		}
		for _, sc := range scenarios {
			snap.VUs[sc.name] = int(sc.vus.Load())
			dropped := sc.dropped.Load()
			snap.Dropped[sc.name] = dropped - droppedBefore[sc.name]
			droppedBefore[sc.name] = dropped
		}
		snap.Gauges = readGauges(gaugers)
		for name, v := range snap.Gauges {
			gaugesMax[name] = max(gaugesMax[name], v)
		}
		for _, s := range opts.Sinks {
			if err := s.Write(snap); err != nil && sinkErr == nil {
				sinkErr = err
			}
		}
	}

	ticker := time.NewTicker(interval)
	last := start
loop:
	for {
		select {
		case <-done:
			break loop
		case <-stop:
			interrupted = true
			stop = nil
			endAll()
		case <-ctx.Done():
			interrupted = true
			endAll()
			cancelRun()
			<-done
			break loop
		case failure = <-failures:
			// Like an abort, but calls in flight are cancelled at once:
			// the protocol behind them is gone.
			endAll()
			cancelRun()
			<-done
			break loop
		case now := <-ticker.C:
			writeSnapshot(last, now)
			last = now
			if aborted == "" {
				if th := firstAbort(test.Thresholds, agg, now.Sub(start)); th != nil {
					aborted = describe(th)
					endAll()
					cancelRun()
				}
			}
		}
	}
	ticker.Stop()
	if failure == nil {
		// A failure as the last calls ended may have turned some of them
		// into errors; the run did not go as planned.
		select {
		case failure = <-failures:
		default:
		}
	}
	end := time.Now()
	writeSnapshot(last, end)

	sum := buildSummary(test, agg, scenarios, info, end)
	sum.Interrupted = interrupted
	if len(gaugesMax) > 0 {
		sum.GaugesMax = gaugesMax
	}
	sum.Aborted = aborted
	if failure != nil {
		sum.Failed = failure.Error()
		sum.Passed = false
	}
	for key, msg := range state.evalErrors {
		sum.Warnings = append(sum.Warnings, fmt.Sprintf("%s: expressions failed at run time: %s", key, msg))
	}
	sum.Warnings = append(sum.Warnings, generatorWarnings(sum)...)
	sort.Strings(sum.Warnings)

	var closeErrs []error
	for _, s := range opts.Sinks {
		if err := s.Close(*sum); err != nil {
			closeErrs = append(closeErrs, err)
		}
	}
	if sinkErr != nil {
		closeErrs = append([]error{sinkErr}, closeErrs...)
	}
	var runErr error
	if len(closeErrs) > 0 {
		runErr = fmt.Errorf("sink failed: %w", errors.Join(closeErrs...))
	}
	if failure != nil {
		runErr = errors.Join(fmt.Errorf("the run failed: %w", failure), runErr)
	}
	return sum, runErr
}

// clientGaugers returns the clients that report gauges.
func clientGaugers(clients map[string]protocols.Client) []protocols.Gauger {
	var gs []protocols.Gauger
	for _, c := range clients {
		if g, ok := c.(protocols.Gauger); ok {
			gs = append(gs, g)
		}
	}
	return gs
}

// readGauges adds up the gauges of gs by name, or returns nil when none
// reports any.
func readGauges(gs []protocols.Gauger) map[string]int64 {
	var out map[string]int64
	for _, g := range gs {
		g.Gauges(func(name string, v int64) {
			if out == nil {
				out = map[string]int64{}
			}
			out[name] += v
		})
	}
	return out
}

// watchFailures merges the Failed channels of the clients that have one
// into a channel that delivers the first failure. stop ends the watching
// goroutines; call it before the clients are closed.
func watchFailures(clients map[string]protocols.Client) (failures <-chan error, stop func()) {
	out := make(chan error, 1)
	quit := make(chan struct{})
	for name, c := range clients {
		f, ok := c.(protocols.Failer)
		if !ok {
			continue
		}
		ch := f.Failed()
		go func() {
			select {
			case err, ok := <-ch:
				if ok && err != nil {
					select {
					case out <- fmt.Errorf("target %q: %w", name, err):
					default: // another client failed first
					}
				}
			case <-quit:
			}
		}()
	}
	return out, func() { close(quit) }
}

// openClients opens one client per target that a request uses. An
// isolated target's protocol comes from opts.Isolated.
func openClients(ctx context.Context, test *config.Test, opts Options) (map[string]protocols.Client, error) {
	used := map[string]bool{}
	for _, s := range test.Scenarios {
		for _, r := range s.Requests {
			used[r.Target] = true
		}
	}
	clients := map[string]protocols.Client{}
	for _, t := range test.Targets {
		if !used[t.Name] {
			continue
		}
		p, err := targetProtocol(t, opts)
		if err != nil {
			closeAll(clients)
			return nil, err
		}
		c, err := p.Open(ctx, t.Config)
		if err != nil {
			closeAll(clients)
			return nil, fmt.Errorf("target %q (%s): %w", t.Name, t.DeclRange, err)
		}
		clients[t.Name] = c
	}
	return clients, nil
}

func targetProtocol(t *config.Target, opts Options) (protocols.Protocol, error) {
	if t.Isolate {
		if opts.Isolated == nil {
			return nil, fmt.Errorf("target %q (%s): isolate = true, but this run cannot start isolated protocols", t.Name, t.DeclRange)
		}
		p, err := opts.Isolated(t)
		if err != nil {
			return nil, fmt.Errorf("target %q (%s): isolating protocol %q: %w", t.Name, t.DeclRange, t.Protocol, err)
		}
		return p, nil
	}
	p, ok := opts.Protocols.Lookup(t.Protocol)
	if !ok {
		return nil, fmt.Errorf("target %q: unknown protocol %q", t.Name, t.Protocol)
	}
	return p, nil
}

func closeAll(clients map[string]protocols.Client) {
	for _, c := range clients {
		c.Close()
	}
}

func needsBody(checks []config.Check) bool {
	for _, c := range checks {
		if c.BodyContains != "" {
			return true
		}
	}
	return false
}

func buildSummary(test *config.Test, agg *metrics.Aggregator, scenarios []*scenarioRun, info metrics.RunInfo, end time.Time) *metrics.Summary {
	elapsed := end.Sub(info.Started)
	sum := &metrics.Summary{
		HloadVersion: info.Version,
		RunID:        info.RunID,
		Started:      info.Started,
		Ended:        end,
		DurationS:    elapsed.Seconds(),
		Scenarios:    map[string]*metrics.ScenarioSummary{},
	}
	requests := agg.Requests(elapsed)
	for _, sc := range scenarios {
		sum.Scenarios[sc.name] = &metrics.ScenarioSummary{
			Executor:          sc.cfg.Executor.Name(),
			Model:             model(sc.cfg.Executor),
			Iterations:        sc.iterations.Load(),
			DroppedIterations: sc.dropped.Load(),
			Requests:          requests[sc.name],
		}
	}
	_, sum.Metrics = agg.Totals("", "", elapsed)
	sum.Passed = true
	for _, th := range test.Thresholds {
		res := evaluate(th, agg, elapsed)
		sum.Thresholds = append(sum.Thresholds, res)
		sum.Passed = sum.Passed && res.Passed
	}
	return sum
}

// describe names a threshold for messages: its metric, filters and
// condition.
func describe(th *config.Threshold) string {
	parts := []string{th.Metric}
	if th.Scenario != "" {
		parts = append(parts, "scenario="+th.Scenario)
	}
	if th.Request != "" {
		parts = append(parts, "request="+th.Request)
	}
	return strings.Join(parts, " ") + ": " + th.Condition.Text
}

// lateStart is the p99 start lateness above which the open model says that
// hload itself could not keep to its schedule. Go's timers alone account for
// up to about a millisecond.
const lateStart = 5.0 // ms

// generatorWarnings says when hload was near its own limit, so a slow
// generator is never mistaken for a slow server: open-model iterations that
// started late against their plan.
func generatorWarnings(sum *metrics.Summary) []string {
	var out []string
	for name, sc := range sum.Scenarios {
		worst := 0.0
		for _, r := range sc.Requests {
			worst = max(worst, r.Metrics[metrics.MetricStartLateness].P99)
		}
		if worst > lateStart {
			out = append(out, fmt.Sprintf("scenario %q: iterations started up to %.1f ms late (p99 start_lateness): hload was near its own limit or short of VUs, and the response times include that delay", name, worst))
		}
	}
	return out
}
