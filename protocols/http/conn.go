package http

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http/httptrace"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// wire is what one VU's connections share with its calls: running totals
// of the bytes written and read, which the transport's reader and writer
// goroutines update and Do takes deltas of, and the call in flight, which
// a connection's writer arms itself with; see countingConn.
type wire struct {
	sent     atomic.Int64
	received atomic.Int64
	inflight atomic.Pointer[callState]
}

// countingConn is a TCP connection that counts its bytes into its VU's
// wire and remembers how long it took to set up, so that the first call to
// use it can report the connect time. On a plain HTTP/1 connection its
// guard also keeps the transport from sending a request twice; over TLS,
// tlsConn's guard does, above TLS.
type countingConn struct {
	net.Conn
	wire *wire
	// connect is TCP connect plus TLS handshake, without DNS; connected is
	// when it ended. Both are written before the transport sees the conn.
	connect   time.Duration
	connected time.Time
	// reported is set by the first call that used this connection, so its
	// set-up is reported once however the transport pools it.
	reported atomic.Bool
	// guarded says guard is on: plain HTTP/1. Set before the transport
	// sees the conn.
	guarded bool
	guard   guard
	// dl is the engine's call deadline on this connection; see arm.
	dl callDeadline
}

// callDeadline is the deadline of the engine's call on a connection, and
// what the socket holds. Setting a socket's deadline costs a clock read
// and a timer change in the Go runtime, a tenth of a request's user time
// in the get case; so a call keeps the deadline an earlier call set when
// it is not later than its own and not far before it (arm), and a read or
// write that an earlier deadline ends is resumed with the call's own
// (extend). A call's time limit stays exact: it ends at due, never later,
// and not before.
type callDeadline struct {
	// due is the call's deadline and armed the socket's, both read and
	// written only by the VU's goroutine. due is zero outside the engine's
	// calls (net/http's connections), where nothing is resumed.
	due, armed time.Time
	// cut says the end of the run set a past deadline to end the call in
	// flight (vu.watch): nothing resumes it. Set by the run's hook, cleared
	// by the VU's next call.
	cut atomic.Bool
}

// arm makes due the deadline of the call starting on c. The socket keeps
// the deadline it holds when that is at most due and at most slack before
// it: the call is then resumed once at that deadline (extend), when it
// lasts that long. A deadline the run's end cut is replaced.
func (c *countingConn) arm(due time.Time, slack time.Duration) {
	d := &c.dl
	d.due = due
	cut := d.cut.Load()
	if cut {
		d.cut.Store(false)
	}
	if !cut && !d.armed.IsZero() && !d.armed.After(due) && due.Sub(d.armed) <= slack {
		return
	}
	c.Conn.SetDeadline(due)
	d.armed = due
}

// extend sets the call's deadline on the socket when err is the end of an
// earlier one, and reports whether it did: the read or write that err
// ended is then to be made again. After a cut, or at the call's own
// deadline, it reports false.
func (c *countingConn) extend(err error) bool {
	d := &c.dl
	if d.due.IsZero() || !d.armed.Before(d.due) || d.cut.Load() || !errors.Is(err, os.ErrDeadlineExceeded) {
		return false
	}
	c.Conn.SetDeadline(d.due)
	d.armed = d.due
	// A cut that came while this set the deadline may have been
	// overwritten: the call ends as the cut meant it to.
	return !d.cut.Load()
}

// forget says the socket's deadline is no longer one arm set, so that
// nothing is resumed past it and the next call sets its own.
func (c *countingConn) forget() { c.dl.due, c.dl.armed = time.Time{}, time.Time{} }

// write writes p on the socket, resumed past an earlier call's deadline;
// it counts nothing.
func (c *countingConn) write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	for err != nil && n < len(p) && c.extend(err) {
		var m int
		m, err = c.Conn.Write(p[n:])
		n += m
	}
	return n, err
}

func (c *countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	for n == 0 && err != nil && c.extend(err) {
		n, err = c.Conn.Read(p)
	}
	c.wire.received.Add(int64(n))
	if c.guarded {
		c.guard.read(n, err)
	}
	return n, err
}

// Write counts before writing: once the bytes are on the wire the server may
// answer, and the call may finish before this goroutine runs again. The
// guard arms before writing, for the same reason: the server may reset the
// connection before Write returns.
func (c *countingConn) Write(p []byte) (int, error) {
	var prev *callState
	if c.guarded {
		var err error
		if prev, err = c.guard.arm(); err != nil {
			return 0, err
		}
	}
	c.wire.sent.Add(int64(len(p)))
	n, err := c.write(p)
	if n < len(p) {
		c.wire.sent.Add(int64(n - len(p)))
		if n == 0 && c.guarded {
			c.guard.disarm(prev)
		}
	}
	return n, err
}

// tlsConn is an HTTP/1 connection over TLS, guarded above TLS: a byte read
// there is a byte of the response, not a TLS record such as the server's
// close_notify. An HTTP/2 connection stays a bare *tls.Conn, which is how
// the transport tells that it negotiated HTTP/2.
type tlsConn struct {
	*tls.Conn
	guard guard
}

func (c *tlsConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.guard.read(n, err)
	return n, err
}

func (c *tlsConn) Write(p []byte) (int, error) {
	prev, err := c.guard.arm()
	if err != nil {
		return 0, err
	}
	n, err := c.Conn.Write(p)
	if n == 0 && len(p) > 0 {
		c.guard.disarm(prev)
	}
	return n, err
}

// guard keeps the transport from sending a request twice on an HTTP/1
// connection. net/http sends an idempotent request again, on another
// connection, when a reused connection fails after the request was written
// and before the response began; the server may have received it the first
// time. So the writer arms the guard with the VU's call in flight before
// it writes, the first byte read disarms it, and a read that fails while it
// is armed ends the call (see callState.lose) before the transport can
// retry. A write on a connection whose reader already saw it fail is
// refused with nothing written: that is the one retry net/http makes which
// is always safe, and it is left to make it.
type guard struct {
	wire *wire
	// tcp is the TCP connection under the guarded one, peeked at before a
	// call writes on it.
	tcp *net.TCPConn
	// armed is the call whose request was written and whose response has
	// not begun; closed is set once a read failed. answered is set once a
	// response began here, so the connection counts as reused; only the
	// connection's one reader goroutine touches it.
	armed    atomic.Pointer[callState]
	closed   atomic.Bool
	answered bool
}

// errClosedBeforeWrite refuses a write on a connection the server closed.
var errClosedBeforeWrite = fmt.Errorf("the server closed the connection before the request was written: %w", io.EOF)

// arm arms the guard with the call in flight, if any, before a write, and
// returns what it was armed with; it refuses the write on a closed
// connection. A call's first write on the connection peeks first: the
// server may have closed it, right after its last response or as idle,
// and the reader may not have run since.
func (g *guard) arm() (prev *callState, err error) {
	if g.closed.Load() {
		return nil, errClosedBeforeWrite
	}
	if s := g.wire.inflight.Load(); s != nil {
		prev = g.armed.Swap(s)
		if prev != s && g.tcp != nil && peerClosed(g.tcp) {
			g.armed.Store(prev)
			g.closed.Store(true)
			return nil, errClosedBeforeWrite
		}
	}
	return prev, nil
}

// disarm undoes arm after a write that wrote nothing.
func (g *guard) disarm(prev *callState) { g.armed.Store(prev) }

// read follows a read: a byte disarms, an error ends the armed call.
func (g *guard) read(n int, err error) {
	if n > 0 {
		if g.armed.Load() != nil {
			g.armed.Store(nil)
			g.answered = true
		}
	} else if err != nil {
		g.closed.Store(true)
		if s := g.armed.Swap(nil); s != nil && g.wire.inflight.Load() == s {
			s.lose(err, g.answered)
		}
	}
}

// connOf returns the countingConn under a connection handed out by the
// transport: the conn itself for http, the *tls.Conn's inner conn for https.
func connOf(c net.Conn) *countingConn {
	switch c := c.(type) {
	case *countingConn:
		return c
	case *tls.Conn:
		cc, _ := c.NetConn().(*countingConn)
		return cc
	case *tlsConn:
		cc, _ := c.NetConn().(*countingConn)
		return cc
	}
	return nil
}

// connectTiming records the TCP connect phase of one dial. The dialer may
// race IPv4 and IPv6 attempts, so the hooks can run concurrently.
type connectTiming struct {
	mu    sync.Mutex
	start time.Time
	done  time.Time
}

func (t *connectTiming) connectStart(network, addr string) {
	now := time.Now()
	t.mu.Lock()
	if t.start.IsZero() {
		t.start = now
	}
	t.mu.Unlock()
}

func (t *connectTiming) connectDone(network, addr string, err error) {
	if err != nil {
		return
	}
	now := time.Now()
	t.mu.Lock()
	t.done = now
	t.mu.Unlock()
}

// dialer opens one VU's connections.
type dialer struct {
	net     net.Dialer
	tls     *tls.Config // nil for an http target
	timeout time.Duration
	wire    *wire
	// pending is an HTTP/2 connection the engine opened, for the
	// transport's next dial to take.
	pending atomic.Pointer[tls.Conn]
}

func newDialer(cfg *targetConfig, w *wire) *dialer {
	d := &dialer{
		// The transport dials with the request's values but without its
		// cancellation, so a dial can outlive its call; bound it.
		net:     net.Dialer{Timeout: cfg.timeout, KeepAlive: 15 * time.Second},
		timeout: cfg.timeout,
		wire:    w,
	}
	d.tls = &tls.Config{
		// Verification is on unless the user turned it off for this target.
		InsecureSkipVerify: cfg.insecure,
		NextProtos:         []string{"http/1.1"},
	}
	if cfg.http2 && cfg.base.Scheme == "https" {
		d.tls.NextProtos = []string{"h2", "http/1.1"}
	}
	return d
}

// dial opens a TCP connection and measures its connect phase, without the
// DNS lookup, through a trace of its own that lives as long as the dial.
func (d *dialer) dial(ctx context.Context, network, addr string) (*countingConn, error) {
	var t connectTiming
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		ConnectStart: t.connectStart,
		ConnectDone:  t.connectDone,
	})
	begin := time.Now()
	c, err := d.net.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	end := time.Now()
	t.mu.Lock()
	if !t.start.IsZero() && !t.done.IsZero() {
		begin, end = t.start, t.done
	}
	t.mu.Unlock()
	tcp, _ := c.(*net.TCPConn)
	return &countingConn{Conn: c, wire: d.wire, connect: end.Sub(begin), connected: end, guard: guard{wire: d.wire, tcp: tcp}}, nil
}

// DialContext is the transport's dialer for http.
func (d *dialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	c, err := d.dial(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	c.guarded = true // hload does not send HTTP/2 without TLS
	return c, nil
}

// DialTLSContext is the transport's dialer for https. It does the handshake
// itself, so the handshake is timed with the connect and its bytes are
// counted; the transport picks HTTP/2 from the negotiated protocol.
func (d *dialer) DialTLSContext(ctx context.Context, network, addr string) (net.Conn, error) {
	if tc := d.pending.Swap(nil); tc != nil {
		return tc, nil
	}
	ctx, cancel := context.WithTimeout(ctx, d.timeout)
	defer cancel()
	c, err := d.dial(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	cfg := d.tls.Clone()
	if host, _, err := net.SplitHostPort(addr); err == nil {
		cfg.ServerName = host
	}
	begin := time.Now()
	tc := tls.Client(c, cfg)
	if err := tc.HandshakeContext(ctx); err != nil {
		c.Close()
		return nil, err
	}
	c.connected = time.Now()
	c.connect += c.connected.Sub(begin)
	if tc.ConnectionState().NegotiatedProtocol == "h2" {
		return tc, nil // HTTP/2 has its own retry rules; see docs/http.md
	}
	return &tlsConn{Conn: tc, guard: guard{wire: d.wire, tcp: c.guard.tcp}}, nil
}
