package core

import (
	"bytes"
	"context"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/hload/hload/config"
	"github.com/hload/hload/core/metrics"
	"github.com/hload/hload/protocols"
)

// request is a request block bound to what it runs on.
type request struct {
	cfg      *config.Request
	client   protocols.Client
	series   *metrics.Series
	keepBody bool
}

// vu is one virtual user. Its state survives a ramp-down and a later
// ramp-up, so ids stay dense and a protocol's per-VU connections are reused.
type vu struct {
	id        uint64
	iteration uint64
	sc        *scenarioRun

	// The request in flight, read by emit; a VU runs one call at a time.
	current *request
	// emitFn is v.emit bound once, so a call allocates no closure.
	emitFn func(protocols.Sample)
	// timer is reused across think times.
	timer *time.Timer
}

func newVU(id uint64, sc *scenarioRun) *vu {
	v := &vu{id: id, sc: sc}
	v.emitFn = v.emit
	return v
}

// runIteration picks one request by weight, evaluates it and executes it.
// ctx ends when in-flight calls must be cancelled.
func (v *vu) runIteration(ctx context.Context) {
	sc := v.sc
	req := &sc.requests[sc.picker.next()]
	v.current = req
	value, diags := req.cfg.Value(config.Iteration{VU: v.id, Iteration: v.iteration, Scenario: sc.name})
	start := time.Now()
	if diags.HasErrors() {
		// An expression failed at run time (say, jsondecode of a bad row).
		// It is counted as an error of its own kind rather than dropped.
		sc.run.noteEvalError(sc.name, req.cfg.Name, diags)
		v.emit(protocols.Sample{Metric: protocols.MetricRequest, Time: start, Error: errEval})
	} else {
		req.client.Do(ctx, protocols.Call{
			VU:        v.id,
			Iteration: v.iteration,
			Planned:   start,
			Request:   value,
			KeepBody:  req.keepBody,
		}, v.emitFn)
	}
	v.iteration++
	sc.iterations.Add(1)
}

// errEval marks a request whose expressions failed to evaluate.
const errEval protocols.ErrorKind = "eval"

// emit records a sample of the current call: metrics, checks and raw rows.
func (v *vu) emit(s protocols.Sample) {
	req := v.current
	req.series.Record(s)
	if s.Metric != protocols.MetricRequest {
		return
	}
	if checks := req.cfg.Checks; len(checks) > 0 && s.Error == protocols.ErrNone {
		passed, failed := 0, 0
		for i := range checks {
			if checkPasses(&checks[i], s) {
				passed++
			} else {
				failed++
			}
		}
		req.series.RecordChecks(passed, failed)
	}
	for _, raw := range v.sc.run.rawSinks {
		raw.WriteRaw(metrics.RawRecord{
			Time:          s.Time,
			Scenario:      v.sc.name,
			Request:       req.cfg.Name,
			VU:            v.id,
			Iteration:     v.iteration,
			Status:        s.Status,
			Latency:       s.Value,
			BytesSent:     s.BytesSent,
			BytesReceived: s.BytesReceived,
			Error:         string(s.Error),
		})
	}
}

func checkPasses(c *config.Check, s protocols.Sample) bool {
	if len(c.Status) > 0 && !slices.Contains(c.Status, s.Status) {
		return false
	}
	if c.BodyContains != "" && !bytes.Contains(s.Body, []byte(c.BodyContains)) {
		return false
	}
	return true
}

// think pauses for the scenario's think time. It returns false when the
// VU was told to stop or the scenario is ending, so a VU in think time ends
// at once instead of holding up the end of the run.
func (v *vu) think(stop <-chan struct{}) bool {
	tt := v.sc.thinkTime
	d := tt.Min
	if tt.Max > tt.Min {
		d += rand.N(tt.Max - tt.Min + 1)
	}
	if d <= 0 {
		return !v.stopped(stop)
	}
	if v.timer == nil {
		v.timer = time.NewTimer(d)
	} else {
		v.timer.Reset(d)
	}
	select {
	case <-stop:
	case <-v.sc.ending:
	case <-v.timer.C:
		return true
	}
	v.timer.Stop()
	return false
}

// stopped reports whether the VU must not start another iteration.
func (v *vu) stopped(stop <-chan struct{}) bool {
	select {
	case <-stop:
		return true
	case <-v.sc.ending:
		return true
	default:
		return false
	}
}
