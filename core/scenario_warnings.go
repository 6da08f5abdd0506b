package core

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// cancelWait is how long a scenario waits for its calls once they were
// cancelled. A protocol's Do must return soon after its context ends; one
// that does not would hold the run forever, so after cancelWait the
// scenario ends without it and says so.
const cancelWait = time.Second

// feederRanOut says which unique feeder ran out, and when.
type feederRanOut struct {
	name       string
	at         time.Duration // since the scenario started
	iterations int64         // iterations done by then
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
		// The protocol too: a plugin's name says whose Do to fix.
		parts = append(parts, fmt.Sprintf("%d of request %q (target %q, protocol %q)", n, req.cfg.Name, req.cfg.Target, req.cfg.Protocol))
	}
	return fmt.Sprintf("scenario %q: %d calls ignored cancellation (%s): still running %s after the graceful stop ran out and they were cancelled; hload stopped waiting, and they are not in the figures",
		sc.name, total, strings.Join(parts, ", "), cancelWait)
}

// end stops new iterations; in-flight ones get the graceful stop.
func (sc *scenarioRun) end() {
	sc.endOnce.Do(func() { close(sc.ending) })
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
