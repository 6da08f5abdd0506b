package core

import (
	"sync"

	"github.com/hload/hload/config"
)

// runConstantVUs runs a fixed number of looping VUs for a duration.
func (sc *scenarioRun) runConstantVUs(e config.ConstantVUs, seg Segment) {
	defer sc.endAfter(e.Duration)()
	n := seg.Scale(e.VUs)
	var wg sync.WaitGroup
	sc.vus.Store(int64(n))
	for range n {
		v := sc.acquire()
		wg.Go(func() { sc.loop(v, nil, 0) })
	}
	wg.Wait()
}
