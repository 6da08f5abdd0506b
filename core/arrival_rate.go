package core

import (
	"sync"
	"time"
)

// pool is the open model's VU pool: idle VUs, how many exist, and the
// backlog of iterations waiting for a VU once max_vus are all busy.
type pool struct {
	sc      *scenarioRun
	maxVUs  int
	maxWait time.Duration // how long an iteration may wait for a VU; 0 drops at once

	idle chan *vu
	wg   sync.WaitGroup

	mu      sync.Mutex // guards all and backlog, and going idle
	all     []*vu
	backlog []time.Time // planned starts, oldest first
}

// runArrivals is the open model: one pacer for the scenario starts
// iterations at their planned times, each on a free VU from a pool of
// preAllocated VUs that grows up to maxVUs. When every VU is busy, an
// iteration may wait up to maxWait for one; its response time still runs
// from its planned start, as wrk2 measures it. An iteration that cannot
// start in time is dropped and counted, never silently delayed.
func (sc *scenarioRun) runArrivals(a arrivals, preAllocated, maxVUs int, maxWait time.Duration, seg Segment) {
	preAllocated = max(1, seg.Scale(preAllocated))
	maxVUs = max(preAllocated, seg.Scale(maxVUs))
	p := &pool{sc: sc, maxVUs: maxVUs, maxWait: maxWait, idle: make(chan *vu, maxVUs)}
	for range preAllocated {
		p.idle <- p.spawn()
	}

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

// spawn starts a new VU goroutine. The caller holds mu or is the pacer
// before any VU runs.
func (p *pool) spawn() *vu {
	v := p.sc.acquire()
	v.jobs = make(chan time.Time, 1)
	p.all = append(p.all, v)
	p.wg.Add(1)
	go p.run(v)
	return v
}

// dispatch hands a planned iteration to an idle VU, a new VU, the backlog,
// or drops it.
func (p *pool) dispatch(planned time.Time) {
	select {
	case v := <-p.idle:
		v.jobs <- planned
		return
	default:
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	// A VU may have gone idle since the first look; VUs go idle under mu,
	// so this second look cannot miss one.
	select {
	case v := <-p.idle:
		v.jobs <- planned
	default:
		switch {
		case len(p.all) < p.maxVUs:
			p.spawn().jobs <- planned
		case p.maxWait > 0:
			p.backlog = append(p.backlog, planned)
		default:
			p.sc.dropped.Add(1)
		}
	}
}

// run is a VU of the pool: it runs the iterations handed to it, then
// takes waiting ones from the backlog before going idle.
func (p *pool) run(v *vu) {
	defer p.wg.Done()
	for planned := range v.jobs {
		for {
			p.sc.vus.Add(1)
			ok := v.runIteration(p.sc.callCtx, planned)
			p.sc.vus.Add(-1)
			if !ok {
				return
			}
			var waiting bool
			if planned, waiting = p.next(v); !waiting {
				break
			}
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
		if now.Sub(planned) <= p.maxWait {
			return planned, true
		}
		p.sc.dropped.Add(1)
	}
	p.idle <- v // never blocks: it holds a slot per VU
	return time.Time{}, false
}

// close ends the pool after the pacer stopped: waiting iterations are
// dropped, and every VU ends after its iteration in flight.
func (p *pool) close() {
	p.mu.Lock()
	p.sc.dropped.Add(int64(len(p.backlog)))
	p.backlog = nil
	vus := p.all
	p.mu.Unlock()
	for _, v := range vus {
		close(v.jobs)
	}
	p.wg.Wait()
}
