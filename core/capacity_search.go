package core

import (
	"fmt"
	"sync"
	"time"

	"github.com/hload/hload/config"
	"github.com/hload/hload/metrics"
)

// capacitySearch is a capacity-search scenario's state: the steps it has
// measured and where it stopped. The executor writes it; the snapshots and
// the summary read it.
type capacitySearch struct {
	cfg  config.CapacitySearch
	unit string

	mu         sync.Mutex
	current    int // the step running, from 1; 0 before the first
	steps      []metrics.CapacityStep
	saturation metrics.CapacitySaturation
}

func newCapacitySearch(e config.CapacitySearch) *capacitySearch {
	return &capacitySearch{cfg: e, unit: capacityUnit(e)}
}

// capacityUnit says what a load of e counts.
func capacityUnit(e config.CapacitySearch) string {
	switch {
	case e.Model == config.ModelClosed:
		return "vus"
	case e.TimeUnit == time.Second:
		return "iterations/s"
	}
	return "iterations/" + e.TimeUnit.String()
}

// stepHolder holds a load for a step: the open model's pacer and VU pool,
// or the closed model's looping VUs.
type stepHolder interface {
	// hold runs load for d, and returns false when the scenario ended
	// first.
	hold(load float64, d time.Duration) bool
	// close ends every VU after its iteration in flight; the scenario has
	// ended.
	close()
}

// runCapacitySearch steps the load up, measures each step from the run's
// own histograms, and stops at the first step that does not hold.
func (sc *scenarioRun) runCapacitySearch(e config.CapacitySearch) {
	c := sc.capacity
	var load stepHolder
	if e.Model == config.ModelClosed {
		load = &closedSteps{sc: sc}
	} else {
		load = &openSteps{sc: sc, unit: e.TimeUnit, pool: sc.newPool(e.PreAllocatedVUs, e.MaxVUs, e.MaxQueueWait, Segment{})}
	}
	c.search(sc, load)
	sc.end()
	load.close()
}

// search runs the steps until one does not hold.
func (c *capacitySearch) search(sc *scenarioRun, load stepHolder) {
	// One reading ends a step and starts the next, so that every call
	// that ends during the search is in exactly one step.
	before, start := sc.agg.Read(sc.name), time.Now()
	for i, l := range c.cfg.Steps {
		c.mu.Lock()
		c.current = i + 1
		c.mu.Unlock()
		held := load.hold(l, c.cfg.StepDuration)
		after, end := sc.agg.Read(sc.name), time.Now()
		step := stepFigures(l, after.Since(before), end.Sub(start))
		before, start = after, end
		if !held {
			c.stop(step, "interrupted", fmt.Sprintf("the run ended during step %d, before it was judged", i+1))
			return
		}
		if c.record(step) {
			return
		}
	}
	last := c.cfg.Steps[len(c.cfg.Steps)-1]
	c.stop(metrics.CapacityStep{}, "last_step", fmt.Sprintf(
		"every step held, up to the last (%g %s): the saturation point is beyond it", last, c.unit))
}

// stepFigures are a step's figures from the stretch it held.
func stepFigures(load float64, f metrics.StretchFigures, d time.Duration) metrics.CapacityStep {
	s := metrics.CapacityStep{Load: load, DurationS: d.Seconds(), Count: f.Count, ErrorRate: f.ErrorRate, P50: f.P50, P95: f.P95, P99: f.P99}
	if d > 0 {
		s.RPS = float64(f.Count) / d.Seconds()
		s.OKRPS = float64(f.Count-f.Errors) / d.Seconds()
	}
	return s
}

// record adds a measured step and judges it; it returns true when the
// search stops there.
func (c *capacitySearch) record(step metrics.CapacityStep) bool {
	c.mu.Lock()
	var prev *metrics.CapacityStep
	if n := len(c.steps); n > 0 {
		prev = &c.steps[n-1]
	}
	reason, detail := judgeStep(c.cfg, len(c.steps)+1, prev, step)
	c.mu.Unlock()
	if reason == "" {
		c.mu.Lock()
		c.steps = append(c.steps, step)
		c.mu.Unlock()
		return false
	}
	c.stop(step, reason, detail)
	return true
}

// stop ends the search: step, when it has a load, is the last one taken
// (it did not hold), and the saturation point is the step before it.
func (c *capacitySearch) stop(step metrics.CapacityStep, reason, detail string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	held := len(c.steps)
	if step.Load > 0 {
		c.steps = append(c.steps, step)
	}
	c.saturation = metrics.CapacitySaturation{Step: held, Reason: reason, Detail: detail}
	if held > 0 {
		c.saturation.CapacityStep = c.steps[held-1]
	}
}

// judgeStep decides whether step number n (from 1) held, against the one
// before it (nil for the first). It returns why it did not, or "".
func judgeStep(e config.CapacitySearch, n int, prev *metrics.CapacityStep, cur metrics.CapacityStep) (reason, detail string) {
	switch {
	case cur.Count == 0:
		return "no_calls", fmt.Sprintf("no call ended during step %d (load %g)", n, cur.Load)
	case e.MaxErrorRate > 0 && cur.ErrorRate > e.MaxErrorRate:
		return "max_error_rate", fmt.Sprintf("step %d (load %g) failed %.2f %% of its calls, above max_error_rate (%g %%)",
			n, cur.Load, cur.ErrorRate*100, e.MaxErrorRate*100)
	case e.MaxP95 > 0 && cur.P95 > float64(e.MaxP95)/float64(time.Millisecond):
		return "max_p95", fmt.Sprintf("step %d (load %g) had a p95 of %.1f ms, above max_p95 (%s)", n, cur.Load, cur.P95, e.MaxP95)
	case prev == nil || prev.OKRPS == 0:
		return "", ""
	}
	loadGain := cur.Load/prev.Load - 1
	gain := cur.OKRPS/prev.OKRPS - 1
	if gain < e.MinGain/100*loadGain && cur.P95 > prev.P95 {
		return "saturated", fmt.Sprintf(
			"step %d raised the load by %.1f %% (%g to %g) but the throughput by %.1f %% (%.1f to %.1f successful calls/s), "+
				"below min_gain (%g %% of the load's gain), while p95 grew from %.1f to %.1f ms",
			n, loadGain*100, prev.Load, cur.Load, gain*100, prev.OKRPS, cur.OKRPS, e.MinGain, prev.P95, cur.P95)
	}
	return "", ""
}

// progress is where the search stands, for a snapshot.
func (c *capacitySearch) progress() metrics.CapacityProgress {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := metrics.CapacityProgress{Step: c.current, Steps: len(c.cfg.Steps), Unit: c.unit}
	if c.current > 0 {
		p.Load = c.cfg.Steps[c.current-1]
	}
	return p
}

// summary is what the search found, for the run's summary.
func (c *capacitySearch) summary() *metrics.CapacitySummary {
	c.mu.Lock()
	defer c.mu.Unlock()
	sat := c.saturation
	if sat.Reason == "" {
		sat.Reason, sat.Detail = "interrupted", "the search did not start"
	}
	return &metrics.CapacitySummary{Model: c.cfg.Model, Unit: c.unit, Steps: append([]metrics.CapacityStep{}, c.steps...), Saturation: sat}
}

// openSteps holds arrival rates with the open model's pacer and VU pool.
type openSteps struct {
	sc    *scenarioRun
	unit  time.Duration
	pool  *pool
	timer *time.Timer
}

func (o *openSteps) hold(load float64, d time.Duration) bool {
	if o.timer == nil {
		o.timer = time.NewTimer(time.Hour)
		o.timer.Stop()
	}
	a := newArrivals(load, []config.RateStage{{Duration: d, Target: load}}, o.unit)
	start := time.Now()
	end := start.Add(d)
	for n := int64(0); ; n++ {
		at, ok := a.at(n)
		planned := start.Add(at)
		if !ok || !planned.Before(end) {
			break
		}
		if !o.sleepUntil(planned) {
			return false
		}
		o.pool.dispatch(planned)
	}
	// Hold to the step's end, so that each step is measured over d.
	return o.sleepUntil(end)
}

// sleepUntil waits until t, and returns false when the scenario ended
// first.
func (o *openSteps) sleepUntil(t time.Time) bool {
	if wait := time.Until(t); wait > 0 {
		o.timer.Reset(wait)
		select {
		case <-o.timer.C:
			return true
		case <-o.sc.ending:
			o.timer.Stop()
			return false
		}
	}
	select {
	case <-o.sc.ending:
		return false
	default:
		return true
	}
}

func (o *openSteps) close() { o.pool.close() }

// closedSteps holds numbers of looping VUs.
type closedSteps struct {
	sc     *scenarioRun
	active []chan struct{} // each running VU's stop
	wg     sync.WaitGroup
}

func (c *closedSteps) hold(load float64, d time.Duration) bool {
	for len(c.active) < int(load) {
		v, stop := c.sc.acquire(), make(chan struct{})
		c.active = append(c.active, stop)
		c.wg.Go(func() {
			c.sc.loop(v, stop, 0)
			c.sc.release(v)
		})
	}
	c.sc.vus.Store(int64(len(c.active)))
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-c.sc.ending:
		return false
	}
}

func (c *closedSteps) close() {
	for _, stop := range c.active {
		close(stop)
	}
	c.wg.Wait()
}

// checkSegment refuses a sharded capacity search: each step's verdict
// comes from what that step measured, and each machine of a sharded run
// would measure its own share and stop at its own step, so that the
// machines together would no longer hold one load at a time.
func checkSegment(test *config.Test, seg Segment) error {
	if seg.Count <= 1 {
		return nil
	}
	for _, s := range test.Scenarios {
		if _, ok := s.Executor.(config.CapacitySearch); ok {
			return fmt.Errorf("--segment %s: scenario %q uses the capacity-search executor, which cannot be sharded: "+
				"it decides each next step from what the last one measured, and each machine would decide alone from its share; "+
				"run it on one machine (--segment 1/1)", seg, s.Name)
		}
	}
	return nil
}

// CheckSegment returns an error when the test cannot be run or planned
// as share seg of a sharded run.
func CheckSegment(test *config.Test, seg Segment) error { return checkSegment(test, seg) }

// addCapacityProgress adds sc's step to a snapshot when sc is a capacity
// search.
func addCapacityProgress(snap *metrics.Snapshot, sc *scenarioRun) {
	if sc.capacity == nil {
		return
	}
	if snap.Capacity == nil {
		snap.Capacity = map[string]metrics.CapacityProgress{}
	}
	snap.Capacity[sc.name] = sc.capacity.progress()
}
