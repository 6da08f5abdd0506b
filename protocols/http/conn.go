package http

import (
	"context"
	"crypto/tls"
	"net"
	"net/http/httptrace"
	"sync"
	"sync/atomic"
	"time"
)

// byteCounters are one VU's running totals of bytes written to and read from
// its connections. The transport's reader and writer goroutines update them,
// so they are atomic; Do takes deltas around a call.
type byteCounters struct {
	sent     atomic.Int64
	received atomic.Int64
}

// countingConn is a TCP connection that counts its bytes into its VU's
// counters and remembers how long it took to set up, so that the first call
// to use it can report the connect time.
type countingConn struct {
	net.Conn
	counters *byteCounters
	// connect is TCP connect plus TLS handshake, without DNS; connected is
	// when it ended. Both are written before the transport sees the conn.
	connect   time.Duration
	connected time.Time
	// reported is set by the first call that used this connection, so its
	// set-up is reported once however the transport pools it.
	reported atomic.Bool
}

func (c *countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.counters.received.Add(int64(n))
	return n, err
}

// Write counts before writing: once the bytes are on the wire the server may
// answer, and the call may finish before this goroutine runs again.
func (c *countingConn) Write(p []byte) (int, error) {
	c.counters.sent.Add(int64(len(p)))
	n, err := c.Conn.Write(p)
	if n < len(p) {
		c.counters.sent.Add(int64(n - len(p)))
	}
	return n, err
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
	net      net.Dialer
	tls      *tls.Config // nil for an http target
	timeout  time.Duration
	counters *byteCounters
}

func newDialer(cfg *targetConfig, counters *byteCounters) *dialer {
	d := &dialer{
		// The transport dials with the request's values but without its
		// cancellation, so a dial can outlive its call; bound it.
		net:      net.Dialer{Timeout: cfg.timeout, KeepAlive: 15 * time.Second},
		timeout:  cfg.timeout,
		counters: counters,
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
	return &countingConn{Conn: c, counters: d.counters, connect: end.Sub(begin), connected: end}, nil
}

// DialContext is the transport's dialer for http.
func (d *dialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	c, err := d.dial(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// DialTLSContext is the transport's dialer for https. It does the handshake
// itself, so the handshake is timed with the connect and its bytes are
// counted; the transport picks HTTP/2 from the negotiated protocol.
func (d *dialer) DialTLSContext(ctx context.Context, network, addr string) (net.Conn, error) {
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
	return tc, nil
}
