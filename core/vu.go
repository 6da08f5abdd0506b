package core

import (
	"bytes"
	"context"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"time"

	"github.com/zclconf/go-cty/cty"

	"github.com/hload/hload/config"
	"github.com/hload/hload/core/metrics"
	"github.com/hload/hload/protocols"
	"github.com/hload/hload/protocols/delivery"
)

// request is a request block bound to what it runs on.
type request struct {
	cfg      *config.Request
	client   protocols.Client
	series   *metrics.Series
	keepBody bool
	feeders  []*feederCursor
}

// feederCursor is a data feeder with the scenario's cursor over it.
type feederCursor struct {
	name   string
	feeder *config.Feeder
	cursor *config.Cursor
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
	// data is reused across iterations for the feeders' rows.
	data map[string]cty.Value
	// lateness is how late the current iteration started against its
	// planned start, in the open model.
	lateness time.Duration
	// jobs carries planned starts from the open model's pacer.
	jobs chan time.Time

	// callCtx is the context calls get: the scenario's, plus its ending
	// channel, built once from parent. ledger is the run's, or nil.
	parent  context.Context
	callCtx context.Context
	ledger  *delivery.Ledger
	// delivered is whether the current call's request sample reports a
	// success, so that its delivery id is expected by subscribers.
	delivered bool
	// calling is the request whose call is in flight, or nil; read by
	// another goroutine only to name calls that ignore cancellation.
	calling atomic.Pointer[request]
}

func newVU(id uint64, sc *scenarioRun) *vu {
	v := &vu{id: id, sc: sc}
	v.emitFn = v.emit
	return v
}

// runIteration picks one request by weight, takes its data rows,
// evaluates it and executes it. planned is when the open model's pacer
// planned the iteration; the zero time means now (the closed model). ctx
// ends when in-flight calls must be cancelled. It returns false, sending
// nothing, when a unique data feeder has run out: the scenario then ends.
func (v *vu) runIteration(ctx context.Context, planned time.Time) bool {
	sc := v.sc
	req := &sc.requests[sc.picker.next()]
	v.current = req
	it := config.Iteration{VU: v.id, Iteration: v.iteration, Scenario: sc.name}
	if len(req.feeders) > 0 {
		if v.data == nil {
			v.data = make(map[string]cty.Value, len(req.feeders))
		}
		for _, f := range req.feeders {
			row, ok := f.cursor.Next()
			if !ok {
				sc.noteRanOut(f)
				return false
			}
			v.data[f.name] = f.feeder.Row(row)
		}
		it.Data = v.data
	}
	value, send, diags := req.cfg.Eval(it)
	start := time.Now()
	v.lateness = 0
	if !planned.IsZero() {
		// In the open model the response time runs from the planned start,
		// so time spent waiting for a VU, or behind a stalled server, shows
		// in the percentiles instead of being omitted (as wrk2 does).
		v.lateness = max(0, start.Sub(planned))
		req.series.Record(protocols.Sample{Metric: metrics.MetricStartLateness, Time: start, Value: v.lateness})
	}
	if diags.HasErrors() {
		// An expression failed at run time (say, jsondecode of a bad row).
		// It is counted as an error of its own kind rather than dropped,
		// and its message reaches the summary with the other kinds'.
		v.emit(protocols.Sample{Metric: protocols.MetricRequest, Time: start, Error: errEval, Message: diags.Error()})
	} else {
		if planned.IsZero() {
			planned = start
		}
		ctx = v.context(ctx)
		var sent delivery.Pending
		if send.Set && v.ledger != nil {
			// Begin before the call: a subscriber may receive the event
			// before the sender sees its response.
			sent = v.ledger.Begin(send.Key, send.ID)
		}
		v.delivered = false
		v.calling.Store(req)
		req.client.Do(ctx, protocols.Call{
			VU:        v.id,
			Iteration: v.iteration,
			Planned:   planned,
			Request:   value,
			KeepBody:  req.keepBody,
		}, v.emitFn)
		v.calling.Store(nil)
		sent.Done(v.delivered)
	}
	v.iteration++
	sc.iterations.Add(1)
	return true
}

// context returns the context of the VU's calls: the scenario's call
// context, which also carries the run's ledger, plus the scenario's ending
// channel, so that a call holding a stream until the scenario ends can
// end then. It is built once per scenario context, not per call.
func (v *vu) context(parent context.Context) context.Context {
	if parent != v.parent {
		v.parent = parent
		v.callCtx = protocols.WithEnding(parent, v.sc.ending)
		v.ledger = delivery.LedgerFrom(parent)
	}
	return v.callCtx
}

// errEval marks a request whose expressions failed to evaluate.
const errEval protocols.ErrorKind = "eval"

// emit records a sample of the current call: metrics, checks and raw rows.
func (v *vu) emit(s protocols.Sample) {
	if v.sc.abandoned.Load() {
		return // the run ended without this call; its summary is out
	}
	req := v.current
	if s.Metric == protocols.MetricRequest && v.sc.open {
		// The protocol timed the service from the actual send; keep that
		// as service_time and report the response time from the plan.
		req.series.Record(protocols.Sample{Metric: metrics.MetricServiceTime, Time: s.Time, Value: s.Value})
		s.Value += v.lateness
	}
	req.series.Record(s)
	if s.Metric != protocols.MetricRequest {
		return
	}
	// The protocol says whether a call delivered: a refusal by the server
	// (HTTP 4xx and 5xx) is an error kind of its own.
	v.delivered = s.Error == protocols.ErrNone
	// Checks look at a response: one with a status is checked even when
	// the protocol counts it as failed (an HTTP 500), so that a status
	// check still fails on it; a call without a response is not checked.
	if checks := req.cfg.Checks; len(checks) > 0 && (s.Error == protocols.ErrNone || s.Status != 0) {
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
