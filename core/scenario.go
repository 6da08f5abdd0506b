package core

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hload/hload/config"
)

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
	return newVU(sc.run.nextVU.Add(1), sc)
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
	sc.vus.Store(0)
	sc.end()
	sc.cancelCall()
	<-graceDone
}

// endAfter ends the scenario after d, unless it ended before.
func (sc *scenarioRun) endAfter(d time.Duration) (cancel func()) {
	t := time.AfterFunc(d, sc.end)
	return func() { t.Stop() }
}
