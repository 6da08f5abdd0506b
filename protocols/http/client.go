package http

import (
	"bufio"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	nethttp "net/http"
	"net/http/cookiejar"
	"net/http/httptrace"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zclconf/go-cty/cty"

	"github.com/hload/hload/protocols"
	"github.com/hload/hload/protocols/http/h1"
)

// Client executes calls against one HTTP target. Each VU gets its own
// connections on its first call, a cookie jar on its first Set-Cookie, and
// a net/http transport only if the target speaks HTTP/2 (see engine.go).
type Client struct {
	cfg   *targetConfig
	check func(*nethttp.Request, []*nethttp.Request) error

	// vus is a copy-on-grow table indexed by VU id, read without a lock
	// because VU ids are dense; mu serialises adding VUs and growing it.
	vus atomic.Pointer[vuTable]
	mu  sync.Mutex
	// sparse holds VUs whose ids are too large for the table, so that a
	// stray huge id cannot make the table allocate gigabytes.
	sparse sync.Map
	// pool holds the engine's read buffers: a connection holds one only
	// while a response is read.
	pool h1.Pool
}

var (
	_ protocols.Client       = (*Client)(nil)
	_ protocols.Preparer     = (*Client)(nil)
	_ protocols.BodySearcher = (*Client)(nil)
	_ protocols.Connector    = (*Client)(nil)
)

// SearchesBody implements protocols.BodySearcher: both the engine and the
// net/http path look for a call's BodyContains as the body streams.
func (c *Client) SearchesBody() bool { return true }

// maxTableVU is the largest VU id kept in the table.
const maxTableVU = 1 << 20

type vuTable struct {
	slots []atomic.Pointer[vu]
}

// errTooManyRedirects ends a call that was redirected more than the target
// allows.
var errTooManyRedirects = errors.New("too many redirects")

func newClient(cfg *targetConfig) *Client {
	c := &Client{cfg: cfg}
	c.check = func(req *nethttp.Request, via []*nethttp.Request) error {
		if !cfg.follow {
			return nethttp.ErrUseLastResponse
		}
		if len(via) > cfg.maxRedirects {
			return fmt.Errorf("%w: stopped after %d", errTooManyRedirects, cfg.maxRedirects)
		}
		return nil
	}
	return c
}

// vu returns the state of VU id, creating it on the VU's first call.
func (c *Client) vu(id uint64) *vu {
	if t := c.vus.Load(); t != nil && id < uint64(len(t.slots)) {
		if v := t.slots[id].Load(); v != nil {
			return v
		}
	}
	if id > maxTableVU {
		if v, ok := c.sparse.Load(id); ok {
			return v.(*vu)
		}
		v, _ := c.sparse.LoadOrStore(id, newVU(c.cfg, c.check))
		return v.(*vu)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.vus.Load()
	if t == nil || id >= uint64(len(t.slots)) {
		n := 64
		if t != nil {
			n = 2 * len(t.slots)
		}
		for uint64(n) <= id {
			n *= 2
		}
		grown := &vuTable{slots: make([]atomic.Pointer[vu], n)}
		if t != nil {
			for i := range t.slots {
				grown.slots[i].Store(t.slots[i].Load())
			}
		}
		c.vus.Store(grown)
		t = grown
	}
	v := t.slots[id].Load()
	if v == nil {
		v = newVU(c.cfg, c.check)
		t.slots[id].Store(v)
	}
	return v
}

// Close closes the idle connections of every VU. Calls in flight keep theirs.
func (c *Client) Close() error {
	c.mu.Lock()
	t := c.vus.Load()
	c.mu.Unlock()
	if t != nil {
		for i := range t.slots {
			if v := t.slots[i].Load(); v != nil {
				v.closeIdle()
			}
		}
	}
	c.sparse.Range(func(_, v any) bool {
		v.(*vu).closeIdle()
		return true
	})
	return nil
}

// closeIdle closes the VU's connections unless a call is in flight.
func (v *vu) closeIdle() {
	if !v.busy.TryLock() {
		return
	}
	defer v.busy.Unlock()
	v.closeAll()
	if v.transport != nil {
		v.transport.CloseIdleConnections()
	}
}

// vu is one virtual user's HTTP state. Do is never called concurrently for
// one VU, so everything here but the byte counters and the call state's
// trace marks belongs to the goroutine running the VU's current call.
type vu struct {
	cfg    *targetConfig
	wire   wire
	dialer *dialer
	jar    lazyJar
	// busy is held during a call, so that Close leaves a call's
	// connections alone.
	busy sync.Mutex

	// The engine's state (engine.go): the keep-alive connections to the
	// target, used in turn, and one to another host a redirect led to.
	conns []*h1conn
	next  int
	away  *h1conn
	// active is the connection of the call in flight, for the hook that
	// ends it when the run ends; watched is the context that hook is
	// registered with.
	active   atomic.Pointer[h1conn]
	watched  context.Context
	unwatch  func() bool
	watchMu  sync.Mutex
	watchGen uint64
	resp     h1.Response
	wbuf     []byte // a request rendered per call
	// scan reads the bodies that checks and captures read (body.go),
	// through hbody or netBody, decoded by gz or zl into dbuf when they
	// are compressed; br lets a decoder read net/http's body bytewise.
	scan    protocols.BodyScan
	hbody   h1.Body
	netBody trackedReader
	gz      *gzip.Reader
	zl      io.ReadCloser
	dbuf    []byte
	br      *bufio.Reader
	// served counts the responses the engine read, for tests.
	served int64

	// h2 says the target negotiated HTTP/2: the VU's calls go through
	// net/http's transport, set up then.
	h2        bool
	transport *nethttp.Transport
	client    nethttp.Client

	// call holds what the transport's goroutines may touch during a call.
	// It is reused only when the previous call provably left none of them
	// behind, and replaced otherwise.
	call *callState
	// req is the template each call's request is copied from, so that
	// WithContext makes the call's only Request allocation.
	req nethttp.Request
	// rendered is the request of the VU's last call that was not
	// prepared, and scratch what helps render the next.
	rendered rendered
	scratch  scratch
	// pending is a response the client is to take as its first hop's,
	// because send made that hop itself; see replay.
	pending *nethttp.Response
	check   func(*nethttp.Request, []*nethttp.Request) error
}

// send sends req with the VU's cookies and redirect policy. A call by a VU
// that holds no cookie and gets no redirect to follow goes straight to the
// transport: nethttp.Client would copy the headers of every request, in case
// of a redirect, for nothing. A redirect to follow is handed to the client
// with the response already in hand, so the client applies Go's redirect
// rules without sending the first request again.
func (v *vu) send(req *nethttp.Request) (*nethttp.Response, error) {
	if v.jar.jar != nil {
		return v.client.Do(req)
	}
	resp, err := v.transport.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	if v.cfg.follow && isRedirect(resp) {
		v.pending = resp
		resp, err = v.client.Do(req)
		v.pending = nil
		return resp, err
	}
	if len(resp.Header["Set-Cookie"]) > 0 {
		// As nethttp.Client does: cookies belong to the Host header's host.
		u := req.URL
		if req.Host != "" {
			c := *u
			c.Host = req.Host
			u = &c
		}
		v.jar.SetCookies(u, resp.Cookies())
	}
	return resp, nil
}

// isRedirect reports whether nethttp.Client would follow resp.
func isRedirect(resp *nethttp.Response) bool {
	switch resp.StatusCode {
	case 301, 302, 303, 307, 308:
		return resp.Header.Get("Location") != ""
	}
	return false
}

// replay is the VU's client transport: it returns the pending response once,
// then sends through the VU's transport.
type replay vu

func (r *replay) RoundTrip(req *nethttp.Request) (*nethttp.Response, error) {
	if resp := r.pending; resp != nil {
		r.pending = nil
		return resp, nil
	}
	return r.transport.RoundTrip(req)
}

func newVU(cfg *targetConfig, check func(*nethttp.Request, []*nethttp.Request) error) *vu {
	v := &vu{cfg: cfg, check: check}
	v.dialer = newDialer(cfg, &v.wire)
	v.conns = make([]*h1conn, cfg.connsPerVU)
	return v
}

// initNetHTTP sets up the VU's net/http transport, for HTTP/2.
func (v *vu) initNetHTTP() {
	if v.transport != nil {
		return
	}
	cfg, d := v.cfg, v.dialer
	protos := new(nethttp.Protocols)
	protos.SetHTTP1(true)
	h2 := cfg.http2 && cfg.base.Scheme == "https"
	protos.SetHTTP2(h2)
	v.transport = &nethttp.Transport{
		// hload connects to the target itself; a proxy would be measured
		// instead of the target.
		Proxy:               nil,
		DialContext:         d.DialContext,
		DialTLSContext:      d.DialTLSContext,
		ForceAttemptHTTP2:   h2,
		Protocols:           protos,
		MaxConnsPerHost:     cfg.connsPerVU,
		MaxIdleConnsPerHost: cfg.connsPerVU,
		IdleConnTimeout:     90 * time.Second,
		// The body is read as it comes on the wire, so byte counts are
		// wire bytes and the server does not pay for compression.
		DisableCompression: true,
	}
	v.client = nethttp.Client{Transport: (*replay)(v), Jar: &v.jar, CheckRedirect: v.check}
	v.call = newCallState()
}

// callState is what the transport's goroutines write during a call: the
// trace hooks and marks, and the header map its writer reads.
type callState struct {
	trace  httptrace.ClientTrace
	header nethttp.Header
	// cancel ends the call's context. It is set before the call is made
	// in flight, and a connection's reader calls it, through lose, when
	// the connection fails after the request was written: that keeps the
	// transport from sending the request again. lost says why.
	cancel context.CancelFunc
	lost   atomic.Pointer[lostCall]

	start     time.Time
	firstByte atomic.Int64 // time to first byte in ns; 0 until seen
	wrote     atomic.Int32 // requests the transport finished writing
	conns     int32        // connections handed to the call (caller's goroutine)
	connect   time.Duration
	connected time.Time
	newConn   bool
}

func newCallState() *callState {
	s := &callState{header: make(nethttp.Header, 8)}
	s.trace = httptrace.ClientTrace{
		GotConn:              s.gotConn,
		GotFirstResponseByte: s.gotFirstResponseByte,
		WroteRequest:         s.wroteRequest,
	}
	return s
}

func (s *callState) reset(start time.Time, cancel context.CancelFunc) {
	s.start = start
	s.cancel = cancel
	s.lost.Store(nil)
	s.firstByte.Store(0)
	s.wrote.Store(0)
	s.conns = 0
	s.connect = 0
	s.connected = time.Time{}
	s.newConn = false
}

// lostCall is why a connection failed under a call after its request was
// written.
type lostCall struct {
	kind protocols.ErrorKind
	err  error
}

// lose ends the call whose request was written on a connection that then
// failed before a byte of the response came: at once, on the connection's
// reader goroutine, so that the transport sees the call's context done
// before it could send the request again. An end of stream on a reused
// connection is the server closing it as idle, most likely before it read
// the request: idle_closed. Anything else is a reset, or what the error
// says it is.
func (s *callState) lose(err error, reused bool) {
	kind := protocols.ErrReset
	switch {
	case errors.Is(err, io.EOF) && reused:
		kind = protocols.ErrIdleClosed
	case errors.Is(err, io.EOF):
	default:
		if k := protocols.NetErrorKind(err); k != protocols.ErrProtocol {
			kind = k
		}
	}
	if s.lost.CompareAndSwap(nil, &lostCall{kind: kind, err: err}) {
		s.cancel()
	}
}

// gotConn runs on the caller's goroutine for HTTP/1 and HTTP/2 alike.
func (s *callState) gotConn(info httptrace.GotConnInfo) {
	s.conns++
	if info.Reused {
		return
	}
	if c := connOf(info.Conn); c != nil && c.reported.CompareAndSwap(false, true) {
		s.connect += c.connect
		s.connected = c.connected
		s.newConn = true
	}
}

// gotFirstResponseByte keeps the last response's: after redirects, the time
// to the first byte of the response the call ends with.
func (s *callState) gotFirstResponseByte() {
	d := time.Since(s.start)
	if d <= 0 {
		d = 1
	}
	s.firstByte.Store(int64(d))
}

func (s *callState) wroteRequest(httptrace.WroteRequestInfo) {
	s.wrote.Add(1)
}

// quiet reports whether no transport goroutine can still touch s: every
// request handed a connection has been written, so the header map is no
// longer read, and the response arrived, so no first-byte hook is pending.
func (s *callState) quiet() bool {
	return s.wrote.Load() == s.conns
}

// lazyJar is a cookie jar that costs nothing until the server sets a cookie.
type lazyJar struct {
	jar *cookiejar.Jar
}

func (j *lazyJar) Cookies(u *url.URL) []*nethttp.Cookie {
	if j.jar == nil {
		return nil
	}
	return j.jar.Cookies(u)
}

func (j *lazyJar) SetCookies(u *url.URL, cookies []*nethttp.Cookie) {
	if j.jar == nil {
		j.jar, _ = cookiejar.New(nil) // never fails without options
	}
	j.jar.SetCookies(u, cookies)
}

// maxKeptBody bounds the body buffer a VU keeps between calls: a larger
// one, for a max_body above it, is dropped after its call.
const maxKeptBody = 1 << 20

// Prepare renders a request that is the same for every call once, for
// Do to send as it is: its URL, headers and body are encoded here rather
// than per call. It returns the attribute's error that Do would report.
func (c *Client) Prepare(request cty.Value) (any, error) {
	p := &prepared{client: c}
	if err := render(c.cfg, request, &p.rendered, &scratch{}); err != nil {
		return nil, err
	}
	h := firstHop(&p.rendered)
	p.wire = appendRequest(nil, &h, "")
	return p, nil
}

// requestOf returns the call's request rendered: the one Prepare made for
// it, or the VU's own, rendered now.
func (c *Client) requestOf(v *vu, call protocols.Call) (*rendered, error) {
	switch p := call.Prepared.(type) {
	case *prepared:
		if p.client == c {
			return &p.rendered, nil
		}
	case *template:
		if p.client == c {
			return &v.rendered, renderHoles(c.cfg, p, call.Holes, &v.rendered, &v.scratch)
		}
	}
	return &v.rendered, render(c.cfg, call.Request, &v.rendered, &v.scratch)
}

// Do executes one call for call.VU and emits its samples, timed from
// call.Start when the core set it.
func (c *Client) Do(ctx context.Context, call protocols.Call, emit func(protocols.Sample)) {
	start := call.Start
	if start.IsZero() {
		start = time.Now()
	}
	v := c.vu(call.VU)
	v.busy.Lock()
	defer v.busy.Unlock()

	rd, err := c.requestOf(v, call)
	if err != nil {
		end := time.Now()
		emit(protocols.Sample{Metric: protocols.MetricRequest, Time: end, Value: end.Sub(start),
			Error: protocols.ErrProtocol, Message: err.Error()})
		return
	}
	if !v.h2 {
		sent, received := v.wire.sent.Load(), v.wire.received.Load()
		var out outcome
		err := c.doH1(ctx, v, call, rd, start, &out)
		v.active.Store(nil)
		if err == nil {
			end := time.Now()
			if out.newConn {
				emit(protocols.Sample{Metric: protocols.MetricConnect, Time: out.connected, Value: out.connect})
			}
			if out.ttfb > 0 {
				emit(protocols.Sample{Metric: protocols.MetricTTFB, Time: start.Add(out.ttfb), Value: out.ttfb, Status: out.status})
			}
			s := protocols.Sample{
				Metric:        protocols.MetricRequest,
				Time:          end,
				Value:         end.Sub(start),
				Status:        out.status,
				Error:         out.kind,
				Message:       out.msg,
				BytesSent:     v.wire.sent.Load() - sent,
				BytesReceived: v.wire.received.Load() - received,
				Headers:       out.headers,
			}
			if out.scanned {
				v.scan.Fill(&s)
			}
			emit(s)
			v.scan.Shrink(maxKeptBody)
			return
		}
		// errHTTP2: nothing was sent; the call goes through net/http on
		// the connection the engine opened.
	}
	c.doNetHTTP(ctx, v, call, rd, start, emit)
}

// doNetHTTP makes the call through net/http, for a target that speaks
// HTTP/2.
func (c *Client) doNetHTTP(ctx context.Context, v *vu, call protocols.Call, rd *rendered, start time.Time, emit func(protocols.Sample)) {
	st := v.call
	req, opt := v.request(rd, st.header), rd.opt

	rctx, cancel := context.WithTimeout(ctx, opt.timeout)
	defer cancel()
	st.reset(start, cancel)
	req = req.WithContext(httptrace.WithClientTrace(rctx, &st.trace))
	sent, received := v.wire.sent.Load(), v.wire.received.Load()

	v.wire.inflight.Store(st)
	resp, err := v.send(req)
	var status int
	var headers map[string][]string
	var decodeErr error
	scanned := false
	if resp != nil {
		status = resp.StatusCode
		if call.KeepHeaders {
			// The response's own map, not a copy: it is the call's, and
			// Headers is valid only during emit. After redirects it is the
			// last response's, the one the call ends with.
			headers = resp.Header
		}
		if err == nil {
			if scans(&call) {
				// As the engine does: checks and captures read the
				// decoded body, as it streams.
				decodeErr, err = v.scanNetBody(resp.Body, []byte(resp.Header.Get("Content-Encoding")), &call)
				scanned = err == nil && decodeErr == nil
			} else {
				_, err = io.Copy(io.Discard, resp.Body)
			}
			resp.Body.Close()
		}
	}
	v.wire.inflight.Store(nil)
	end := time.Now()

	kind, msg := protocols.ErrNone, ""
	if decodeErr != nil {
		kind, msg = protocols.ErrProtocol, decodeErr.Error()
	} else if err != nil {
		kind, msg = classify(ctx, rctx, st, err, opt.timeout)
	} else if opt.expected.failed(status) {
		kind, msg = statusKind(status), statusMessage(resp, &opt.expected)
	}
	if err != nil || !st.quiet() {
		// A transport goroutine may still hold st; let it keep it.
		v.call = newCallState()
	}

	if st.newConn {
		emit(protocols.Sample{Metric: protocols.MetricConnect, Time: st.connected, Value: st.connect})
	}
	if fb := time.Duration(st.firstByte.Load()); fb > 0 {
		emit(protocols.Sample{Metric: protocols.MetricTTFB, Time: start.Add(fb), Value: fb, Status: status})
	}
	s := protocols.Sample{
		Metric:        protocols.MetricRequest,
		Time:          end,
		Value:         end.Sub(start),
		Status:        status,
		Error:         kind,
		Message:       msg,
		BytesSent:     v.wire.sent.Load() - sent,
		BytesReceived: v.wire.received.Load() - received,
		Headers:       headers,
	}
	if scanned {
		v.scan.Fill(&s)
	}
	emit(s)
	v.scan.Shrink(maxKeptBody)
}
