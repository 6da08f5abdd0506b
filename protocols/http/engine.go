package http

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	nethttp "net/http"
	"net/url"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/hload/hload/protocols"
	"github.com/hload/hload/protocols/http/h1"
)

// The engine is hload's own HTTP/1.1 client: it runs on the VU's goroutine
// (the one calling Do), writes a request with one Write, and parses the
// response from one reused buffer per connection. It starts no goroutine,
// never sends a request twice, and allocates nothing per call for a
// prepared request whose response nothing reads. HTTP/2 stays with
// net/http; see docs/http.md.

// h1conn is one keep-alive connection of a VU.
type h1conn struct {
	tcp  *countingConn
	conn net.Conn // tcp, or TLS over it
	rd   *h1.Reader
	key  string // scheme://host:port
	// answered says a response came on it: it is a reused connection.
	// ahead says Connect opened it before its first call. Either way the
	// server may have closed it while it waited (an idle or a read
	// timeout), so kept treats both as reused: checked before a write,
	// and a request none of which was written goes on a new connection.
	answered bool
	ahead    bool
	// raw is the plain TCP connection's raw one, nil over TLS; see send.
	raw syscall.RawConn
	// early says send already waited for the response's first bytes:
	// they are in rd, or earlyErr says why none came.
	early    bool
	earlyErr error
	// x and step are send's state and its function for RawConn.Read.
	x    exchange
	step func(uintptr) bool
	// peek looks at the TCP connection under TLS before it is reused, and
	// one takes what TLS reads then; see staleTLS.
	peek peeker
	one  [1]byte
}

func (c *h1conn) close() {
	c.conn.Close()
}

// kept says the connection waited before this call: see ahead.
func (c *h1conn) kept() bool { return c.answered || c.ahead }

// longAgo is the deadline that makes a blocked read or write return at once.
var longAgo = time.Unix(1, 0)

// watch makes the end of ctx end the VU's call in flight, by setting a past
// deadline on its connection: no goroutine per call. The hook is registered
// once per distinct context, which for a VU is once per scenario. A hook
// runs on a goroutine of its own, maybe late: the generation, checked
// under watchMu, keeps the hook of a context the VU left from ending the
// call of the next.
func (v *vu) watch(ctx context.Context) {
	if v.watched == ctx {
		return
	}
	if v.unwatch != nil {
		v.unwatch()
	}
	v.watchMu.Lock()
	v.watchGen++
	gen := v.watchGen
	v.watchMu.Unlock()
	v.watched = ctx
	v.unwatch = context.AfterFunc(ctx, func() {
		v.watchMu.Lock()
		defer v.watchMu.Unlock()
		if v.watchGen != gen {
			return
		}
		if c := v.active.Load(); c != nil {
			c.tcp.dl.cut.Store(true)
			c.conn.SetDeadline(longAgo)
		}
	})
}

// use arms c for the call: its deadline, and the hook of the run's end.
// It reports false when the run already ended. The socket may keep an
// earlier call's deadline up to half the timeout before the call's own:
// see callDeadline.
func (v *vu) use(ctx context.Context, c *h1conn, deadline time.Time, timeout time.Duration) bool {
	c.tcp.arm(deadline, timeout/2)
	v.active.Store(c)
	// After the store: a context that ended before it is seen here, one
	// that ends after it finds the connection.
	return ctx.Err() == nil
}

// hop is one request of a call: the first, then one per followed redirect.
type hop struct {
	method  string
	url     *url.URL
	host    string // Host override, "" for the URL's
	headers []header
	body    string
	hasBody bool
	referer string
	// strip drops the sensitive headers (a cross-domain redirect), and
	// stripBody the headers of a body that was dropped.
	strip, stripBody bool
	key              string // scheme://host:port; "" for the target's
}

// appendTarget appends u's request-target in origin form.
func appendTarget(dst []byte, u *url.URL) []byte {
	p := u.EscapedPath()
	if p == "" {
		p = "/"
	}
	dst = append(dst, p...)
	if u.ForceQuery || u.RawQuery != "" {
		dst = append(dst, '?')
		dst = append(dst, u.RawQuery...)
	}
	return dst
}

var sensitiveHeaders = []string{"Authorization", "Www-Authenticate", "Cookie", "Cookie2", "Proxy-Authorization", "Proxy-Authenticate"}
var bodyHeaders = []string{"Content-Encoding", "Content-Language", "Content-Location", "Content-Type"}

func isOneOf(k string, list []string) bool {
	for _, s := range list {
		if k == s {
			return true
		}
	}
	return false
}

// appendRequest renders h to dst, with cookie (the jar's, "" for none)
// merged into its Cookie header.
func appendRequest(dst []byte, h *hop, cookie string) []byte {
	host := h.host
	if host == "" {
		host = h.url.Host
	}
	dst = append(dst, h.method...)
	dst = append(dst, ' ')
	dst = appendTarget(dst, h.url)
	dst = append(dst, " HTTP/1.1\r\nHost: "...)
	dst = append(dst, host...)
	dst = append(dst, "\r\n"...)
	for _, f := range h.headers {
		if h.strip && isOneOf(f.key, sensitiveHeaders) || h.stripBody && isOneOf(f.key, bodyHeaders) {
			continue
		}
		if f.key == "Cookie" && cookie != "" {
			continue // merged below
		}
		if f.key == "Referer" && h.referer != "" {
			continue
		}
		for _, val := range f.vals {
			dst = h1.AppendField(dst, f.key, val)
		}
	}
	if cookie != "" {
		dst = append(dst, "Cookie: "...)
		if !h.strip {
			for _, f := range h.headers {
				if f.key == "Cookie" && len(f.vals) > 0 {
					dst = append(dst, strings.Join(f.vals, "; ")...)
					dst = append(dst, "; "...)
				}
			}
		}
		dst = append(dst, cookie...)
		dst = append(dst, "\r\n"...)
	}
	if h.referer != "" {
		dst = h1.AppendField(dst, "Referer", h.referer)
	}
	if h1.SendsLength(h.method, h.hasBody, len(h.body)) {
		dst = h1.AppendContentLength(dst, len(h.body))
	}
	dst = append(dst, "\r\n"...)
	if h.hasBody {
		dst = append(dst, h.body...)
	}
	return dst
}

// firstHop is the call's first request, as rd renders it.
func firstHop(rd *rendered) hop {
	return hop{method: rd.method, url: rd.url, host: rd.host, headers: rd.header, body: rd.body, hasBody: rd.hasBody}
}

// cookieHeader returns the Cookie value of the VU's jar for u, "" when the
// jar is empty: no allocation until the server set a cookie.
func (v *vu) cookieHeader(u *url.URL, host string) string {
	if v.jar.jar == nil {
		return ""
	}
	cs := v.jar.jar.Cookies(cookieURL(u, host))
	if len(cs) == 0 {
		return ""
	}
	var b strings.Builder
	for i, c := range cs {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(c.String())
	}
	return b.String()
}

// cookieURL is the URL whose cookies a request carries: as nethttp.Client
// does, cookies belong to the Host header's host.
func cookieURL(u *url.URL, host string) *url.URL {
	if host == "" || host == u.Host {
		return u
	}
	c := *u
	c.Host = host
	return &c
}

// keyOf returns scheme://host:port for u, the key of its connections.
func keyOf(u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = "80"
		if u.Scheme == "https" {
			port = "443"
		}
	}
	return u.Scheme + "://" + net.JoinHostPort(u.Hostname(), port)
}

// addrOf splits a key into its scheme and address.
func addrOf(key string) (scheme, addr string) {
	scheme, addr, _ = strings.Cut(key, "://")
	return scheme, addr
}

// conn returns a connection for h: slot's connection to the target, or the
// VU's one connection to another host. A new connection to the target
// offers h2 when offerH2 is set. A kept-alive TLS connection that the
// server closed is seen by a peek and replaced before anything is written
// on it; a plain one is checked by send, in the same system call as its
// write. h2 is a new TLS connection that negotiated HTTP/2.
func (c *Client) conn(ctx context.Context, v *vu, h *hop, slot int, deadline time.Time, offerH2 bool) (cn *h1conn, h2 *tls.Conn, err error) {
	key := h.key
	var ref **h1conn
	if key == "" {
		key = c.cfg.baseKey
		ref = &v.conns[slot]
	} else {
		ref = &v.away
	}
	if cn = *ref; cn != nil && cn.key != key {
		cn.close()
		*ref, cn = nil, nil
	}
	if cn != nil && cn.kept() && cn.raw == nil && cn.staleTLS() {
		cn.close()
		*ref, cn = nil, nil
	}
	if cn != nil {
		return cn, nil, nil
	}
	cn, h2, err = c.dial(ctx, v, key, deadline, offerH2 && h.key == "")
	if err != nil || h2 != nil {
		return nil, h2, err
	}
	*ref = cn
	return cn, nil, nil
}

// Connect implements protocols.Connector: it opens the VU's
// connections_per_vu connections to the target, each as its first call on
// that slot would, within the target's timeout. One that negotiates HTTP/2
// goes to the VU's net/http transport, as a call's would.
func (c *Client) Connect(ctx context.Context, id uint64) error {
	v := c.vu(id)
	v.busy.Lock()
	defer v.busy.Unlock()
	deadline := time.Now().Add(c.cfg.timeout)
	var target hop
	for slot := range v.conns {
		if v.h2 {
			return nil
		}
		cn, h2, err := c.conn(ctx, v, &target, slot, deadline, true)
		if err != nil {
			return err
		}
		if cn != nil && !cn.answered {
			cn.ahead = true
		}
		if h2 != nil {
			v.handoff(h2)
		}
	}
	return nil
}

// dial opens a connection for key. On the target's own host, an https
// target with http2 on offers h2 too; the connection is returned as h2
// when the server chose it.
func (c *Client) dial(ctx context.Context, v *vu, key string, deadline time.Time, target bool) (*h1conn, *tls.Conn, error) {
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	scheme, addr := addrOf(key)
	tcp, err := v.dialer.dial(ctx, "tcp", addr)
	if err != nil {
		return nil, nil, err
	}
	cn := &h1conn{tcp: tcp, conn: tcp, key: key}
	if scheme == "https" {
		cfg := v.dialer.tls.Clone()
		cfg.NextProtos = []string{"http/1.1"}
		if target && c.cfg.http2 {
			cfg.NextProtos = []string{"h2", "http/1.1"}
		}
		if host, _, err := net.SplitHostPort(addr); err == nil {
			cfg.ServerName = host
		}
		begin := time.Now()
		tc := tls.Client(tcp, cfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			tcp.Close()
			return nil, nil, err
		}
		tcp.connected = time.Now()
		tcp.connect += tcp.connected.Sub(begin)
		if tc.ConnectionState().NegotiatedProtocol == "h2" {
			return nil, tc, nil
		}
		cn.conn = tc
		cn.peek.init(tcp.Conn)
	} else {
		cn.raw = rawOf(tcp.Conn)
	}
	cn.rd = h1.NewReader(cn.conn, &c.pool)
	return cn, nil, nil
}

// staleTLS reports whether a kept-alive connection over TLS cannot carry
// another request: the server closed it (an end of stream or a reset under
// TLS, or TLS's close_notify), or sent bytes no request asked for. A peek
// at the TCP socket costs one system call. When bytes wait there, TLS
// reads them, for tlsLook at most: a close_notify reads as the end at
// once, and so do application bytes; a handshake message (a TLS 1.3
// session ticket, a key update) is taken in, and the read then waits for
// more until tlsLook ends it. The call's deadline is set after this.
func (cn *h1conn) staleTLS() bool {
	switch cn.peek.look() {
	case peekNothing:
		return false
	case peekClosed:
		return true
	}
	// A deadline already past would fail the read before it reads. The
	// call sets its own after this.
	cn.tcp.forget()
	cn.conn.SetReadDeadline(time.Now().Add(tlsLook))
	n, err := cn.conn.Read(cn.one[:])
	return n > 0 || !errors.Is(err, os.ErrDeadlineExceeded)
}

// tlsLook bounds the read of bytes that came on an idle TLS connection.
const tlsLook = time.Millisecond

// readHead reads the head of the final response, through interim ones,
// and times its first byte: the time to first byte is the final
// response's, as a user waits for it.
func (cn *h1conn) readHead(resp *h1.Response, method string, start time.Time, out *outcome) error {
	resp.Interim = 0
	for {
		if cn.early {
			cn.early = false
			if err := cn.earlyErr; err != nil {
				cn.earlyErr = nil
				return err
			}
		} else if err := cn.rd.WaitFirst(); err != nil {
			return err
		}
		out.ttfb = max(time.Since(start), 1)
		if err := cn.rd.ReadHeadOnce(resp, method); err != nil {
			return err
		}
		if !h1.IsInterim(resp.Status) {
			return nil
		}
	}
}

// drop closes cn and forgets it.
func (v *vu) drop(cn *h1conn) {
	cn.close()
	if v.away == cn {
		v.away = nil
		return
	}
	for i := range v.conns {
		if v.conns[i] == cn {
			v.conns[i] = nil
		}
	}
}

// closeAll closes the VU's engine connections.
func (v *vu) closeAll() {
	for i, cn := range v.conns {
		if cn != nil {
			cn.close()
			v.conns[i] = nil
		}
	}
	if v.away != nil {
		v.away.close()
		v.away = nil
	}
}

// outcome is what a call ends with.
type outcome struct {
	status    int
	kind      protocols.ErrorKind
	msg       string
	ttfb      time.Duration
	connect   time.Duration
	connected time.Time
	newConn   bool
	headers   map[string][]string
	// scanned says the body went through the VU's scan, for the sample;
	// decodeErr says why it could not be decoded.
	scanned   bool
	decodeErr error
}

// errHTTP2 says the call's new connection negotiated HTTP/2: the VU goes
// over to net/http.
var errHTTP2 = errors.New("the server chose HTTP/2")

// doH1 makes the call through the engine. It returns errHTTP2, with nothing
// sent, when the target turned out to speak HTTP/2.
func (c *Client) doH1(ctx context.Context, v *vu, call protocols.Call, rd *rendered, start time.Time, out *outcome) error {
	deadline := start.Add(rd.opt.timeout)
	v.watch(ctx)
	slot := v.next
	if v.next++; v.next == len(v.conns) {
		v.next = 0
	}

	h := firstHop(rd)
	wire := v.firstWire(call, rd, &h)
	for hops := 0; ; hops++ {
		// Only a call's first request may find HTTP/2: after a redirect,
		// net/http would send the first request again.
		cn, read, err := c.sendHop(ctx, v, &h, wire, slot, deadline, hops == 0, rd.opt.timeout, out)
		if err != nil || cn == nil {
			return err
		}
		redirect, ok := c.readHop(ctx, v, cn, &h, &call, read, start, rd.opt.timeout, out)
		if !ok {
			return nil
		}
		if !redirect {
			break
		}
		if hops+1 > c.cfg.maxRedirects {
			out.kind, out.msg = protocols.ErrProtocol, fmt.Sprintf("%s %q: %v: stopped after %d", h.method, h.url.String(), errTooManyRedirects, c.cfg.maxRedirects)
			return nil
		}
		next, err := nextHop(&h, &v.resp, c.cfg.baseKey)
		if err != nil {
			out.kind, out.msg = protocols.ErrProtocol, err.Error()
			return nil
		}
		h = next
		v.wbuf = appendRequest(v.wbuf[:0], &h, v.cookieHeader(h.url, h.host))
		wire = v.wbuf
	}
	if out.decodeErr != nil {
		// Checks and captures read bodies decoded: this one cannot be.
		out.kind, out.msg, out.scanned = protocols.ErrProtocol, out.decodeErr.Error(), false
		return nil
	}
	if rd.opt.expected.failed(out.status) {
		out.kind, out.msg = statusKind(out.status), statusLine(out.status, v.resp.Reason, &rd.opt.expected)
	}
	return nil
}

// sendHop writes one hop's request on a connection of the VU's slot, kept
// or new, and returns the connection with the count of bytes it had read
// before. It returns errHTTP2 when the new connection negotiated HTTP/2
// (with offerH2 only), and a nil connection when the call failed, with
// out saying why.
func (c *Client) sendHop(ctx context.Context, v *vu, h *hop, wire []byte, slot int, deadline time.Time, offerH2 bool, timeout time.Duration, out *outcome) (*h1conn, int64, error) {
	for attempt := 0; ; attempt++ {
		cn, h2, err := c.conn(ctx, v, h, slot, deadline, offerH2)
		if h2 != nil {
			v.handoff(h2)
			return nil, 0, errHTTP2
		}
		if err != nil {
			out.kind, out.msg = dialFailure(ctx, err, timeout)
			return nil, 0, nil
		}
		if !cn.answered && cn.tcp.reported.CompareAndSwap(false, true) {
			out.newConn = true
			out.connect += cn.tcp.connect
			out.connected = cn.tcp.connected
		}
		if !v.use(ctx, cn, deadline, timeout) {
			v.drop(cn)
			out.kind, out.msg = protocols.ErrInterrupted, "the run ended before the response"
			return nil, 0, nil
		}
		read := cn.rd.Read
		n, err := cn.send(wire)
		if err == nil {
			return cn, read, nil
		}
		v.drop(cn)
		if n == 0 && cn.kept() && attempt == 0 && ctx.Err() == nil && time.Now().Before(deadline) {
			// Nothing of the request was written on a reused
			// connection: the server cannot have seen it, and a new
			// connection carries it, once.
			continue
		}
		out.kind, out.msg = failure(ctx, err, timeout, n > 0, false, cn.kept())
		return nil, 0, nil
	}
}

// readHop reads one hop's response on cn into v.resp: its head, then its
// body, scanned for the call's checks and captures unless it is a redirect
// to follow, and keeps cn for the next call when it can carry one. read is
// what cn had read before the request. It reports whether the response is
// a redirect to follow, and ok false when the call failed, with out saying
// why.
func (c *Client) readHop(ctx context.Context, v *vu, cn *h1conn, h *hop, call *protocols.Call, read int64, start time.Time, timeout time.Duration, out *outcome) (redirect, ok bool) {
	resp := &v.resp
	err := cn.readHead(resp, h.method, start, out)
	if err != nil {
		v.drop(cn)
		out.kind, out.msg = failure(ctx, err, timeout, true, cn.rd.Read > read, cn.kept())
		return false, false
	}
	v.served++
	out.status = resp.Status
	if resp.SetCookies > 0 {
		v.setCookies(cookieURL(h.url, h.host), resp)
	}
	redirect = c.cfg.follow && len(resp.Location) > 0 && isRedirectStatus(resp.Status)
	if !redirect && call.KeepHeaders {
		out.headers = resp.Header()
	}
	if !redirect && scans(call) {
		out.decodeErr, err = v.scanEngineBody(cn.rd, resp, call)
		// A body cut short says nothing whole: as before bodies
		// streamed, the checks of such a call see none.
		out.scanned = err == nil
	} else {
		_, err = cn.rd.ReadBody(resp, nil, false)
	}
	if err != nil {
		v.drop(cn)
		out.kind, out.msg = failure(ctx, err, timeout, true, true, cn.kept())
		return false, false
	}
	cn.answered = true
	if resp.Close || cn.rd.Buffered() > 0 {
		// Bytes past the response are not a response to anything.
		v.drop(cn)
	} else {
		cn.rd.Release()
	}
	return redirect, true
}

// firstWire returns the bytes of the call's first request: the prepared
// ones as they are, or rendered into the VU's buffer.
func (v *vu) firstWire(call protocols.Call, rd *rendered, h *hop) []byte {
	cookie := v.cookieHeader(h.url, h.host)
	if p, ok := call.Prepared.(*prepared); ok && &p.rendered == rd && cookie == "" {
		return p.wire
	}
	v.wbuf = appendRequest(v.wbuf[:0], h, cookie)
	return v.wbuf
}

// isRedirectStatus reports the statuses nethttp.Client follows.
func isRedirectStatus(s int) bool {
	switch s {
	case 301, 302, 303, 307, 308:
		return true
	}
	return false
}

// nextHop is the request a redirect leads to, by nethttp.Client's rules:
// 301, 302 and 303 turn a request other than GET or HEAD into a GET
// without its body; 307 and 308 keep the method and the body; a Host
// override stays only for a relative Location; sensitive headers are
// dropped once a hop leaves the first request's domain.
func nextHop(prev *hop, resp *h1.Response, baseKey string) (hop, error) {
	loc := string(resp.Location)
	u, err := prev.url.Parse(loc)
	if err != nil {
		return hop{}, fmt.Errorf("failed to parse Location header %q: %v", loc, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return hop{}, fmt.Errorf("a redirect to %q, which is not an http or https URL", loc)
	}
	// A Location's query is sent as the test's own are: see escapeQuery.
	u.RawQuery = escapeQuery(u.RawQuery)
	next := hop{method: prev.method, url: u, headers: prev.headers, strip: prev.strip, stripBody: prev.stripBody}
	if prev.host != "" && prev.host != prev.url.Host {
		if l, _ := url.Parse(loc); l != nil && !l.IsAbs() {
			next.host = prev.host
		}
	}
	switch resp.Status {
	case 301, 302, 303:
		if prev.method != "GET" && prev.method != "HEAD" {
			next.method = "GET"
		}
		next.stripBody = true
	default:
		next.body, next.hasBody = prev.body, prev.hasBody
	}
	if !next.strip && prev.url.Host != u.Host && !isDomainOrSubdomain(u.Hostname(), prev.url.Hostname()) {
		next.strip = true
	}
	if !(prev.url.Scheme == "https" && u.Scheme == "http") {
		r := *prev.url
		r.User = nil
		next.referer = r.String()
	}
	if k := keyOf(u); k != baseKey {
		next.key = k
	}
	return next, nil
}

// isDomainOrSubdomain is nethttp's rule for keeping credentials on a
// redirect: sub is parent or one of its subdomains.
func isDomainOrSubdomain(sub, parent string) bool {
	if sub == parent {
		return true
	}
	if strings.ContainsAny(sub, ":%") {
		return false
	}
	return strings.HasSuffix(sub, parent) && sub[len(sub)-len(parent)-1] == '.'
}

// setCookies stores the Set-Cookie fields of resp in the VU's jar.
func (v *vu) setCookies(u *url.URL, resp *h1.Response) {
	var cs []*nethttp.Cookie
	for _, f := range resp.Fields {
		if !bytes.EqualFold(f.Name, []byte("Set-Cookie")) {
			continue
		}
		if ck, err := nethttp.ParseSetCookie(string(f.Value)); err == nil {
			cs = append(cs, ck)
		}
	}
	if len(cs) > 0 {
		v.jar.SetCookies(u, cs)
	}
}

// handoff gives an HTTP/2 connection to the VU's net/http transport, which
// takes it as its first dial; the VU's calls go through net/http from now.
func (v *vu) handoff(tc *tls.Conn) {
	v.h2 = true
	v.initNetHTTP()
	v.dialer.pending.Store(tc)
}

// dialFailure classifies a failure to connect: nothing was sent.
func dialFailure(ctx context.Context, err error, timeout time.Duration) (protocols.ErrorKind, string) {
	if ctx.Err() != nil {
		return protocols.ErrInterrupted, "the run ended before the response"
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) {
		return protocols.ErrTimeout, fmt.Sprintf("no response within the timeout of %v: %v", timeout, err)
	}
	return protocols.NetErrorKind(err), err.Error()
}

// failure classifies a call that failed on its connection. wrote says a
// byte of the request may be on the wire, got that a byte of the response
// came, reused that the connection had answered before.
func failure(ctx context.Context, err error, timeout time.Duration, wrote, got, reused bool) (protocols.ErrorKind, string) {
	if ctx.Err() != nil {
		return protocols.ErrInterrupted, "the run ended before the response"
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return protocols.ErrTimeout, fmt.Sprintf("no response within the timeout of %v", timeout)
	}
	var pe *h1.Error
	if errors.As(err, &pe) {
		return protocols.ErrProtocol, "malformed response: " + err.Error()
	}
	if wrote && !got {
		switch k := protocols.NetErrorKind(err); {
		case errors.Is(err, io.EOF) && reused:
			return protocols.ErrIdleClosed, "the server closed the keep-alive connection before any response: " + err.Error()
		case k == protocols.ErrReset || k == protocols.ErrProtocol:
			return protocols.ErrReset, "the connection failed after the request was sent, before any response: " + err.Error()
		default:
			return k, err.Error()
		}
	}
	return protocols.NetErrorKind(err), err.Error()
}

// statusLine says why a response failed: its status line, and the
// statuses that were expected when the request or target listed them.
func statusLine(status int, reason []byte, expected *statusSet) string {
	s := fmt.Sprintf("%d", status)
	if len(reason) > 0 {
		s += " " + string(reason)
	}
	if !expected.set {
		return s
	}
	return s + ", which expected_status does not list"
}
