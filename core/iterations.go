package core

import (
	"sync"
	"time"

	"github.com/hload/hload/config"
)

// runIterations is a JMeter thread group: VUs start evenly over the
// ramp-up and each runs a fixed number of iterations.
func (sc *scenarioRun) runIterations(e config.Iterations, seg Segment) {
	if e.MaxDuration > 0 {
		defer sc.endAfter(e.MaxDuration)()
	}
	sc.setupTries = iterationsSetupTries
	n := seg.Scale(e.VUs)
	var wg sync.WaitGroup
	for k := range n {
		wg.Go(func() {
			if d := vuStartOffset(k, n, e.RampUp); d > 0 {
				t := time.NewTimer(d)
				select {
				case <-t.C:
				case <-sc.ending:
					t.Stop()
					return
				}
			}
			v := sc.acquire()
			sc.vus.Add(1)
			sc.loop(v, nil, e.Iterations)
			sc.vus.Add(-1)
		})
	}
	wg.Wait()
}
