package core

import (
	"fmt"
	"sync"
	"time"

	"github.com/hload/hload/metrics"
)

// runScenarios starts every scenario and writes a snapshot each interval
// until they have all ended, the run is stopped or cancelled, a client
// fails the run, or an abort threshold ends it.
func (r *run) runScenarios() {
	done := make(chan struct{})
	var wg sync.WaitGroup
	for _, sc := range r.scenarios {
		wg.Go(func() { sc.execute(r.runCtx, r.opts.Segment) })
	}
	go func() { wg.Wait(); close(done) }()

	ticker := time.NewTicker(r.interval)
	defer ticker.Stop()
	stop := r.opts.Stop
	for {
		select {
		case <-done:
			return
		case <-stop:
			r.interrupted = true
			stop = nil
			r.endScenarios()
		case <-r.ctx.Done():
			r.interrupted = true
			r.cancelNow(done)
			return
		case r.failure = <-r.failures:
			// Like an abort, but calls in flight are cancelled at once:
			// the protocol behind them is gone.
			r.cancelNow(done)
			return
		case <-ticker.C:
			r.tick()
		}
	}
}

// endScenarios starts no new iteration; calls in flight get the graceful
// stop.
func (r *run) endScenarios() {
	for _, sc := range r.scenarios {
		sc.end()
	}
}

// cancelNow ends the scenarios, cancels the calls in flight and waits for
// the scenarios to return.
func (r *run) cancelNow(done <-chan struct{}) {
	r.endScenarios()
	r.cancelRun()
	<-done
}

// tick writes the interval's snapshot and checks the abort thresholds.
func (r *run) tick() {
	// The flush's own time, not the tick's: a late tick would otherwise
	// put the calls of a longer interval over a shorter length.
	now := time.Now()
	r.snapshots.write(r, now, false)
	if r.aborted != "" {
		return
	}
	if th := firstAbort(r.test.Thresholds, r.agg, now.Sub(r.info.Started)); th != nil {
		r.aborted = describe(th)
		r.endScenarios()
		r.cancelRun()
	}
}

// drain takes in the last interval's figures. A client failure that came
// as the last calls ended (it may have turned some of them into errors)
// is taken in when the clients are closed (closeClients).
func (r *run) drain() {
	r.end = time.Now()
	r.snapshots.write(r, r.end, true)
}

// snapshotState is what one snapshot carries over to the next.
type snapshotState struct {
	last          time.Time // end of the last snapshot
	droppedBefore map[string]int64
	gaugesMax     map[string]int64
	// previous is the last snapshot's start and counts, for the rate of
	// a short final interval.
	previous struct {
		start  time.Time
		counts map[seriesName]int64
		flows  map[seriesName]int64 // flows ended, by (scenario, flow)
	}
	// calls and failed count each series' calls so far, to see a request
	// that fails every time while the run goes on.
	calls, failed map[seriesName]int64
	// flowsEnded and flowsFailed count each flow's runs so far (the setup
	// is the flow "setup"), for the same purpose.
	flowsEnded, flowsFailed map[seriesName]int64
	// flowKinds counts each flow's failed runs so far by error kind, to
	// say why setups fail.
	flowKinds map[seriesName]map[string]int64
	warned    map[string]bool
	// generator watches hload's own CPU; saturated is its live warning,
	// once it has one, for warnings to say.
	generator *generatorWatch
	saturated string

	// iterationsBefore are the iterations each scenario ended before.
	iterationsBefore map[string]int64
	// watched: a sink shows the run live, and each snapshot carries the
	// run so far (Watcher).
	watched bool
	// soFar is the last run so far built, at soFarAt, which took
	// soFarCost. A new one is built once the time since soFarAt is at
	// least soFarCost / soFarBudget: the live view takes at most that
	// share of the run's time (1 %), however many requests it
	// summarises. Until then snapshots carry the last one.
	soFar       *metrics.Summary
	soFarAt     time.Time
	soFarCost   time.Duration
	soFarBudget float64
}

type seriesName struct{ scenario, request string }

func (s *snapshotState) start(r *run) {
	s.last = r.info.Started
	s.droppedBefore = make(map[string]int64, len(r.scenarios))
	s.iterationsBefore = make(map[string]int64, len(r.scenarios))
	s.gaugesMax = map[string]int64{}
	s.calls = map[seriesName]int64{}
	s.failed = map[seriesName]int64{}
	s.flowsEnded = map[seriesName]int64{}
	s.flowsFailed = map[seriesName]int64{}
	s.flowKinds = map[seriesName]map[string]int64{}
	s.warned = map[string]bool{}
	s.generator = newGeneratorWatch(newSelfMeter(), time.Now, availableCores(), r.interval)
	s.watched = watches(r.opts.Sinks)
	s.soFarBudget = 0.01
}

// write flushes the interval that ends at to and hands it to every sink.
func (s *snapshotState) write(r *run, to time.Time, final bool) {
	from := s.last
	snap := metrics.Snapshot{
		Start:     from,
		End:       to,
		RateStart: from,
		Final:     final,
		Elapsed:   to.Sub(r.info.Started),
		Series:    r.agg.Flush(from, to),
		// Over the same interval as the series, so a flow's rate and its
		// steps' rates read alike.
		Flows:   r.agg.FlushFlows(from, to),
		VUs:     make(map[string]int, len(r.scenarios)),
		Dropped: make(map[string]int64, len(r.scenarios)),
		Gauges:  readGauges(r.gaugers),
		// Iterations ended, for the achieved rate of the HTML report.
		Iterations: make(map[string]int64, len(r.scenarios)),
	}
	s.last = to
	if final && to.Sub(from) < r.interval && !s.previous.start.IsZero() {
		s.spreadRates(&snap)
	}
	s.keep(&snap)
	for _, sc := range r.scenarios {
		snap.VUs[sc.name] = int(sc.vus.Load())
		dropped := sc.dropped.Load()
		snap.Dropped[sc.name] = dropped - s.droppedBefore[sc.name]
		s.droppedBefore[sc.name] = dropped
		addCapacityProgress(&snap, sc)
		iterations := sc.iterations.Load()
		snap.Iterations[sc.name] = iterations - s.iterationsBefore[sc.name]
		s.iterationsBefore[sc.name] = iterations
	}
	for name, v := range snap.Gauges {
		s.gaugesMax[name] = max(s.gaugesMax[name], v)
	}
	r.agg.EndPoint(from, to, metrics.PointLevels{VUs: snap.VUs, Iterations: snap.Iterations, Dropped: snap.Dropped, Gauges: snap.Gauges}, final)
	// Once per interval, never per call: the process's own counters.
	if w := s.generator.observe(worstLateness(snap.Series), final); w != "" {
		s.saturated = w
	}
	snap.GeneratorCPU = s.generator.lastCPU()
	snap.Warnings = s.warnings(r, &snap)
	if s.watched {
		snap.SoFar = s.runSoFar(r, to, final)
	}
	for i, sink := range r.opts.Sinks {
		r.sinkWrote(i, sink.Write(snap))
	}
}

// runSoFar returns the run so far for the snapshot that ends at to: built
// anew when it is due (see soFarBudget) or the run has ended, else the
// last one built.
func (s *snapshotState) runSoFar(r *run, to time.Time, final bool) *metrics.Summary {
	due := s.soFar == nil || final || float64(to.Sub(s.soFarAt)) >= float64(s.soFarCost)/s.soFarBudget
	if !due {
		return s.soFar
	}
	began := time.Now()
	s.soFar = r.soFar(to)
	s.soFarAt, s.soFarCost = to, time.Since(began)
	return s.soFar
}

// spreadRates puts the rates of a final interval shorter than the interval
// over the previous interval and this one: the calls that end with the run
// often finish within milliseconds of the last tick, and over those
// milliseconds alone they would read as thousands per second.
func (s *snapshotState) spreadRates(snap *metrics.Snapshot) {
	snap.RateStart = s.previous.start
	seconds := snap.End.Sub(snap.RateStart).Seconds()
	for i := range snap.Series {
		f := &snap.Series[i]
		n := f.Count + s.previous.counts[seriesName{f.Scenario, f.Request}]
		f.RPS = float64(n) / seconds
	}
	for i := range snap.Flows {
		f := &snap.Flows[i]
		n := f.Count + s.previous.flows[seriesName{f.Scenario, f.Flow}]
		f.Rate = float64(n) / seconds
	}
}

// keep remembers the snapshot's counts for the next one.
func (s *snapshotState) keep(snap *metrics.Snapshot) {
	s.previous.start = snap.Start
	s.previous.counts = make(map[seriesName]int64, len(snap.Series))
	for _, f := range snap.Series {
		k := seriesName{f.Scenario, f.Request}
		s.previous.counts[k] = f.Count
		s.calls[k] += f.Count
		s.failed[k] += f.Errors
	}
	s.previous.flows = make(map[seriesName]int64, len(snap.Flows))
	for _, f := range snap.Flows {
		k := seriesName{f.Scenario, f.Flow}
		s.previous.flows[k] = f.Count
		s.flowsEnded[k] += f.Count
		s.flowsFailed[k] += f.Failed
		for kind, n := range f.FailedByKind {
			if s.flowKinds[k] == nil {
				s.flowKinds[k] = map[string]int64{}
			}
			s.flowKinds[k][kind] += n
		}
	}
}

// warnings returns the problems first seen in this snapshot: a data feeder
// that ran out, a request or a flow whose every call or run so far failed,
// a VU setup that failed, calls that ignored cancellation, hload saturated.
// Each is said once.
func (s *snapshotState) warnings(r *run, snap *metrics.Snapshot) []string {
	var out []string
	say := func(key, text string) {
		if text != "" && !s.warned[key] {
			s.warned[key] = true
			out = append(out, text)
		}
	}
	for _, sc := range r.scenarios {
		say("feeder "+sc.name, sc.feederWarning())
		say("cancel "+sc.name, sc.cancelWarning())
	}
	say("generator", s.saturated)
	for _, err := range r.writeErrs {
		if err != nil {
			// Said in the next snapshot after the failed Write: the run
			// goes on, and its results will be incomplete.
			say("sink "+err.Error(), "a sink failed; the run goes on, and will not pass: "+err.Error())
		}
	}
	for _, f := range snap.Series {
		k := seriesName{f.Scenario, f.Request}
		// Once per request: the first panics are the telling ones.
		if key := "panic " + f.Scenario + "/" + f.Request; !s.warned[key] {
			say(key, livePanicWarning(r, &f))
		}
		if n := s.calls[k]; n > 0 && s.failed[k] == n {
			say("failed "+f.Scenario+"/"+f.Request, fmt.Sprintf(
				"scenario %q, request %q: every call so far failed (%d of %d)", f.Scenario, f.Request, n, n))
		}
	}
	for _, f := range snap.Flows {
		k := seriesName{f.Scenario, f.Flow}
		n, failed := s.flowsEnded[k], s.flowsFailed[k]
		switch {
		case f.Flow == metrics.SetupFlow && failed > 0:
			say("setup "+f.Scenario, fmt.Sprintf(
				"scenario %q: %d of %d VU setup attempts so far failed (%s); a VU whose setup fails retries it after a backoff and runs no iteration meanwhile",
				f.Scenario, failed, n, kinds(s.flowKinds[k])))
		case f.Flow != metrics.SetupFlow && n > 0 && failed == n:
			say("flow failed "+f.Scenario+"/"+f.Flow, fmt.Sprintf(
				"scenario %q, flow %q: every run so far failed (%d of %d: %s)", f.Scenario, f.Flow, n, n, kinds(s.flowKinds[k])))
		}
	}
	return out
}
