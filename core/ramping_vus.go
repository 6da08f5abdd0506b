package core

import (
	"sync"
	"time"

	"github.com/hload/hload/config"
)

// rampTick is how often the ramping controller re-reads the plan. At 10 ms
// a ramp of 100 VUs/s is never more than one VU off its line.
const rampTick = 10 * time.Millisecond

// runRampingVUs starts and stops VUs so the active count follows the
// linear stages. A VU told to stop finishes its call in flight, then ends;
// one in think time ends at once.
func (sc *scenarioRun) runRampingVUs(e config.RampingVUs, seg Segment) {
	total, _ := plannedDuration(e)
	type running struct {
		v    *vu
		stop chan struct{}
	}
	var (
		active []running
		wg     sync.WaitGroup
	)
	ticker := time.NewTicker(rampTick)
	defer ticker.Stop()
	start := time.Now()
	for {
		t := time.Since(start)
		if t >= total {
			break
		}
		target := seg.Scale(rampingVUsAt(e, t))
		for len(active) < target {
			r := running{v: sc.acquire(), stop: make(chan struct{})}
			active = append(active, r)
			wg.Go(func() {
				sc.loop(r.v, r.stop, 0)
				sc.release(r.v)
			})
		}
		for len(active) > target {
			last := active[len(active)-1]
			close(last.stop)
			active = active[:len(active)-1]
		}
		sc.vus.Store(int64(len(active)))
		select {
		case <-ticker.C:
		case <-sc.ending:
			wg.Wait()
			return
		}
	}
	sc.end()
	wg.Wait()
}
