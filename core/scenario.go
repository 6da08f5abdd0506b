package core

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hload/hload/config"
	"github.com/hload/hload/core/metrics"
)

// cancelWait is how long a scenario waits for its calls once they were
// cancelled. A protocol's Do must return soon after its context ends; one
// that does not would hold the run forever, so after cancelWait the
// scenario ends without it and says so.
const cancelWait = time.Second

// scenarioRun is one scenario while it runs: its requests, its VUs and the
// two stages of its end. First `ending` closes: no new iteration starts.
// Then, after the graceful stop, callCtx is cancelled: calls still in flight
// are cancelled and counted as interrupted.
type scenarioRun struct {
	run       *runState
	cfg       *config.Scenario
	name      string
	requests  []request
	picker    *picker
	thinkTime config.ThinkTime

	open       bool // an arrival-rate executor: the open model
	iterations atomic.Int64
	dropped    atomic.Int64 // open model: iterations with no free VU
	vus        atomic.Int64 // active VUs, as the executor planned them

	ending     chan struct{}
	endOnce    sync.Once
	callCtx    context.Context
	cancelCall context.CancelFunc

	poolMu sync.Mutex
	pool   []*vu // VUs not running, for reuse
	all    []*vu // every VU of the scenario, to find calls that hang

	// planned is the number of iterations the plan promised, or -1 when
	// the executor runs for a time instead.
	planned int64
	started time.Time
	// ranOut is the unique data feeder that ran out, when one did.
	ranOut atomic.Pointer[feederRanOut]
	// abandoned is set when calls ignored their cancellation and the
	// scenario ended without them; what they report later is dropped.
	abandoned atomic.Bool
	stuck     map[*request]int // calls still running when abandoned
}

// feederRanOut says which unique feeder ran out, and when.
type feederRanOut struct {
	name       string
	at         time.Duration // since the scenario started
	iterations int64         // iterations done by then
}

// newScenarioRun binds a scenario's requests to their clients, series and
// feeders. planned is the plan's iteration count, or -1.
func newScenarioRun(r *run, s *config.Scenario, planned int64) *scenarioRun {
	sc := &scenarioRun{
		run:       r.state,
		cfg:       s,
		name:      s.Name,
		thinkTime: s.ThinkTime,
		ending:    make(chan struct{}),
		planned:   planned,
		open:      model(s.Executor) == "open",
	}
	sc.callCtx, sc.cancelCall = context.WithCancel(r.runCtx)
	// One cursor per feeder per scenario: sequential feeders walk their
	// rows per scenario, unique ones share the feeder's count.
	cursors := map[*config.Feeder]*feederCursor{}
	weights := make([]int, len(s.Requests))
	for j, rq := range s.Requests {
		weights[j] = rq.Weight
		req := request{
			cfg:      rq,
			client:   r.clients[rq.Target],
			series:   r.agg.Series(s.Name, rq.Name),
			keepBody: needsBody(rq.Checks),
		}
		for _, f := range rq.Feeders() {
			fc := cursors[f]
			if fc == nil {
				fc = &feederCursor{name: f.Name, feeder: f, cursor: f.NewCursor()}
				cursors[f] = fc
			}
			req.feeders = append(req.feeders, fc)
		}
		sc.requests = append(sc.requests, req)
	}
	sc.picker = newPicker(weights)
	return sc
}

func needsBody(checks []config.Check) bool {
	for _, c := range checks {
		if c.BodyContains != "" {
			return true
		}
	}
	return false
}

// describe is the scenario as the sinks are told of it at the start.
func (sc *scenarioRun) describe() metrics.ScenarioInfo {
	si := metrics.ScenarioInfo{Name: sc.name, Executor: sc.cfg.Executor.Name(), Model: model(sc.cfg.Executor)}
	for _, r := range sc.cfg.Requests {
		si.Requests = append(si.Requests, r.Name)
	}
	return si
}

// noteRanOut records that feeder f ran out, and ends the scenario: a
// unique feeder's rows are each used once, and there are no more.
func (sc *scenarioRun) noteRanOut(f *feederCursor) {
	sc.ranOut.CompareAndSwap(nil, &feederRanOut{
		name:       f.name,
		at:         time.Since(sc.started),
		iterations: sc.iterations.Load(),
	})
	sc.end()
}

// feederWarning says that a unique feeder ended the scenario before its
// plan, or "".
func (sc *scenarioRun) feederWarning() string {
	out := sc.ranOut.Load()
	if out == nil {
		return ""
	}
	done := max(out.iterations, sc.iterations.Load())
	head := fmt.Sprintf("scenario %q: data feeder %q (mode unique) ran out of rows", sc.name, out.name)
	if sc.planned >= 0 {
		return fmt.Sprintf("%s: the scenario ended at %d of %d planned iterations", head, done, sc.planned)
	}
	d, _ := plannedDuration(sc.cfg.Executor)
	return fmt.Sprintf("%s: the scenario ended after %d iterations, %s into its planned %s",
		head, done, out.at.Round(100*time.Millisecond), d)
}

// cancelWarning names the requests whose calls ignored cancellation, or
// says "".
func (sc *scenarioRun) cancelWarning() string {
	if !sc.abandoned.Load() {
		return ""
	}
	var parts []string
	total := 0
	for _, req := range slices.SortedFunc(maps.Keys(sc.stuck), func(a, b *request) int {
		return strings.Compare(a.cfg.Name, b.cfg.Name)
	}) {
		n := sc.stuck[req]
		total += n
		parts = append(parts, fmt.Sprintf("%d of request %q (target %q)", n, req.cfg.Name, req.cfg.Target))
	}
	return fmt.Sprintf("scenario %q: %d calls ignored cancellation (%s): still running %s after the graceful stop ran out and they were cancelled; hload stopped waiting, and they are not in the figures",
		sc.name, total, strings.Join(parts, ", "), cancelWait)
}

// end stops new iterations; in-flight ones get the graceful stop.
func (sc *scenarioRun) end() {
	sc.endOnce.Do(func() { close(sc.ending) })
}

// acquire returns an idle VU, or a new one with the next dense id.
func (sc *scenarioRun) acquire() *vu {
	sc.poolMu.Lock()
	defer sc.poolMu.Unlock()
	if n := len(sc.pool); n > 0 {
		v := sc.pool[n-1]
		sc.pool = sc.pool[:n-1]
		return v
	}
	v := newVU(sc.run.nextVU.Add(1), sc)
	sc.all = append(sc.all, v)
	return v
}

func (sc *scenarioRun) release(v *vu) {
	sc.poolMu.Lock()
	sc.pool = append(sc.pool, v)
	sc.poolMu.Unlock()
}

// loop runs iterations on v until stop closes, the scenario ends, or limit
// iterations are done (0: no limit).
func (sc *scenarioRun) loop(v *vu, stop <-chan struct{}, limit int) {
	for n := 0; limit == 0 || n < limit; n++ {
		if v.stopped(stop) {
			return
		}
		if !v.runIteration(sc.callCtx, time.Time{}) {
			return
		}
		if limit > 0 && n == limit-1 {
			return // no think time after a VU's last iteration
		}
		if !v.think(stop) {
			return
		}
	}
}

// execute runs the scenario's executor to its end, including the graceful
// stop, and returns when no call of the scenario is in flight.
func (sc *scenarioRun) execute(ctx context.Context, seg Segment) {
	defer sc.cancelCall()
	sc.started = time.Now()
	graceDone := make(chan struct{})
	go func() {
		defer close(graceDone)
		// callCtx ends when the executor has returned (every VU is done)
		// or the run was cancelled; then there is nothing left to wait for.
		select {
		case <-sc.ending:
		case <-sc.callCtx.Done():
			return
		}
		t := time.NewTimer(sc.cfg.GracefulStop)
		defer t.Stop()
		select {
		case <-t.C:
			sc.cancelCall()
		case <-sc.callCtx.Done():
		}
	}()
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		sc.runExecutor(seg)
	}()
	sc.await(finished)
	sc.vus.Store(0)
	sc.end()
	sc.cancelCall()
	<-graceDone
}

// await waits for the executor to return. Once the scenario's calls are
// cancelled, it waits cancelWait more at most: then it stops waiting for
// the calls still running, which ignored their cancellation.
func (sc *scenarioRun) await(finished <-chan struct{}) {
	select {
	case <-finished:
		return
	case <-sc.callCtx.Done():
	}
	t := time.NewTimer(cancelWait)
	defer t.Stop()
	select {
	case <-finished:
	case <-t.C:
		sc.abandon()
	}
}

// abandon counts the calls still running, per request, and drops what
// they report from now on: the summary is being written.
func (sc *scenarioRun) abandon() {
	stuck := map[*request]int{}
	sc.poolMu.Lock()
	for _, v := range sc.all {
		if req := v.calling.Load(); req != nil {
			stuck[req]++
		}
	}
	sc.poolMu.Unlock()
	sc.stuck = stuck
	// Set last: a reader that sees it set sees stuck.
	sc.abandoned.Store(true)
}

// runExecutor runs the scenario's executor to its end.
func (sc *scenarioRun) runExecutor(seg Segment) {
	switch e := sc.cfg.Executor.(type) {
	case config.ConstantVUs:
		sc.runConstantVUs(e, seg)
	case config.RampingVUs:
		sc.runRampingVUs(e, seg)
	case config.Iterations:
		sc.runIterations(e, seg)
	case config.ConstantArrivalRate:
		sc.runArrivals(constantRate(e), e.PreAllocatedVUs, e.MaxVUs, e.MaxQueueWait, seg)
	case config.RampingArrivalRate:
		sc.runArrivals(rampingRate(e), e.PreAllocatedVUs, e.MaxVUs, e.MaxQueueWait, seg)
	}
}

// endAfter ends the scenario after d, unless it ended before.
func (sc *scenarioRun) endAfter(d time.Duration) (cancel func()) {
	t := time.AfterFunc(d, sc.end)
	return func() { t.Stop() }
}
