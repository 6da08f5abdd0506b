package core

import (
	"cmp"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hload/hload/protocols"
)

// pool is the open model's VU pool: idle VUs, how many exist, and the
// backlog of iterations waiting for a VU once max_vus are all busy.
type pool struct {
	sc      *scenarioRun
	maxVUs  int
	maxWait time.Duration // how long an iteration may wait for a VU; 0 drops at once

	wg sync.WaitGroup

	mu  sync.Mutex // guards all, idle and backlog
	all []*vu
	// idle is a stack: the VU that went idle last is handed the next
	// iteration. At a rate the target keeps up with, the few VUs it takes
	// run every iteration, their stacks, buffers and connections warm in
	// the CPU's caches, and the rest of the pool stays parked; a queue
	// would walk every VU of the pool, and every connection, in turn.
	idle    []*vu
	backlog []time.Time // planned starts, oldest first
	// growing counts the VUs started for waiting iterations that are
	// not ready yet: still connecting or running their setup.
	growing int
	// since is when the backlog last became non-empty; growTimer, when
	// armed, calls grow once it has waited growGrace.
	since time.Time
	// holdUntil is when the pool may grow again after hload itself fell
	// behind: see dispatch.
	holdUntil time.Time
	// runQueue tells whether the VUs the backlog waits for wait for a
	// CPU rather than on the target: see waitsForCPU. Its window starts
	// with the backlog.
	runQueue  *runQueueWaits
	growTimer *time.Timer
	armed     bool
	closed    bool // no VU starts after close

	// connectors are the scenario's clients that open a VU's connections
	// ahead of its first call. connecting admits maxConnecting VUs at a
	// time to do so, whether pre-allocated or added, so that the pool's
	// connects never arrive as one burst: a server whose accept queue
	// overflows drops SYNs, and each dropped one costs its call a second.
	connectors []protocols.Connector
	connecting chan struct{}
	// preconnectFailed stops the pre-allocated VUs that have not
	// connected yet from trying: each would wait as long for the same
	// failure, which the calls report anyway.
	preconnectFailed atomic.Bool
	// started is set once the pre-allocated VUs have tried: a VU
	// started after it is one the pool grew by.
	started atomic.Bool
}

// maxConnecting is how many VUs of a pool connect at once.
const maxConnecting = 8

// growGrace is how long iterations wait for a busy VU before the pool
// grows for them. After a stall of hload's own (the machine's scheduler,
// a collection) the pacer starts every iteration that came due at once,
// and VUs that were busy with fast calls take them within this; more VUs
// would not have helped, but each would have opened a connection.
const growGrace = time.Millisecond

// The backlog waits for hload's own CPU when at least cpuWaitShare of the
// goroutine starts since it began (of at least cpuWaitSampled the runtime
// sampled) had waited cpuWaitLong or longer to run. A quarter of starts a
// quarter of a millisecond late is a run queue dozens of VUs deep; a
// machine with CPU to spare starts them within microseconds.
const (
	cpuWaitLong    = 250 * time.Microsecond
	cpuWaitShare   = 0.25
	cpuWaitSampled = 4
)

// runArrivals is the open model: one pacer for the scenario starts
// iterations at their planned times, each on a free VU from a pool of
// preAllocated VUs that grows up to maxVUs. When every VU is busy, an
// iteration may wait up to maxWait for one; its response time still runs
// from its planned start, as wrk2 measures it. An iteration that cannot
// start in time is dropped and counted, never silently delayed.
func (sc *scenarioRun) runArrivals(a arrivals, preAllocated, maxVUs int, maxWait time.Duration, seg Segment) {
	p := sc.newPool(preAllocated, maxVUs, maxWait, seg)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	start := time.Now()
	end := start.Add(a.duration())
pace:
	for n := int64(0); ; n++ {
		at, ok := a.at(n)
		if !ok {
			break
		}
		// A sharded run splits the iterations round-robin, so every
		// machine follows the same schedule at 1/count of the rate.
		if seg.Count > 1 && int(n%int64(seg.Count)) != seg.Index {
			continue
		}
		planned := start.Add(at)
		if !planned.Before(end) {
			break
		}
		if wait := time.Until(planned); wait > 0 {
			timer.Reset(wait)
			select {
			case <-timer.C:
			case <-sc.ending:
				break pace
			}
		} else {
			// Catching up after a late wake-up: start every iteration
			// that is due without sleeping again.
			select {
			case <-sc.ending:
				break pace
			default:
			}
		}
		p.dispatch(planned)
	}
	sc.end()
	p.close()
}

// newPool starts this segment's share of a pool of preAllocated VUs that
// grows up to maxVUs, with their setups done, ready for dispatch.
func (sc *scenarioRun) newPool(preAllocated, maxVUs int, maxWait time.Duration, seg Segment) *pool {
	preAllocated = max(1, seg.Scale(preAllocated))
	maxVUs = max(preAllocated, seg.Scale(maxVUs))
	p := &pool{sc: sc, maxVUs: maxVUs, maxWait: maxWait, runQueue: newRunQueueWaits(),
		connectors: sc.connectors(), connecting: make(chan struct{}, maxConnecting)}
	p.growTimer = time.AfterFunc(time.Hour, func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		p.armed = false
		p.grow()
	})
	p.growTimer.Stop()
	if sc.setup == nil && len(p.connectors) == 0 {
		for range preAllocated {
			p.spawn(nil)
		}
		p.idle = slices.Clone(p.all)
	} else {
		p.setUp(preAllocated)
	}
	// The lowest ids on top, so that a light load runs on VU 1.
	p.mu.Lock()
	slices.SortFunc(p.idle, func(a, b *vu) int { return cmp.Compare(b.id, a.id) })
	p.mu.Unlock()
	p.started.Store(true)
	return p
}

// grown is called by a VU the pool grew by once it is ready, or failed
// its setup: the next may start.
func (p *pool) grown() {
	p.mu.Lock()
	p.growing--
	p.grow()
	p.mu.Unlock()
}

// grow starts a VU for each iteration that waits, up to maxConnecting at
// a time and max_vus in all, once the backlog has waited growGrace, and
// while the VUs it waits for are not waiting for a CPU. The caller holds
// mu.
func (p *pool) grow() {
	if p.closed || len(p.backlog) == 0 {
		return
	}
	now := time.Now()
	wait := growGrace - now.Sub(p.since)
	if hold := p.holdUntil.Sub(now); hold > wait {
		wait = hold
	}
	if wait <= 0 && p.waitsForCPU() {
		// Looked at again after growGrace, as a hold, so that the
		// runtime's histogram is read at most once per growGrace.
		p.holdUntil = now.Add(growGrace)
		wait = growGrace
	}
	if wait > 0 {
		if !p.armed {
			p.armed = true
			p.growTimer.Reset(wait)
		}
		return
	}
	for p.growing < maxConnecting && p.growing < len(p.backlog) && len(p.all) < p.maxVUs {
		p.growing++
		p.spawn(p.grown)
	}
}

// waitsForCPU says that the backlog waits for VUs that wait for hload's
// own CPU: their responses have come and they wait to run, or they keep
// every core hload may use busy. A VU added
// then would start no iteration sooner; it would wait in the same queue,
// and open one more connection, which a run that stays short of CPU
// would pile up by the hundred. The iterations wait instead, and their
// start lateness, the summary's warning that hload was saturated, and
// the drops once max_queue_wait is reached say so.
func (p *pool) waitsForCPU() bool {
	share, sampled := p.runQueue.longShare(cpuWaitLong)
	if sampled >= cpuWaitSampled && share >= cpuWaitShare {
		return true
	}
	// Or the VUs run: hload kept its cores as busy since the backlog
	// began as the summary's verdict calls saturated, and a VU added
	// would have no core to run on.
	busy, ok := p.runQueue.busyShare()
	return ok && busy >= saturatedDemand
}

// connectors returns the distinct clients of the scenario's requests that
// open a VU's connections ahead of its first call.
func (sc *scenarioRun) connectors() []protocols.Connector {
	var out []protocols.Connector
	for i := range sc.requests {
		c, ok := sc.requests[i].client.(protocols.Connector)
		if ok && !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	return out
}

// connect opens v's connections through the scenario's connectors, when
// admitted: see connecting. preAllocated says v connects before the
// pacer starts. A failure is left to v's calls to report.
func (p *pool) connect(v *vu, preAllocated bool) {
	if len(p.connectors) == 0 || (preAllocated && p.preconnectFailed.Load()) {
		return
	}
	select {
	case p.connecting <- struct{}{}:
	case <-p.sc.ending:
		return
	}
	defer func() { <-p.connecting }()
	for _, c := range p.connectors {
		if err := c.Connect(p.sc.callCtx, v.id); err != nil {
			if preAllocated {
				p.preconnectFailed.Store(true)
			}
			return
		}
	}
}

// spawn starts a new VU goroutine; tried is for a pre-allocated VU that
// runs its setup before the pacer starts, or nil. The caller holds mu or
// is the pacer before any VU runs.
func (p *pool) spawn(tried func()) *vu {
	v := p.sc.acquire()
	v.jobs = make(chan time.Time, 1)
	p.all = append(p.all, v)
	p.wg.Go(func() { p.run(v, tried) })
	return v
}

// setUp starts n VUs that each connect and run the scenario's setup at
// once, and returns when every one has tried it, or the scenario ends: so
// the pacer's first iterations find VUs ready instead of waiting for a
// connection or a login. A VU whose setup succeeded is idle by then; one
// whose setup failed tries again after a backoff, and goes idle when it
// succeeds.
func (p *pool) setUp(n int) {
	var tried sync.WaitGroup
	tried.Add(n)
	p.mu.Lock()
	for range n {
		p.spawn(tried.Done)
	}
	p.mu.Unlock()
	done := make(chan struct{})
	go func() {
		tried.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-p.sc.ending:
	}
}

// dispatch hands a planned iteration to an idle VU, a new VU, the backlog,
// or drops it.
func (p *pool) dispatch(planned time.Time) {
	now := time.Now() // outside mu, which the VUs take as they finish
	p.mu.Lock()
	// The pacer started this iteration late: hload itself was stalled
	// (the machine gave it no CPU, a collection, the hypervisor), and the
	// iterations that came due meanwhile start now, at once. They wait
	// for VUs that are busy with that same burst, not for a slow target:
	// more VUs would not start them sooner, each would only open one more
	// connection, which a run that keeps stalling would pile up by the
	// thousand. So the pool does not grow for twice as long as the stall.
	if late := now.Sub(planned); late > growGrace {
		if until := now.Add(2 * late); until.After(p.holdUntil) {
			p.holdUntil = until
		}
	}
	var v *vu
	if n := len(p.idle); n > 0 {
		v = p.idle[n-1]
		p.idle = p.idle[:n-1]
	} else {
		switch {
		case len(p.all) < p.maxVUs:
			// The iteration waits for the first VU to come free: a busy
			// one that ends its iteration, or one the pool grows by. The
			// pool grows by one VU per waiting iteration, a few at a
			// time, so it grows only while iterations wait, and its
			// connects are paced: a short stall of the target does not
			// end in a storm of connects that makes it worse.
			if len(p.backlog) == 0 {
				p.since = now
				p.runQueue.mark()
			}
			p.backlog = append(p.backlog, planned)
			p.grow()
		case p.maxWait > 0:
			p.backlog = append(p.backlog, planned)
		default:
			p.sc.dropped.Add(1)
		}
	}
	p.mu.Unlock()
	if v != nil {
		v.jobs <- planned // never blocks: an idle or new VU has none
	}
}

// run is a VU of the pool: it runs the iterations handed to it, then
// takes waiting ones from the backlog before going idle. Before its first
// iteration it runs the scenario's setup: a pre-allocated VU at once,
// calling tried after its first try; a VU spawned for an iteration with
// that iteration waiting, which is then late, or dropped when the setup
// fails. A VU whose setup failed tries again after a backoff, and goes
// idle when it succeeds.
func (p *pool) run(v *vu, tried func()) {
	if tried != nil {
		p.connect(v, !p.started.Load())
		done, ranOut := v.setUp()
		var planned time.Time
		waiting := false
		if done {
			// Idle before saying so: the pacer may start at once.
			planned, waiting = p.next(v)
		}
		tried()
		if !done {
			if ranOut || !v.retrySetup(nil) {
				return
			}
			planned, waiting = p.next(v)
		}
		if waiting && !p.runFrom(v, planned) {
			return
		}
	}
	for planned := range v.jobs {
		if done, ranOut := v.setUp(); !done {
			p.sc.dropped.Add(1)
			if ranOut || !v.retrySetup(nil) {
				return
			}
			var waiting bool
			if planned, waiting = p.next(v); !waiting {
				continue
			}
		}
		if !p.runFrom(v, planned) {
			return
		}
	}
}

// runFrom runs the iteration planned, then the backlog's waiting ones,
// and puts v back in the idle set. It returns false when a unique data
// feeder ran out: the VU then ends.
func (p *pool) runFrom(v *vu, planned time.Time) bool {
	for {
		p.sc.vus.Add(1)
		ok := v.runIteration(p.sc.callCtx, planned)
		p.sc.vus.Add(-1)
		if !ok {
			return false
		}
		var waiting bool
		if planned, waiting = p.next(v); !waiting {
			return true
		}
	}
}

// next returns the oldest backlog iteration that has not waited too long,
// dropping the ones that have; with none, it puts v back in the idle set.
func (p *pool) next(v *vu) (time.Time, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	for len(p.backlog) > 0 {
		planned := p.backlog[0]
		p.backlog = p.backlog[1:]
		// While the pool may grow, a waiting iteration is one it grows
		// for; max_queue_wait bounds the wait once it cannot.
		if len(p.all) < p.maxVUs || now.Sub(planned) <= p.maxWait {
			return planned, true
		}
		p.sc.dropped.Add(1)
	}
	p.idle = append(p.idle, v)
	return time.Time{}, false
}

// close ends the pool after the pacer stopped: waiting iterations are
// dropped, and every VU ends after its iteration in flight.
func (p *pool) close() {
	p.mu.Lock()
	p.closed = true
	p.growTimer.Stop()
	p.sc.dropped.Add(int64(len(p.backlog)))
	p.backlog = nil
	vus := p.all
	p.mu.Unlock()
	for _, v := range vus {
		close(v.jobs)
	}
	p.wg.Wait()
}
