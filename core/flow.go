package core

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/zclconf/go-cty/cty"

	"github.com/hload/hload/config"
	"github.com/hload/hload/metrics"
	"github.com/hload/hload/protocols"
)

// flow is a flow of the scenario's mix, or its setup, bound to the
// scenario's requests.
type flow struct {
	cfg   *config.Flow
	steps []*request
	// feeders are the feeders its steps use, each once: an iteration takes
	// one row of each, and all its steps read that row.
	feeders []*feederCursor
	// series counts the flow's runs; nil for a bare request, whose
	// figures are its request's.
	series *metrics.Series
}

func bindFlow(r *run, scenario string, f *config.Flow, byConfig map[*config.Request]*request) flow {
	b := flow{cfg: f, steps: make([]*request, len(f.Steps))}
	for i, step := range f.Steps {
		req := byConfig[step]
		b.steps[i] = req
		for _, fc := range req.feeders {
			if !slices.Contains(b.feeders, fc) {
				b.feeders = append(b.feeders, fc)
			}
		}
	}
	if !f.Single {
		b.series = r.agg.Flow(scenario, f.Name)
	}
	return b
}

// runFlow takes the flow's data rows, once for all its steps, and runs
// its steps in order. A failed step ends the flow unless it says to go
// on; the flow fails with the kind of its first failed step. A flow that
// started finishes when the scenario ends, as a single call does; only
// the cancellation of calls (ctx) cuts it short, and then its remaining
// steps are not sent. It returns the kind the flow failed with, or
// ErrNone; ok is false, nothing sent, when a unique data feeder has run
// out.
func (v *vu) runFlow(ctx context.Context, f *flow, planned time.Time) (failed protocols.ErrorKind, ok bool) {
	if !v.takeRows(f.feeders) {
		return protocols.ErrNone, false
	}
	var start time.Time
	for i, step := range f.steps {
		// No cmp.Or here: its slice would sit in the frame (see runStep).
		if i > 0 {
			if !v.pause(ctx, f.cfg.ThinkTime) {
				if failed == protocols.ErrNone {
					failed = protocols.ErrInterrupted
				}
				break
			}
			planned = time.Time{} // only the first step is late
		}
		sent := v.runStep(ctx, step, planned)
		if i == 0 {
			// From the planned start in the open model: a late flow is
			// as slow for its user as a late first step.
			start = planned
			if start.IsZero() {
				start = sent
			}
		}
		if v.failed != protocols.ErrNone {
			if failed == protocols.ErrNone {
				failed = v.failed
			}
			if !step.cfg.ContinueOnFailure {
				break
			}
		}
	}
	if f.series != nil {
		// The flow ends when its last call's measurement did: the
		// protocol read the clock then, and reading it again here would
		// cost as much as the rest of the flow's own work.
		end := v.ended
		if end.Before(start) {
			end = time.Now() // a protocol that sent no time
		}
		f.series.RecordFlow(end.Sub(start), failed)
	}
	return failed, true
}

// takeRows takes this iteration's row of each feeder, into v.data. It
// returns false when a unique feeder has run out.
func (v *vu) takeRows(feeders []*feederCursor) bool {
	if len(feeders) == 0 {
		return true
	}
	if v.data == nil {
		v.data = make(map[string]cty.Value, len(feeders))
	}
	for _, f := range feeders {
		row, ok := f.cursor.Next()
		if !ok {
			v.sc.noteRanOut(f)
			return false
		}
		v.data[f.name] = f.feeder.Row(row)
	}
	return true
}

// The backoff between a VU's failed setup and its next try: it starts at
// scenarioRun.setupBackoff and doubles up to maxSetupBackoff, so that a
// login outage shows as a few failed setups rather than a flood.
const (
	setupBackoff    = time.Second
	maxSetupBackoff = 30 * time.Second
)

// ready runs the scenario's setup for v unless it is done, and tries it
// again after a backoff while it fails. It returns false, v not ready,
// when stop closes or the scenario ends first, or a unique data feeder
// ran out.
func (v *vu) ready(stop <-chan struct{}) bool {
	if v.setupDone || v.sc.setup == nil {
		return true
	}
	if v.stopped(stop) {
		return false
	}
	done, ranOut := v.setUp()
	if done || ranOut {
		return done
	}
	return v.retrySetup(stop)
}

// retrySetup waits a backoff, doubling each time, and tries the setup
// again, until it succeeds (true), or stop closes, the scenario ends, or
// a unique data feeder runs out (false).
func (v *vu) retrySetup(stop <-chan struct{}) bool {
	backoff := v.sc.setupBackoff
	for tries := 1; ; tries++ {
		if v.sc.setupTries > 0 && tries >= v.sc.setupTries {
			v.sc.setupGaveUp.Add(1)
			return false
		}
		if !v.wait(backoff, stop, v.sc.ending, nil) {
			return false
		}
		done, ranOut := v.setUp()
		if done || ranOut {
			return done
		}
		backoff = min(2*backoff, maxSetupBackoff)
	}
}

// iterationsSetupTries is how many times a VU of the iterations executor
// tries its setup before it gives up, with its iterations: with the
// backoff, about 31 s of waiting.
const iterationsSetupTries = 6

// setupWarning says how many VUs gave up their setup, or "".
func (sc *scenarioRun) setupWarning() string {
	n := sc.setupGaveUp.Load()
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("scenario %q: %d VUs gave up their setup after %d failed tries, and ran none of their iterations",
		sc.name, n, sc.setupTries)
}

// setUp runs the scenario's setup for v once, unless it is done, and
// reports whether v is ready for iterations. ranOut is true when a unique
// data feeder ran out, so that nothing was sent.
func (v *vu) setUp() (done, ranOut bool) {
	if v.setupDone || v.sc.setup == nil {
		return true, false
	}
	if v.sc.open {
		// A VU running its setup is busy, as one running an iteration is.
		v.sc.vus.Add(1)
		defer v.sc.vus.Add(-1)
	}
	failed, ok := v.runFlow(v.sc.callCtx, v.sc.setup, time.Time{})
	if !ok {
		return false, true
	}
	v.setupDone = failed == protocols.ErrNone
	return v.setupDone, false
}
