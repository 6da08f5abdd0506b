package sse

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zclconf/go-cty/cty"

	"github.com/hload/hload/protocols"
	"github.com/hload/hload/protocols/delivery"
	"github.com/hload/hload/protocols/http/h1"
)

// Client holds the streams of one SSE target.
type Client struct {
	cfg     *targetConfig
	ledger  *delivery.Ledger // nil when the run has none
	regexes regexCache
	dialer  net.Dialer

	open atomic.Int64 // streams whose response headers arrived, not yet closed

	// endings stops the streams of a scenario when its ending channel
	// closes: one goroutine per scenario, not one per stream.
	endMu   sync.Mutex
	endings map[<-chan struct{}]*streamSet

	settler settler

	// The streams' read buffers and frame buffers, held only while bytes
	// read wait to be handed out, so that an idle stream holds none.
	reads  h1.Pool
	frames bufferPool

	// lastRequest is the request parsed last, which a call with an equal
	// request value shares rather than parse its own: a stream keeps its
	// parsed request while it is held, and the streams of a scenario
	// mostly subscribe with equal ones.
	lastRequest atomic.Pointer[parsedRequest]
}

// parsedRequest is a request value and what it parsed to, which is not
// changed once parsed.
type parsedRequest struct {
	v  cty.Value
	sc *streamConfig
}

// parse parses a call's request value, or returns the last one's when the
// value is the same.
func (c *Client) parse(v cty.Value) (*streamConfig, *attrError) {
	if last := c.lastRequest.Load(); last != nil && last.v.RawEquals(v) {
		return last.sc, nil
	}
	sc, ae := parseRequest(v, &c.regexes)
	if ae == nil {
		c.lastRequest.Store(&parsedRequest{v: v, sc: sc})
	}
	return sc, ae
}

var (
	_ protocols.Client   = (*Client)(nil)
	_ protocols.Gauger   = (*Client)(nil)
	_ protocols.Preparer = (*Client)(nil)
)

// Prepare parses a request that is the same for every call, once: a call
// then neither parses it nor compares it with the last one parsed.
func (c *Client) Prepare(request cty.Value) (any, error) {
	sc, ae := parseRequest(request, &c.regexes)
	if ae != nil {
		return nil, ae
	}
	return sc, nil
}

func newClient(cfg *targetConfig, ledger *delivery.Ledger) *Client {
	return &Client{
		cfg: cfg, ledger: ledger, dialer: net.Dialer{Timeout: cfg.timeout, KeepAlive: -1},
		endings: map[<-chan struct{}]*streamSet{},
		settler: settler{quit: make(chan struct{})},
	}
}

// Gauges reports the streams open now.
func (c *Client) Gauges(report func(name string, value int64)) {
	report(GaugeOpenStreams, c.open.Load())
}

// Close stops the scenario watchers and the settle ticker, and waits for
// the ticker to end. Streams end with their calls. Close may be called
// more than once.
func (c *Client) Close() error {
	c.endMu.Lock()
	for _, set := range c.endings {
		set.closeOnce.Do(func() { close(set.quit) })
	}
	c.endMu.Unlock()
	c.settler.close()
	return nil
}

// settleEvery is how often the streams that watch a delivery key count
// what they missed: an event not received miss_grace after its send
// succeeded is counted within settleEvery more, whether or not anything
// arrives, so that sse_events_missed shows in the interval it happened
// (and an abort threshold on it can fire) even on a silent stream.
const settleEvery = 250 * time.Millisecond

// settler settles a client's watching streams on one shared ticker: one
// goroutine per client, only while some stream watches, rather than a
// timer per stream.
type settler struct {
	mu      sync.Mutex
	runs    map[*run]struct{}
	ticking bool // the goroutine runs
	closed  bool
	quit    chan struct{}
	wg      sync.WaitGroup
	batch   []*run // the goroutine's own: the runs of one tick
}

// add has r settled on every tick until remove; it starts the ticker if
// it is not running. After close it does nothing: the run is closing.
func (st *settler) add(r *run) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.closed {
		return
	}
	if st.runs == nil {
		st.runs = map[*run]struct{}{}
	}
	st.runs[r] = struct{}{}
	if !st.ticking {
		st.ticking = true
		st.wg.Go(st.tick)
	}
}

// remove stops settling r. A tick that took r before may still call
// r.settle, which does nothing once r is closed.
func (st *settler) remove(r *run) {
	st.mu.Lock()
	delete(st.runs, r)
	st.mu.Unlock()
}

func (st *settler) close() {
	st.mu.Lock()
	if !st.closed {
		st.closed = true
		close(st.quit)
	}
	st.mu.Unlock()
	st.wg.Wait()
}

// tick settles the runs every settleEvery, and ends when none is left or
// the client closes.
func (st *settler) tick() {
	t := time.NewTicker(settleEvery)
	defer t.Stop()
	for {
		select {
		case <-st.quit:
			return
		case <-t.C:
		}
		st.mu.Lock()
		if len(st.runs) == 0 {
			st.ticking = false
			st.mu.Unlock()
			return
		}
		for r := range st.runs {
			st.batch = append(st.batch, r)
		}
		st.mu.Unlock()
		now := time.Now()
		for _, r := range st.batch {
			r.settle(now)
		}
		clear(st.batch)
		st.batch = st.batch[:0]
	}
}

// streamSet is the open streams of one scenario.
type streamSet struct {
	mu        sync.Mutex
	streams   map[*stream]struct{}
	ended     bool
	quit      chan struct{}
	closeOnce sync.Once
}

// join registers s to be stopped when ending closes; it returns false when
// the scenario has ended already.
func (c *Client) join(ending <-chan struct{}, s *stream) (leave func(), ok bool) {
	if ending == nil {
		return func() {}, true
	}
	c.endMu.Lock()
	set := c.endings[ending]
	if set == nil {
		set = &streamSet{streams: map[*stream]struct{}{}, quit: make(chan struct{})}
		c.endings[ending] = set
		go func() {
			select {
			case <-ending:
			case <-set.quit:
			}
			set.mu.Lock()
			set.ended = true
			for s := range set.streams {
				s.stop(stopEnded)
			}
			set.mu.Unlock()
		}()
	}
	c.endMu.Unlock()
	set.mu.Lock()
	defer set.mu.Unlock()
	if set.ended {
		return nil, false
	}
	set.streams[s] = struct{}{}
	return func() {
		set.mu.Lock()
		delete(set.streams, s)
		set.mu.Unlock()
	}, true
}

// Why a stream was stopped from outside its reading.
const (
	stopNone     int32 = iota
	stopDuration       // the request's duration is over
	stopEnded          // the scenario ended
	stopCancel         // the call's context was cancelled
)

// stream is one call: a subscription, across its reconnections.
type stream struct {
	mu       sync.Mutex
	conn     net.Conn // the current connection, nil between connections
	reason   int32    // why it was stopped; stopNone while it runs
	stopped  chan struct{}
	idle     time.Duration
	sent     atomic.Int64
	received atomic.Int64
}

// stop stops the stream for reason, once: the first reason wins.
func (s *stream) stop(reason int32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.reason != stopNone {
		return
	}
	s.reason = reason
	close(s.stopped)
	if s.conn != nil {
		s.conn.SetReadDeadline(time.Unix(1, 0))
	}
}

func (s *stream) stopReason() int32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reason
}

// setConn makes conn the stream's connection; false if it was stopped.
func (s *stream) setConn(conn net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.reason != stopNone {
		return false
	}
	s.conn = conn
	return true
}

// arm sets the connection's deadline to t unless the stream was stopped,
// whose deadline in the past must stay.
func (s *stream) arm(t time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.reason == stopNone && s.conn != nil {
		s.conn.SetDeadline(t)
	}
}

func (s *stream) clearConn() {
	s.mu.Lock()
	s.conn = nil
	s.mu.Unlock()
}

// streamConn counts a connection's bytes and arms the idle timeout before
// each read, unless the stream was stopped, under the stream's lock so
// that a stop's past deadline is never overwritten.
type streamConn struct {
	net.Conn
	s     *stream
	ready readiness
}

var errStopped = errors.New("stream stopped")

func (c *streamConn) Read(p []byte) (int, error) {
	if err := c.armIdle(); err != nil {
		return 0, err
	}
	n, err := c.Conn.Read(p)
	c.s.received.Add(int64(n))
	return n, err
}

// armIdle sets the read deadline to the idle timeout from now, if the
// request has one.
func (c *streamConn) armIdle() error {
	if c.s.idle > 0 {
		c.s.mu.Lock()
		defer c.s.mu.Unlock()
		if c.s.reason != stopNone {
			return errStopped
		}
		c.Conn.SetReadDeadline(time.Now().Add(c.s.idle))
	}
	return nil
}

// wait waits, holding no buffer, until the connection has something to
// read, under the same deadlines as a read.
func (c *streamConn) wait() error {
	if err := c.armIdle(); err != nil {
		return err
	}
	return c.ready.wait()
}

func (c *streamConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.s.sent.Add(int64(n))
	return n, err
}

// Do subscribes and holds the stream until its duration, its number of
// events or the scenario's end, reconnecting when asked to.
func (c *Client) Do(ctx context.Context, call protocols.Call, emit func(protocols.Sample)) {
	c.DoCall(ctx, &call, emit)
}

// DoCall is Do with the call passed by pointer, which the core uses: a
// call passed by value is copied into the frame of the function that
// passes it, and an idle stream's goroutine keeps that frame. call is read
// before DoCall blocks, and not changed.
func (c *Client) DoCall(ctx context.Context, call *protocols.Call, emit func(protocols.Sample)) {
	r := c.begin(ctx, call, emit)
	if r == nil {
		return
	}
	var err error
	for r.advance(err) {
		// The idle stream's wait, as near the top of its stack as can be:
		// see below.
		err = r.l.conn.wait()
	}
	// Not deferred, which would put a record in the idle stream's frame:
	// a panic in a built-in protocol ends the process.
	r.stop()
}

// An idle stream's goroutine grew its stack to 8 KB on the way (the dial
// alone takes over 2.5 KB of frames), and the collector halves it only
// while the frames it holds take less than a quarter of it, less some 800
// bytes it keeps free: 1,248 bytes, from the VU's goroutine down to the
// wait for bytes, of which the runtime's wait takes some 300 and the
// core's VU some 500. So Do makes the wait itself, in a loop over
// advance, which does the reading, connecting and reconnecting and
// returns before each wait; and what is large (samples, the request's
// text, the select of a reconnection's pause) is built in functions off
// that path, marked go:noinline so that the compiler does not bring it
// back. TestIdleStreamStack checks it. (Dialing on a goroutine of its own
// kept the stack at 4 KB throughout, but cost more than it saved: the
// dialing goroutines' own stacks, and the runtime keeps their
// descriptors.)

// begin parses the call's request and starts its run; nil when the call
// is over already, its request sample emitted.
//
//go:noinline
func (c *Client) begin(ctx context.Context, call *protocols.Call, emit func(protocols.Sample)) *run {
	start := time.Now()
	sc, _ := call.Prepared.(*streamConfig)
	if sc == nil {
		var ae *attrError
		if sc, ae = c.parse(call.Request); ae != nil {
			// A value computed per call that validate could not see.
			failCall(emit, start, ae.err)
			return nil
		}
	}
	r := &run{ctx: ctx, c: c, sc: sc, emit: emit, lastEventID: sc.lastEventID, delay: sc.reconnectDelay,
		keepBody: call.KeepBody, keepHeaders: call.KeepHeaders, began: start}
	if !r.start() {
		r.end(0, protocols.ErrNone)
		return nil
	}
	return r
}

// failCall emits the request sample of a call whose request is invalid.
//
//go:noinline
func failCall(emit func(protocols.Sample), start time.Time, err error) {
	emit(protocols.Sample{Metric: protocols.MetricRequest, Time: time.Now(), Value: time.Since(start), Error: protocols.ErrProtocol, Message: err.Error()})
}

// start makes the run's stream and has it stopped by the scenario's end,
// the call's cancellation and the request's duration; false when the
// scenario has ended already.
//
//go:noinline
func (r *run) start() bool {
	s := &stream{stopped: make(chan struct{}), idle: r.sc.idleTimeout}
	r.s = s
	leave, ok := r.c.join(protocols.Ending(r.ctx), s)
	if !ok {
		return false
	}
	r.leave = leave
	r.stopCtx = context.AfterFunc(r.ctx, func() { s.stop(stopCancel) })
	if r.sc.duration > 0 {
		r.timer = time.AfterFunc(r.sc.duration, func() { s.stop(stopDuration) })
	}
	return true
}

// stop undoes start, once the stream has ended.
func (r *run) stop() {
	if r.timer != nil {
		r.timer.Stop()
	}
	r.stopCtx()
	r.leave()
}

// end closes the run and emits the call's request sample.
//
//go:noinline
func (r *run) end(status int, kind protocols.ErrorKind) {
	end := time.Now()
	r.close(end)
	r.emit(protocols.Sample{
		Metric:        protocols.MetricRequest,
		Time:          end,
		Value:         end.Sub(r.began),
		Status:        status,
		Error:         kind,
		BytesSent:     r.s.sent.Load(),
		BytesReceived: r.s.received.Load(),
		Message:       r.message(kind),
		Body:          r.body,
		Headers:       r.headers,
	})
}

// run is the state of one call across its connections.
type run struct {
	ctx         context.Context
	began       time.Time // when the call began
	c           *Client
	sc          *streamConfig
	s           *stream
	lastEventID string
	delay       time.Duration // before a reconnection; the server's retry replaces it
	events      int
	frame       frame
	why         string // the message of the last loss, for the request sample

	// What the request sample hands back for a check or a capture, and
	// only when the call asks (docs/sse.md, "Checks and captures"): the
	// data of the last event, in a buffer of the run's own, since the
	// frame's is reused, and the headers of the last response.
	keepBody, keepHeaders bool
	body                  []byte
	headers               map[string][]string

	// mu serialises the VU's goroutine and the client's settle ticker:
	// emit, which a protocol's caller need not make safe for concurrent
	// use, and the watch, which is used by one goroutine at a time.
	mu sync.Mutex
	// emit is the call's; call it under mu, or use out.
	emit func(protocols.Sample)
	// What stop undoes, set by start.
	leave   func()
	stopCtx func() bool
	timer   *time.Timer
	// watch is set once, before the run joins the settler; closed is set
	// when the call ends, after which the ticker emits nothing.
	watch  *delivery.Watch
	closed bool
	// l is the connection being read, nil between connections; status
	// is what its server answered.
	l      *link
	status int
}

// out emits s, serialised with the settle ticker's emits.
func (r *run) out(s protocols.Sample) {
	r.mu.Lock()
	r.emit(s)
	r.mu.Unlock()
}

// settle counts, as of now, the expected events that are miss_grace
// overdue; the client's ticker calls it.
func (r *run) settle(now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	r.missed(r.watch.Settle(now, r.sc.missGrace), now)
}

// close ends the run's watch as of end. After it returns the ticker emits
// nothing more for this call, so Do may return.
func (r *run) close(end time.Time) {
	if r.watch == nil {
		return
	}
	r.c.settler.remove(r)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	r.missed(r.watch.Close(end, r.sc.missGrace), end)
}

// advance reads the stream's events, and connects and reconnects as it
// must, until the connection has nothing to read (true: Do then waits on
// r.l) or the call is over (false: its request sample is emitted).
// waitErr is what the last wait returned.
//
//go:noinline
func (r *run) advance(waitErr error) bool {
	for {
		if r.l == nil {
			if r.connect() {
				return false
			}
			if r.l == nil {
				continue // the connection failed; reconnect after its pause
			}
		}
		kind, reconnectable, wait := r.read(waitErr)
		if wait {
			return true
		}
		waitErr = nil
		l := r.l
		r.l = nil
		r.hangUp(l)
		if r.lose(r.status, kind, reconnectable) {
			return false
		}
	}
}

// connect makes a connection and subscribes on it, which then becomes
// r.l. When that fails it handles the loss as lose does, and over is true
// when the call is over.
func (r *run) connect() (over bool) {
	l, kind := r.dial()
	if l == nil {
		return r.lose(0, kind, kind != protocols.ErrNone)
	}
	status, kind, reconnectable, ok := r.subscribe(l)
	if !ok {
		r.hangUp(l)
		return r.lose(status, kind, reconnectable)
	}
	r.connected(l, status)
	r.l, r.status = l, status
	return false
}

// read reads r.l's events until it has nothing to read (wait), or the
// connection ends: kind is then empty when the stream was stopped or had
// all its events, and reconnectable says whether the spec allows a
// reconnection after it. waitErr is what the last wait returned.
func (r *run) read(waitErr error) (kind protocols.ErrorKind, reconnectable, wait bool) {
	if waitErr != nil {
		return r.readErr(waitErr), true, false
	}
	l := r.l
	for {
		frame, err := l.er.next()
		if err == errWait {
			return protocols.ErrNone, false, true
		}
		if err != nil {
			return r.readErr(err), true, false
		}
		if r.event(frame, l) {
			return protocols.ErrNone, false, false
		}
	}
}

// lose handles the end of a connection whose server answered status, for
// kind: it returns true when the call is over, its request sample emitted,
// and false after the pause before a reconnection.
func (r *run) lose(status int, kind protocols.ErrorKind, reconnectable bool) (over bool) {
	if why := r.s.stopReason(); why != stopNone {
		r.end(status, stoppedKind(why))
		return true
	}
	if kind == protocols.ErrNone {
		r.end(status, kind) // the number of events was reached
		return true
	}
	r.lost(kind)
	if !r.sc.reconnect || !reconnectable {
		r.end(status, kind)
		return true
	}
	if !r.pause() {
		r.end(status, stoppedKind(r.s.stopReason()))
		return true
	}
	r.reconnecting(kind)
	return false
}

// stoppedKind is the outcome of a call whose stream was stopped for why:
// interrupted when the call was cancelled, a success otherwise.
func stoppedKind(why int32) protocols.ErrorKind {
	if why == stopCancel {
		return protocols.ErrInterrupted
	}
	return protocols.ErrNone
}

// pause waits the delay before a reconnection; false if the stream was
// stopped meanwhile.
//
//go:noinline
func (r *run) pause() bool {
	t := time.NewTimer(r.delay)
	defer t.Stop()
	select {
	case <-r.s.stopped:
		return false
	case <-t.C:
		return true
	}
}

// lost emits the samples of a connection lost for kind.
//
//go:noinline
func (r *run) lost(kind protocols.ErrorKind) {
	r.out(protocols.Sample{Metric: MetricDisconnects, Time: time.Now(), Error: kind, Message: r.why})
	r.out(protocols.Sample{Metric: MetricDisconnects + "_" + string(kind), Time: time.Now(), Error: kind, Message: r.why})
}

// reconnecting emits the samples of a reconnection after a loss for kind.
//
//go:noinline
func (r *run) reconnecting(kind protocols.ErrorKind) {
	r.out(protocols.Sample{Metric: MetricReconnects, Time: time.Now(), Value: r.delay, Error: kind})
	r.out(protocols.Sample{Metric: MetricReconnects + "_" + string(kind), Time: time.Now(), Value: r.delay, Error: kind})
}

// link is one connection of a stream, with what reads it: one
// allocation, apart from the stack an idle stream holds.
type link struct {
	conn streamConn
	rd   h1.Reader
	er   eventReader
	// begin is when the connection began, last when its last event came
	// (zero before the first).
	begin, last time.Time
	counted     bool // counted in the client's open streams
}

// hangUp closes l and gives its buffers back.
func (r *run) hangUp(l *link) {
	if l.counted {
		r.c.open.Add(-1)
	}
	l.er.close()
	r.s.clearConn()
	l.conn.Conn.Close()
}

// connected starts watching deliveries, if the request asks, emits l's
// connect sample and counts it in the open streams.
//
//go:noinline
func (r *run) connected(l *link, status int) {
	connected := time.Now()
	if r.watch == nil && r.sc.deliveryKey != "" && r.c.ledger != nil {
		// Watching starts once the server has the stream: a send that
		// begins from now on reaches this subscriber, or it is missed.
		// From now on the client's ticker settles it, even when nothing
		// arrives. Before the connect sample, so that whoever sees that
		// sample knows the sends it begins next are expected.
		r.watch = r.c.ledger.Watch(r.sc.deliveryKey)
		r.c.settler.add(r)
	}
	r.out(protocols.Sample{Metric: MetricConnect, Time: connected, Value: connected.Sub(l.begin), Status: status})
	r.c.open.Add(1)
	l.counted = true
}

// dial opens the connection to the stream's server and makes it the
// stream's; nil with an empty kind when the stream was stopped.
//
//go:noinline
func (r *run) dial() (*link, protocols.ErrorKind) {
	c, s := r.c, r.s
	begin := time.Now()
	u := c.cfg.requestURL(r.sc)
	host := u.Host
	if u.Port() == "" {
		if u.Scheme == "https" {
			host = net.JoinHostPort(u.Hostname(), "443")
		} else {
			host = net.JoinHostPort(u.Hostname(), "80")
		}
	}
	// The dial ends with the call's context; a scenario's end during the
	// dial is seen once it returns, within the target's timeout.
	raw, err := c.dialer.DialContext(r.ctx, "tcp", host)
	if err != nil {
		return nil, r.connErr(err)
	}
	var conn net.Conn = raw
	if u.Scheme == "https" {
		tc := tls.Client(raw, &tls.Config{ServerName: u.Hostname(), InsecureSkipVerify: c.cfg.insecure})
		raw.SetDeadline(time.Now().Add(c.cfg.timeout))
		if err := tc.HandshakeContext(r.ctx); err != nil {
			raw.Close()
			return nil, r.connErr(err)
		}
		raw.SetDeadline(time.Time{})
		conn = tc
	}
	if !s.setConn(conn) {
		conn.Close()
		return nil, protocols.ErrNone
	}
	l := &link{conn: streamConn{Conn: conn, s: s}, begin: begin}
	l.rd = *h1.NewReader(&l.conn, &c.reads)
	l.er = eventReader{rd: &l.rd, pool: &c.frames, max: c.cfg.maxEventSize}
	l.er.canWait = l.conn.ready.init(conn)
	return l, protocols.ErrNone
}

// subscribe sends the request and reads the response's head; ok says the
// server answered with an event stream, whose body er then reads.
//
//go:noinline
func (r *run) subscribe(l *link) (status int, kind protocols.ErrorKind, reconnectable, ok bool) {
	c, sc, s, er := r.c, r.sc, r.s, &l.er
	u := c.cfg.requestURL(sc)
	// The request, written by hand: one write, no transport goroutines.
	var b strings.Builder
	b.WriteString("GET ")
	b.WriteString(u.RequestURI())
	b.WriteString(" HTTP/1.1\r\nHost: ")
	b.WriteString(u.Host)
	b.WriteString("\r\nAccept: text/event-stream\r\nCache-Control: no-cache\r\n")
	userAgentSet := false
	for _, hs := range [][][2]string{c.cfg.headers, sc.headers} {
		for _, h := range hs {
			userAgentSet = userAgentSet || h[0] == "User-Agent"
		}
	}
	if !userAgentSet {
		b.WriteString("User-Agent: " + userAgent + "\r\n")
	}
	for _, h := range c.cfg.headers {
		if !hasHeader(sc.headers, h[0]) {
			b.WriteString(h[0] + ": " + h[1] + "\r\n")
		}
	}
	for _, h := range sc.headers {
		b.WriteString(h[0] + ": " + h[1] + "\r\n")
	}
	if r.lastEventID != "" {
		b.WriteString("Last-Event-ID: " + r.lastEventID + "\r\n")
	}
	b.WriteString("\r\n")
	s.arm(time.Now().Add(c.cfg.timeout))
	if _, err := io.WriteString(&l.conn, b.String()); err != nil {
		return 0, r.connErr(err), true, false
	}
	if er.canWait {
		// A server may hold the head until its first event: wait for it
		// with no buffer, as for an event.
		if err := l.conn.wait(); err != nil {
			return 0, r.connErr(err), true, false
		}
	}
	var resp h1.Response
	if err := er.rd.ReadHead(&resp, "GET"); err != nil {
		return 0, r.connErr(err), true, false
	}
	s.arm(time.Time{})
	if r.keepHeaders {
		r.headers = resp.Header() // read once the call ends
	}
	if s.stopReason() != stopNone {
		return resp.Status, protocols.ErrNone, false, false
	}
	if ct := field(&resp, "Content-Type"); resp.Status != 200 || !bytes.HasPrefix(ct, []byte("text/event-stream")) {
		// The spec fails the connection for good: no reconnection.
		r.why = fmt.Sprintf("the server answered %d with Content-Type %q, not 200 with text/event-stream", resp.Status, ct)
		return resp.Status, ErrStatus, false, false
	}
	er.body = er.rd.Body(&resp)
	return resp.Status, protocols.ErrNone, false, true
}

// event handles one frame of l. It returns true once the request's
// number of events is reached.
func (r *run) event(raw []byte, l *link) (done bool) {
	now := time.Now()
	f := &r.frame
	f.parse(raw)
	if f.malformed {
		r.out(protocols.Sample{Metric: MetricMalformed, Time: now, Error: ErrMalformed})
	}
	if f.hasID {
		r.lastEventID = string(f.id)
	}
	if f.hasRetry {
		r.delay = f.retry
	}
	if !f.hasData {
		return false // a comment, a heartbeat or a frame of fields only
	}
	// One lock for the event's samples, rather than one per sample.
	r.mu.Lock()
	if l.last.IsZero() {
		r.emit(protocols.Sample{Metric: MetricFirstEvent, Time: now, Value: now.Sub(l.begin)})
	} else {
		r.emit(protocols.Sample{Metric: MetricEventGap, Time: now, Value: now.Sub(l.last)})
	}
	l.last = now
	r.emit(protocols.Sample{Metric: MetricEvents, Time: now})
	r.deliver(f.data, now)
	r.mu.Unlock()
	r.events++
	if r.keepBody {
		r.body = append(r.body[:0], f.data...)
	}
	return r.sc.events > 0 && r.events >= r.sc.events
}

// field returns the value of resp's first field named name, or nil.
func field(resp *h1.Response, name string) []byte {
	for _, f := range resp.Fields {
		if strings.EqualFold(string(f.Name), name) {
			return f.Value
		}
	}
	return nil
}

func hasHeader(hs [][2]string, key string) bool {
	for _, h := range hs {
		if h[0] == key {
			return true
		}
	}
	return false
}

// deliver reads an event's id and send time and matches them; the caller
// holds r.mu.
func (r *run) deliver(data []byte, now time.Time) {
	sc := r.sc
	if sc.id.set() {
		if id, err := sc.id.extract(data); err != nil {
			r.emit(protocols.Sample{Metric: MetricExtractErrors, Time: now, Error: protocols.ErrProtocol, Message: sc.id.describe("id") + ": " + err.Error()})
		} else if r.watch != nil {
			switch r.watch.Received(id) {
			case delivery.ReceiptDuplicate:
				r.emit(protocols.Sample{Metric: MetricEventsDuplicate, Time: now})
			case delivery.ReceiptLate:
				r.emit(protocols.Sample{Metric: MetricEventsLate, Time: now})
			}
		}
	}
	if sc.sentAt.set() {
		raw, err := sc.sentAt.extract(data)
		var sent time.Time
		if err == nil {
			sent, err = parseTimestamp(raw, sc.sentAtUnit)
		}
		if err != nil {
			r.emit(protocols.Sample{Metric: MetricExtractErrors, Time: now, Error: protocols.ErrProtocol, Message: sc.sentAt.describe("sent_at") + ": " + err.Error()})
		} else {
			// Wall clocks: sender and subscriber must share the host's.
			r.emit(protocols.Sample{Metric: MetricDeliveryLatency, Time: now, Value: max(0, now.Sub(sent))})
		}
	}
}

// missed emits one sample per missed event, so that a threshold such as
// count == 0 reads the number of events; the caller holds r.mu.
func (r *run) missed(n int, now time.Time) {
	for range n {
		r.emit(protocols.Sample{Metric: MetricEventsMissed, Time: now})
	}
}

// message is the request sample's Message for a call that ended with
// kind: why the stream was lost, when it was.
func (r *run) message(kind protocols.ErrorKind) string {
	if kind == protocols.ErrNone || kind == protocols.ErrInterrupted {
		return ""
	}
	return r.why
}

// connErr classifies an error before the stream opened: a deadline there
// is the target's timeout.
func (r *run) connErr(err error) protocols.ErrorKind {
	if r.s.stopReason() != stopNone {
		return protocols.ErrNone
	}
	r.why = err.Error()
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		r.why = "the server closed the connection before it answered"
		return protocols.ErrReset
	}
	kind := protocols.NetErrorKind(err)
	if kind == protocols.ErrTimeout {
		r.why = fmt.Sprintf("no answer within the target's timeout (%s)", r.c.cfg.timeout)
	}
	return kind
}

// readErr classifies the error that ended a connection's reading.
func (r *run) readErr(err error) protocols.ErrorKind {
	switch {
	case r.s.stopReason() != stopNone:
		return protocols.ErrNone
	case errors.Is(err, errFrameTooLong):
		r.why = fmt.Sprintf("a frame longer than max_event_size (%d bytes)", r.c.cfg.maxEventSize)
		return ErrMalformed
	case errors.Is(err, os.ErrDeadlineExceeded):
		r.why = fmt.Sprintf("nothing arrived for idle_timeout (%s)", r.sc.idleTimeout)
		return ErrStall
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		r.why = "the server ended the stream"
		return ErrEOF
	}
	r.why = err.Error()
	return protocols.NetErrorKind(err)
}
