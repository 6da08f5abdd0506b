package core

import (
	"bytes"
	"context"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/hload/hload/config"
	"github.com/hload/hload/metrics"
	"github.com/hload/hload/protocols"
	"github.com/hload/hload/protocols/delivery"
)

// request is a request block bound to what it runs on.
type request struct {
	cfg    *config.Request
	client protocols.Client
	// caller is client's Do with the call passed by pointer.
	caller pointerCaller
	series *metrics.Series
	// keepBody and keepHeaders ask the protocol for what the checks and
	// captures read, and nothing more.
	keepBody    bool
	keepHeaders bool
	// bodyContains are the distinct substrings the checks look for, which
	// the call carries; needle[i] is check i's among them, -1 for none.
	// maxBody bounds the body kept for the captures.
	bodyContains []string
	needle       []int
	maxBody      int64
	feeders      []*feederCursor
	// prepared is what the client made of a request that is the same for
	// every call, once; nil when it made nothing.
	prepared any
	// template is what the client made of the shape of a request that is
	// evaluated per call (protocols.Templater); nil when it made nothing.
	template any
}

// pointerCaller is a client that also takes its call by pointer: a call
// passed by value is copied into the frame that makes it, twice (the
// argument and a temporary), and an idle stream's goroutine keeps that
// frame (see runStep).
type pointerCaller interface {
	DoCall(ctx context.Context, call *protocols.Call, emit func(protocols.Sample))
}

// callerOf returns c's DoCall, or its Do behind one.
func callerOf(c protocols.Client) pointerCaller {
	if p, ok := c.(pointerCaller); ok {
		return p
	}
	return byValue{c}
}

// byValue passes calls by value to a client that takes them so.
type byValue struct{ c protocols.Client }

func (b byValue) DoCall(ctx context.Context, call *protocols.Call, emit func(protocols.Sample)) {
	b.c.Do(ctx, *call, emit)
}

// prepare has c render rq once, when rq is the same for every call and c
// can: an error is left for the calls to report, as they would have.
func prepare(c protocols.Client, rq *config.Request) any {
	p, ok := c.(protocols.Preparer)
	if !ok || rq.Dynamic() {
		return nil
	}
	value, diags := rq.Value(config.Iteration{})
	if diags.HasErrors() {
		return nil
	}
	prepared, err := p.Prepare(value)
	if err != nil {
		return nil
	}
	return prepared
}

// template has c render the constant parts of rq once, when rq is
// evaluated per call and c can: on an error the calls carry the whole
// request.
func template(c protocols.Client, rq *config.Request) any {
	t, ok := c.(protocols.Templater)
	if !ok {
		return nil
	}
	shape, holes, ok := rq.Shape()
	if !ok {
		return nil
	}
	tmpl, err := t.Template(shape, holes)
	if err != nil {
		return nil
	}
	return tmpl
}

// feederCursor is a data feeder with the scenario's cursor over it.
type feederCursor struct {
	name   string
	feeder *config.Feeder
	cursor *config.Cursor
}

// vu is one virtual user. Its state survives a ramp-down and a later
// ramp-up, so ids stay dense, a protocol's per-VU connections are reused,
// and its setup and captured values stay done.
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
	// holes is reused across calls for a templated request's values.
	holes []cty.Value
	// vars are the values the VU captured, vu.vars in expressions; nil
	// until a capture sets one.
	vars map[string]cty.Value
	// setupDone is set once the scenario's setup succeeded for this VU.
	setupDone bool
	// lateness is how late the current iteration started against its
	// planned start, in the open model; zero for a flow's later steps.
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
	// failed is the error kind of the current call's request sample,
	// after its captures: what the step's flow goes by. ended is the
	// sample's time, when the call ended.
	failed protocols.ErrorKind
	ended  time.Time
	// calling is the request whose call is in flight, or nil; read by
	// another goroutine only to name calls that ignore cancellation.
	calling atomic.Pointer[request]
	// call is the call runStep makes, built by prepareCall; sent is the
	// pending send of its delivery, if it has one.
	call protocols.Call
	sent delivery.Pending
}

func newVU(id uint64, sc *scenarioRun) *vu {
	v := &vu{id: id, sc: sc}
	v.emitFn = v.emit
	return v
}

// runIteration picks one flow of the mix by weight (a bare request is a
// flow of one step), takes its data rows and runs it. planned is when the
// open model's pacer planned the iteration; the zero time means now (the
// closed model). ctx ends when in-flight calls must be cancelled. It
// returns false, sending nothing, when a unique data feeder has run out:
// the scenario then ends.
func (v *vu) runIteration(ctx context.Context, planned time.Time) bool {
	sc := v.sc
	if _, ok := v.runFlow(ctx, &sc.mix[sc.picker.next()], planned); !ok {
		return false
	}
	v.iteration++
	sc.iterations.Add(1)
	return true
}

// runStep evaluates one request and executes it, and returns when it was
// sent. v.failed is then its outcome. planned is the open model's planned
// start for a flow's first step, or zero.
//
// A VU holding a stream (SSE) waits in the client's call, and once its
// goroutine's stack has grown to 8 KB the collector halves it only while
// the frames from the goroutine's top down to that wait take less than
// 1,248 bytes (a quarter of 8 KB, less the 800 it keeps free). So the call
// is built off that path, in v.call by prepareCall, and passed by pointer
// to a client that takes it so; the functions on the path keep their
// frames small. A stream then costs 4 KB less: protocols/sse's
// TestIdleStreamStack checks it.
func (v *vu) runStep(ctx context.Context, req *request, planned time.Time) time.Time {
	if !v.prepareCall(ctx, req, planned) {
		return v.call.Start
	}
	v.calling.Store(req)
	req.caller.DoCall(v.callCtx, &v.call, v.emitFn)
	v.calling.Store(nil)
	v.sent.Done(v.delivered)
	return v.call.Start
}

// prepareCall evaluates req and builds its call in v.call, with the
// context in v.callCtx and the pending send of its delivery in v.sent. It
// returns false when an expression failed, having emitted the failure;
// v.call.Start is set either way. It is not inlined: see runStep.
//
//go:noinline
func (v *vu) prepareCall(ctx context.Context, req *request, planned time.Time) bool {
	sc := v.sc
	v.current = req
	v.failed, v.ended = protocols.ErrNone, time.Time{}
	it := config.Iteration{VU: v.id, Iteration: v.iteration, Scenario: sc.name, Vars: v.vars}
	if len(req.feeders) > 0 {
		it.Data = v.data
	}
	var (
		value cty.Value
		send  config.Delivery
		diags hcl.Diagnostics
		holes []cty.Value
	)
	if req.template != nil {
		holes, send, diags = req.cfg.EvalHoles(it, v.holes)
		v.holes = holes
	} else {
		value, send, diags = req.cfg.Eval(it)
	}
	start := time.Now()
	v.call.Start = start
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
		return false
	}
	if planned.IsZero() {
		planned = start
	}
	v.context(ctx)
	v.sent = delivery.Pending{}
	if send.Set && v.ledger != nil {
		// Begin before the call: a subscriber may receive the event
		// before the sender sees its response.
		v.sent = v.ledger.Begin(send.Key, send.ID)
	}
	v.delivered = false
	prepared := req.prepared
	if req.template != nil {
		prepared = req.template
	}
	v.call = protocols.Call{
		VU:           v.id,
		Iteration:    v.iteration,
		Planned:      planned,
		Start:        start,
		Request:      value,
		KeepBody:     req.keepBody,
		KeepHeaders:  req.keepHeaders,
		MaxBody:      req.maxBody,
		BodyContains: req.bodyContains,
		Prepared:     prepared,
		Holes:        holes,
	}
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
const errEval = metrics.ErrEval

// emit records a sample of the current call: metrics, checks and raw rows.
func (v *vu) emit(s protocols.Sample) {
	if v.sc.abandoned.Load() {
		return // the run ended without this call; its summary is out
	}
	req := v.current
	if s.Message != "" {
		s.Message = v.sc.run.redact(s.Message)
	}
	if s.Metric != protocols.MetricRequest {
		req.series.Record(s)
		return
	}
	// The protocol says whether a call delivered: a refusal by the server
	// (HTTP 4xx and 5xx) is an error kind of its own. A capture that
	// finds nothing does not undo a delivery.
	v.delivered = s.Error == protocols.ErrNone
	if s.Error == protocols.ErrNone && len(req.cfg.Captures) > 0 {
		// Before the sample is recorded, so that the request counts the
		// failed capture among its errors.
		if kind, msg := v.captureAll(req, &s); kind != protocols.ErrNone {
			s.Error, s.Message = kind, msg
		}
	}
	v.failed, v.ended = s.Error, s.Time
	if v.sc.open && !metrics.SentNothing(&s) {
		// The protocol timed the service from the actual send; keep that
		// as service_time and report the response time from the plan.
		req.series.Record(protocols.Sample{Metric: metrics.MetricServiceTime, Time: s.Time, Value: s.Value})
		s.Value += v.lateness
	}
	req.series.Record(s)
	// Checks look at a response: one with a status is checked even when
	// the protocol counts it as failed (an HTTP 500), so that a status
	// check still fails on it; a call without a response is not checked.
	if checks := req.cfg.Checks; len(checks) > 0 && (s.Error == protocols.ErrNone || s.Status != 0) {
		passed, failed := 0, 0
		for i := range checks {
			if checkPasses(&checks[i], req.needle[i], &s) {
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

// checkPasses judges one check of a response. Its body_contains is the
// call's needle-th substring: the protocol says whether it found it, as
// it read the body; a protocol that did not look (a plugin built before
// BodyFound) kept the body for the core to look in.
func checkPasses(c *config.Check, needle int, s *protocols.Sample) bool {
	if len(c.Status) > 0 && !slices.Contains(c.Status, s.Status) {
		return false
	}
	if c.BodyContains == "" {
		return true
	}
	if needle >= 0 && needle < len(s.BodyFound) {
		return s.BodyFound[needle]
	}
	return bytes.Contains(s.Body, []byte(c.BodyContains))
}

// think pauses for the scenario's think time. It returns false when the
// VU was told to stop or the scenario is ending, so a VU in think time ends
// at once instead of holding up the end of the run.
func (v *vu) think(stop <-chan struct{}) bool {
	d := draw(v.sc.thinkTime)
	if d <= 0 {
		return !v.stopped(stop)
	}
	return v.wait(d, stop, v.sc.ending, nil)
}

// pause is the think time between two steps of a flow. Unlike think, it
// ends early only when calls are cancelled (ctx): a flow that started
// finishes during the graceful stop. It returns false when cancelled.
func (v *vu) pause(ctx context.Context, tt config.ThinkTime) bool {
	d := draw(tt)
	if d <= 0 {
		// Done, not Err: every VU reads the same context, and Err takes
		// its lock.
		select {
		case <-ctx.Done():
			return false
		default:
			return true
		}
	}
	return v.wait(d, nil, nil, ctx.Done())
}

// wait sleeps for d on the VU's timer, and returns false when one of the
// channels closes first; a nil channel never does.
func (v *vu) wait(d time.Duration, a, b, c <-chan struct{}) bool {
	if v.timer == nil {
		v.timer = time.NewTimer(d)
	} else {
		v.timer.Reset(d)
	}
	select {
	case <-a:
	case <-b:
	case <-c:
	case <-v.timer.C:
		return true
	}
	v.timer.Stop()
	return false
}

// draw returns a think time: fixed, or uniform in [Min, Max].
func draw(tt config.ThinkTime) time.Duration {
	d := tt.Min
	if tt.Max > tt.Min {
		d += rand.N(tt.Max - tt.Min + 1)
	}
	return d
}

// stopped reports whether the VU must not start another iteration.
func (v *vu) stopped(stop <-chan struct{}) bool {
	// Two receives rather than one select of both: a receive that finds
	// an open channel empty returns without its lock, where a select
	// locks every channel it names, twice per iteration of every VU.
	select {
	case <-stop:
		return true
	default:
	}
	select {
	case <-v.sc.ending:
		return true
	default:
		return false
	}
}
