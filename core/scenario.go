package core

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hload/hload/config"
	"github.com/hload/hload/metrics"
	"github.com/hload/hload/protocols"
)

// scenarioRun is one scenario while it runs: its requests, its VUs and the
// two stages of its end. First `ending` closes: no new iteration starts.
// Then, after the graceful stop, callCtx is cancelled: calls still in flight
// are cancelled and counted as interrupted.
type scenarioRun struct {
	run       *runState
	cfg       *config.Scenario
	name      string
	requests  []request // every request of the scenario; flows point into it
	mix       []flow    // what an iteration picks from, by weight
	picker    *picker   // indexes into mix
	setup     *flow     // run once per VU before its first iteration; nil if none
	thinkTime config.ThinkTime
	// setupBackoff is the first wait before a failed setup is tried
	// again; it doubles up to maxSetupBackoff.
	setupBackoff time.Duration
	// setupTries bounds how many times a VU tries its setup, 0 meaning
	// no bound. Only the iterations executor sets it: its end waits for
	// every VU, so a VU that retried a failing login forever would hold
	// the run forever. The executors that run for a time end it anyway.
	setupTries  int
	setupGaveUp atomic.Int64 // VUs that tried their setup setupTries times

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

	agg      *metrics.Aggregator // the run's, read by a capacity search
	capacity *capacitySearch     // a capacity search's state; nil for other executors
}

// newScenarioRun binds a scenario's requests to their clients, series and
// feeders, and its flows to their requests. planned is the plan's
// iteration count, or -1.
func newScenarioRun(r *run, s *config.Scenario, planned int64) *scenarioRun {
	sc := &scenarioRun{
		run:          r.state,
		cfg:          s,
		name:         s.Name,
		thinkTime:    s.ThinkTime,
		ending:       make(chan struct{}),
		planned:      planned,
		open:         model(s.Executor) == "open",
		setupBackoff: setupBackoff,
		agg:          r.agg,
	}
	if e, ok := s.Executor.(config.CapacitySearch); ok {
		sc.capacity = newCapacitySearch(e)
	}
	sc.callCtx, sc.cancelCall = context.WithCancel(r.runCtx)
	// One cursor per feeder per scenario: sequential feeders walk their
	// rows per scenario, unique ones share the feeder's count.
	cursors := map[*config.Feeder]*feederCursor{}
	sc.requests = make([]request, len(s.Requests))
	byConfig := make(map[*config.Request]*request, len(s.Requests))
	for j, rq := range s.Requests {
		req := &sc.requests[j]
		client := r.clients[rq.Target]
		needles, needle := checkSubstrings(rq.Checks)
		*req = request{
			cfg:    rq,
			client: client,
			caller: callerOf(client),
			series: r.agg.Series(s.Name, rq.Name),
			// A client that searches the body as it streams needs to keep
			// none for the checks; another keeps it for the core to
			// search.
			keepBody:     rq.NeedsBody() || len(needles) > 0 && !searchesBody(client),
			keepHeaders:  rq.NeedsHeaders(),
			bodyContains: needles,
			needle:       needle,
			maxBody:      maxBody(rq),
			prepared:     prepare(client, rq),
			template:     template(client, rq),
		}
		for _, f := range rq.Feeders() {
			fc := cursors[f]
			if fc == nil {
				fc = &feederCursor{name: f.Name, feeder: f, cursor: segmentCursor(f, r.opts.Segment)}
				cursors[f] = fc
			}
			req.feeders = append(req.feeders, fc)
		}
		byConfig[rq] = req
	}
	weights := make([]int, len(s.Mix))
	sc.mix = make([]flow, len(s.Mix))
	for j, f := range s.Mix {
		weights[j] = f.Weight
		sc.mix[j] = bindFlow(r, s.Name, f, byConfig)
	}
	if s.Setup != nil {
		setup := bindFlow(r, s.Name, s.Setup, byConfig)
		sc.setup = &setup
	}
	sc.picker = newPicker(weights)
	return sc
}

// checkSubstrings returns the distinct substrings the checks look for in
// the body, and for each check the index of its own, -1 for none.
func checkSubstrings(checks []config.Check) (needles []string, needle []int) {
	needle = make([]int, len(checks))
	for i, c := range checks {
		needle[i] = -1
		if c.BodyContains == "" {
			continue
		}
		needle[i] = slices.Index(needles, c.BodyContains)
		if needle[i] < 0 {
			needle[i] = len(needles)
			needles = append(needles, c.BodyContains)
		}
	}
	return needles, needle
}

// maxBody is rq's max_body; a request built by hand rather than loaded
// has the default.
func maxBody(rq *config.Request) int64 {
	if rq.MaxBody <= 0 {
		return config.DefaultMaxBody
	}
	return rq.MaxBody
}

// searchesBody reports whether c looks for a call's BodyContains itself.
func searchesBody(c protocols.Client) bool {
	bs, ok := c.(protocols.BodySearcher)
	return ok && bs.SearchesBody()
}

// describe is the scenario as the sinks are told of it at the start.
func (sc *scenarioRun) describe() metrics.ScenarioInfo {
	si := metrics.ScenarioInfo{Name: sc.name, Executor: sc.cfg.Executor.Name(), Model: model(sc.cfg.Executor)}
	for _, r := range sc.cfg.Requests {
		si.Requests = append(si.Requests, r.Name)
	}
	return si
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

// loop runs v's setup unless it is done, then iterations until stop
// closes, the scenario ends, or limit iterations are done (0: no limit).
func (sc *scenarioRun) loop(v *vu, stop <-chan struct{}, limit int) {
	if !v.ready(stop) {
		return
	}
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
	case config.CapacitySearch:
		sc.runCapacitySearch(e) // never sharded: see checkSegment
	}
}

// endAfter ends the scenario after d, unless it ended before.
func (sc *scenarioRun) endAfter(d time.Duration) (cancel func()) {
	t := time.AfterFunc(d, sc.end)
	return func() { t.Stop() }
}
