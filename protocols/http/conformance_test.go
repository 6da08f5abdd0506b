package http

// Conformance of the HTTP/1.1 client against real servers: net/http's own,
// and servers written here byte by byte that misbehave. Every test goes
// through the protocol's public surface only (New, Open, Do), so that it
// holds whatever engine sends the requests, and checks hload's samples
// against what the server counted on its own side of the wire: the
// connections it accepted, the requests it read and the bytes it wrote and
// read. hload's own counters are never the reference.

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"net"
	nethttp "net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zclconf/go-cty/cty"

	"github.com/hload/hload/plugins/protocoltest"
	"github.com/hload/hload/protocols"
)

// conformTimeout is the request timeout of every target here: a call that
// hangs fails as a timeout in a few seconds, well inside testTimeout, the
// deadline of the context each call is made with.
const conformTimeout = "3s"

// serverTally is what a test server counted itself.
type serverTally struct {
	accepted atomic.Int64 // connections accepted
	requests atomic.Int64 // requests read, whole
	written  atomic.Int64 // bytes written on the TCP connections, TLS records included
	read     atomic.Int64 // bytes read from them
}

// tallyListener counts the connections it accepts and wraps each to count
// its bytes. It closes those still open when the test ends, so that a
// server blocked writing to a client that stopped reading ends too.
type tallyListener struct {
	net.Listener
	tally *serverTally
	mu    sync.Mutex
	conns []net.Conn
	done  bool
}

func newTallyListener(t *testing.T) *tallyListener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := &tallyListener{Listener: ln, tally: &serverTally{}}
	t.Cleanup(l.closeAll)
	return l
}

func (l *tallyListener) Accept() (net.Conn, error) {
	conn, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done {
		conn.Close()
		return nil, net.ErrClosed
	}
	l.conns = append(l.conns, conn)
	id := l.tally.accepted.Add(1)
	tcp, _ := conn.(*net.TCPConn)
	return &tallyConn{Conn: conn, tally: l.tally, tcp: tcp, id: id}, nil
}

func (l *tallyListener) closeAll() {
	l.Listener.Close()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.done = true
	for _, c := range l.conns {
		c.Close()
	}
}

// tallyConn is one accepted connection. Write counts before writing, as
// hload's own connection does: once the bytes are on the wire the client
// may finish its call and the test read the tally before Write returns.
type tallyConn struct {
	net.Conn
	tally *serverTally
	tcp   *net.TCPConn
	id    int64 // accept order, from 1
}

func (c *tallyConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.tally.read.Add(int64(n))
	return n, err
}

func (c *tallyConn) Write(p []byte) (int, error) {
	c.tally.written.Add(int64(len(p)))
	n, err := c.Conn.Write(p)
	c.tally.written.Add(int64(n - len(p)))
	return n, err
}

// reset ends the connection with a TCP reset (SO_LINGER 0).
func (c *tallyConn) reset() {
	c.tcp.SetLinger(0)
	c.tcp.Close()
}

// countedServer starts net/http's test server for h on a tallying
// listener, with TLS when useTLS. configure, when set, adjusts the server
// before it starts. Requests are counted when the handler begins: after
// the server read them, before it answers.
func countedServer(t *testing.T, useTLS bool, configure func(*httptest.Server), h nethttp.HandlerFunc) (*httptest.Server, *serverTally) {
	t.Helper()
	l := newTallyListener(t)
	srv := httptest.NewUnstartedServer(nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
		l.tally.requests.Add(1)
		h(w, r)
	}))
	srv.Listener.Close()
	srv.Listener = l // StartTLS puts TLS above it: the tally counts TLS records
	if configure != nil {
		configure(srv)
	}
	if useTLS {
		srv.StartTLS()
	} else {
		srv.Start()
	}
	t.Cleanup(srv.Close)
	return srv, l.tally
}

// rawAnswer answers one request a raw server read on conn, whose body it
// was given, by writing the bytes it wants, and says whether to read
// another request on the connection; the server closes it otherwise.
// served is how many requests the connection carried, this one included.
type rawAnswer func(conn *tallyConn, served int, r *nethttp.Request, body []byte) (keep bool)

// rawHTTPServer reads requests by hand with net/http's parser and answers
// each with whatever bytes answer writes: the server for responses that
// net/http's server would never send. It returns the server's URL.
func rawHTTPServer(t *testing.T, answer rawAnswer) (string, *serverTally) {
	t.Helper()
	l := newTallyListener(t)
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			go serveRawConn(conn.(*tallyConn), answer)
		}
	}()
	return "http://" + l.Addr().String(), l.tally
}

func serveRawConn(conn *tallyConn, answer rawAnswer) {
	defer conn.Close()
	br := bufio.NewReader(conn)
	for served := 1; ; served++ {
		r, err := nethttp.ReadRequest(br)
		if err != nil {
			return
		}
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return
		}
		conn.tally.requests.Add(1)
		if !answer(conn, served, r, body) {
			return
		}
	}
}

// callOutcome is all that one call emitted. The request sample's Body and
// Headers are copied during emit, as a capture reads them.
type callOutcome struct {
	request  protocols.Sample
	ttfb     *protocols.Sample
	connect  *protocols.Sample
	requests int      // request samples: one per call
	other    []string // metrics besides request, ttfb and connect
}

// conformCall makes one call for vu, bounded by testTimeout, and checks that it
// emitted exactly one request sample.
func conformCall(t testing.TB, c protocols.Client, vu uint64, r cty.Value, keepBody, keepHeaders bool) callOutcome {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	var o callOutcome
	c.Do(ctx, protocols.Call{VU: vu, Request: r, KeepBody: keepBody, KeepHeaders: keepHeaders}, func(s protocols.Sample) {
		switch s.Metric {
		case protocols.MetricRequest:
			o.requests++
			if s.Body != nil {
				s.Body = bytes.Clone(s.Body)
			}
			if s.Headers != nil {
				h := make(map[string][]string, len(s.Headers))
				for k, v := range s.Headers {
					h[k] = append([]string(nil), v...)
				}
				s.Headers = h
			}
			o.request = s
		case protocols.MetricTTFB:
			o.ttfb = &s
		case protocols.MetricConnect:
			o.connect = &s
		default:
			o.other = append(o.other, s.Metric)
		}
	})
	if o.requests != 1 || len(o.other) != 0 {
		t.Errorf("one call emitted %d request samples and %v; want one request sample", o.requests, o.other)
	}
	return o
}

// openConform opens a client for url with the conformance request timeout
// and the extra target attributes in set.
func openConform(t *testing.T, p protocols.Protocol, url string, set map[string]cty.Value) protocols.Client {
	t.Helper()
	attrs := map[string]cty.Value{"timeout": cty.StringVal(conformTimeout)}
	for k, v := range set {
		attrs[k] = v
	}
	return open(t, p, url, attrs)
}

// getPath is a GET of path.
func getPath(path string) cty.Value {
	return req(map[string]cty.Value{"path": cty.StringVal(path)})
}

// bodyPattern is n bytes that differ from one position to the next, so that a
// body cut, shifted or joined from the wrong pieces does not compare equal.
func bodyPattern(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = 'a' + byte((i+i/26)%26)
	}
	return b
}

// serverMark is a server's byte counts at one moment.
type serverMark struct{ written, read int64 }

func markServer(ta *serverTally) serverMark { return serverMark{ta.written.Load(), ta.read.Load()} }

// checkWireBytes compares one call's byte counts with what the server wrote
// and read during it; before is the server's counts before the call. Only
// a test whose calls do not overlap can use it.
func checkWireBytes(t *testing.T, what string, s protocols.Sample, ta *serverTally, before serverMark) {
	t.Helper()
	if got, want := s.BytesReceived, ta.written.Load()-before.written; got != want {
		t.Errorf("%s: BytesReceived = %d; the server wrote %d bytes on the wire", what, got, want)
	}
	if got, want := s.BytesSent, ta.read.Load()-before.read; got != want {
		t.Errorf("%s: BytesSent = %d; the server read %d bytes from the wire", what, got, want)
	}
}

// conformOK reports whether a call succeeded with status, and says so
// when it did not.
func conformOK(t *testing.T, what string, o callOutcome, status int) bool {
	t.Helper()
	s := o.request
	if s.Error != protocols.ErrNone || s.Status != status || s.Message != "" {
		t.Errorf("%s: sample status %d, error %q, message %q; want %d without error", what, s.Status, s.Error, s.Message, status)
		return false
	}
	return true
}

// TestConformContentLength checks bodies framed by Content-Length, from
// empty to a megabyte: the kept body is the bytes the server wrote, and the
// call's byte counts are the server's, call by call, on one connection.
func TestConformContentLength(t *testing.T) {
	protocoltest.Run(t, New(), func(t *testing.T, _ protocoltest.Path, p protocols.Protocol) {
		sizes := []int{0, 1, 100, 4095, 4096, 4097, 65537, 1 << 20}
		srv, ta := countedServer(t, false, nil, func(w nethttp.ResponseWriter, r *nethttp.Request) {
			var n int
			for _, size := range sizes {
				if r.URL.Path == "/"+strconv.Itoa(size) {
					n = size
				}
			}
			w.Header().Set("Content-Length", strconv.Itoa(n))
			w.Write(bodyPattern(n))
		})
		c := openConform(t, p, srv.URL, nil)
		calls := 0
		for _, keepBody := range []bool{true, false} {
			for _, n := range sizes {
				what := "a " + strconv.Itoa(n) + "-byte body"
				if !keepBody {
					what += " not kept"
				}
				before := markServer(ta)
				o := conformCall(t, c, 1, getPath("/"+strconv.Itoa(n)), keepBody, false)
				calls++
				if !conformOK(t, what, o, 200) {
					continue
				}
				checkWireBytes(t, what, o.request, ta, before)
				if keepBody && !bytes.Equal(o.request.Body, bodyPattern(n)) {
					t.Errorf("%s: kept %d bytes, want the %d the server wrote", what, len(o.request.Body), n)
				}
				if !keepBody && o.request.Body != nil {
					t.Errorf("%s: %d bytes kept without KeepBody", what, len(o.request.Body))
				}
			}
		}
		if got := ta.requests.Load(); got != int64(calls) {
			t.Errorf("the server read %d requests for %d calls", got, calls)
		}
		if got := ta.accepted.Load(); got != 1 {
			t.Errorf("the server accepted %d connections for one VU's keep-alive calls, want 1", got)
		}
	})
}

// TestConformChunked checks chunked bodies: net/http's server writing one
// byte per flush and a megabyte in pieces, and a raw server's chunk
// extensions, upper-case sizes and trailers. The kept body is the decoded
// content, the byte counts are the server's, and the trailer is read off
// the connection: the next call goes on the same one.
func TestConformChunked(t *testing.T) {
	protocoltest.Run(t, New(), func(t *testing.T, _ protocoltest.Path, p protocols.Protocol) {
		t.Run("net/http", func(t *testing.T) {
			big := bodyPattern(1 << 20)
			srv, ta := countedServer(t, false, nil, func(w nethttp.ResponseWriter, r *nethttp.Request) {
				f := w.(nethttp.Flusher)
				f.Flush() // the header goes out without a length: the body is chunked
				switch r.URL.Path {
				case "/bytewise":
					for _, b := range bodyPattern(2000) {
						w.Write([]byte{b})
						f.Flush()
					}
				case "/big":
					for i := 0; i < len(big); i += 10000 {
						w.Write(big[i:min(i+10000, len(big))])
					}
				}
			})
			c := openConform(t, p, srv.URL, nil)
			cases := []struct {
				path string
				want []byte
			}{
				{"/bytewise", bodyPattern(2000)},
				{"/big", big},
				{"/empty", nil},
				{"/bytewise", bodyPattern(2000)},
			}
			for _, tc := range cases {
				before := markServer(ta)
				o := conformCall(t, c, 1, getPath(tc.path), true, false)
				if !conformOK(t, tc.path, o, 200) {
					continue
				}
				checkWireBytes(t, tc.path, o.request, ta, before)
				if !bytes.Equal(o.request.Body, tc.want) {
					t.Errorf("%s: kept %d bytes, want the %d decoded", tc.path, len(o.request.Body), len(tc.want))
				}
				if tc.path == "/bytewise" && o.request.BytesReceived < 2000*6 {
					t.Errorf("%s: %d bytes received; 2000 one-byte chunks take 6 bytes each", tc.path, o.request.BytesReceived)
				}
			}
			if got := ta.requests.Load(); got != int64(len(cases)) {
				t.Errorf("the server read %d requests for %d calls", got, len(cases))
			}
			if got := ta.accepted.Load(); got != 1 {
				t.Errorf("the server accepted %d connections, want 1", got)
			}
		})

		t.Run("raw", func(t *testing.T) {
			bodies := map[string]string{
				"/extensions": "5;name=value\r\nhello\r\n6;a=1;b=\"q \\\" r\"\r\n world\r\n0;last\r\n\r\n",
				"/upper":      "A\r\n0123456789\r\n1a\r\nabcdefghijklmnopqrstuvwxyz\r\n0\r\n\r\n",
				"/trailers":   "3\r\nabc\r\n0\r\nX-Checksum: 900150983cd24fb0\r\nX-Count: 3\r\n\r\n",
				"/padded":     "004\r\nabcd\r\n0000\r\n\r\n",
			}
			want := map[string]string{
				"/extensions": "hello world",
				"/upper":      "0123456789abcdefghijklmnopqrstuvwxyz",
				"/trailers":   "abc",
				"/padded":     "abcd",
			}
			url, ta := rawHTTPServer(t, func(conn *tallyConn, _ int, r *nethttp.Request, _ []byte) bool {
				head := "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n"
				if r.URL.Path == "/trailers" {
					head += "Trailer: X-Checksum, X-Count\r\n"
				}
				io.WriteString(conn, head+"\r\n"+bodies[r.URL.Path])
				return true
			})
			c := openConform(t, p, url, nil)
			calls := 0
			for _, path := range []string{"/extensions", "/upper", "/trailers", "/padded", "/trailers", "/extensions"} {
				before := markServer(ta)
				o := conformCall(t, c, 1, getPath(path), true, true)
				calls++
				if !conformOK(t, path, o, 200) {
					continue
				}
				checkWireBytes(t, path, o.request, ta, before)
				if got := string(o.request.Body); got != want[path] {
					t.Errorf("%s: body %q, want %q", path, got, want[path])
				}
			}
			if got := ta.requests.Load(); got != int64(calls) {
				t.Errorf("the server read %d requests for %d calls", got, calls)
			}
			if got := ta.accepted.Load(); got != 1 {
				t.Errorf("the server accepted %d connections, want 1: a trailer or an extension left the connection unusable", got)
			}
		})
	})
}

// TestConformBodiless checks the responses that carry no body whatever
// their headers say (a HEAD's, a 204, a 304 with a Content-Length) and
// interim 1xx responses before the final one. A client that read a body
// there would wait for bytes that never come, or take the next response's
// bytes for this one's; the call after each goes on the same connection.
func TestConformBodiless(t *testing.T) {
	protocoltest.Run(t, New(), func(t *testing.T, _ protocoltest.Path, p protocols.Protocol) {
		const final = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-A: final\r\n\r\nfinal"
		responses := map[string]string{
			"/head": "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\nContent-Type: text/plain\r\nX-A: head\r\n\r\n",
			"/204":  "HTTP/1.1 204 No Content\r\nX-A: 204\r\n\r\n",
			"/304":  "HTTP/1.1 304 Not Modified\r\nContent-Length: 500\r\nETag: \"v1\"\r\nX-A: 304\r\n\r\n",
			"/100":  "HTTP/1.1 100 Continue\r\n\r\n" + final,
			"/103":  "HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n" + final,
			"/1xx": "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\n" +
				"HTTP/1.1 103 Early Hints\r\nLink: </b.js>; rel=preload\r\n\r\n" + final,
			"/ok": "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
		}
		url, ta := rawHTTPServer(t, func(conn *tallyConn, _ int, r *nethttp.Request, _ []byte) bool {
			resp, found := responses[r.URL.Path]
			if !found {
				return false
			}
			io.WriteString(conn, resp)
			return true
		})
		c := openConform(t, p, url, nil)
		cases := []struct {
			name   string
			r      cty.Value
			status int
			body   string
			xa     string
		}{
			{"HEAD with a Content-Length", req(map[string]cty.Value{"method": cty.StringVal("HEAD"), "path": cty.StringVal("/head")}), 200, "", "head"},
			{"204", getPath("/204"), 204, "", "204"},
			{"304 with a Content-Length", getPath("/304"), 304, "", "304"},
			{"100 Continue before a 200", getPath("/100"), 200, "final", "final"},
			{"103 Early Hints before a 200", getPath("/103"), 200, "final", "final"},
			{"100 and two 103 before a 200", getPath("/1xx"), 200, "final", "final"},
		}
		calls := 0
		for _, tc := range cases {
			before := markServer(ta)
			o := conformCall(t, c, 1, tc.r, true, true)
			calls++
			if conformOK(t, tc.name, o, tc.status) {
				checkWireBytes(t, tc.name, o.request, ta, before)
				if got := string(o.request.Body); got != tc.body {
					t.Errorf("%s: body %q, want %q", tc.name, got, tc.body)
				}
				if got := o.request.Headers["X-A"]; len(got) != 1 || got[0] != tc.xa {
					t.Errorf("%s: X-A = %q, want the final response's %q", tc.name, got, tc.xa)
				}
			}
			before = markServer(ta)
			o = conformCall(t, c, 1, getPath("/ok"), true, false)
			calls++
			if conformOK(t, "the call after "+tc.name, o, 200) {
				checkWireBytes(t, "the call after "+tc.name, o.request, ta, before)
				if string(o.request.Body) != "ok" {
					t.Errorf("the call after %s: body %q, want %q", tc.name, o.request.Body, "ok")
				}
			}
		}
		if got := ta.requests.Load(); got != int64(calls) {
			t.Errorf("the server read %d requests for %d calls", got, calls)
		}
		if got := ta.accepted.Load(); got != 1 {
			t.Errorf("the server accepted %d connections for %d calls of one VU, want 1", got, calls)
		}
	})
}

// TestConformReadToClose checks a response with neither a length nor
// chunks, whose body ends when the server closes the connection: the body
// is whole, and the next call opens a new connection rather than writing
// on the closed one.
func TestConformReadToClose(t *testing.T) {
	protocoltest.Run(t, New(), func(t *testing.T, _ protocoltest.Path, p protocols.Protocol) {
		body := bodyPattern(100000)
		url, ta := rawHTTPServer(t, func(conn *tallyConn, _ int, r *nethttp.Request, _ []byte) bool {
			io.WriteString(conn, "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n\r\n")
			for i := 0; i < len(body); i += 25000 {
				conn.Write(body[i : i+25000])
			}
			return false // the close ends the body
		})
		c := openConform(t, p, url, nil)
		const calls = 3
		for i := range calls {
			what := "call " + strconv.Itoa(i+1)
			before := markServer(ta)
			o := conformCall(t, c, 1, getPath("/"), true, false)
			if !conformOK(t, what, o, 200) {
				continue
			}
			checkWireBytes(t, what, o.request, ta, before)
			if !bytes.Equal(o.request.Body, body) {
				t.Errorf("%s: kept %d bytes, want the %d the server wrote before closing", what, len(o.request.Body), len(body))
			}
			if o.connect == nil {
				t.Errorf("%s: no connect sample; the previous response closed the connection", what)
			}
		}
		if got, accepted := ta.requests.Load(), ta.accepted.Load(); got != calls || accepted != calls {
			t.Errorf("the server read %d requests on %d connections for %d calls, want one each", got, accepted, calls)
		}
	})
}

// TestConformConnectionClose checks servers that close after every
// response: net/http's with `Connection: close`, and HTTP/1.0 servers
// without keep-alive, with a length and without. Several VUs call at once;
// every call succeeds, on a connection of its own, and the server's counts
// of connections and requests are hload's count of calls and of connect
// samples. The calls overlap, so the byte counts are compared in total.
func TestConformConnectionClose(t *testing.T) {
	protocoltest.Run(t, New(), func(t *testing.T, _ protocoltest.Path, p protocols.Protocol) {
		httpClose, closeTally := countedServer(t, false, nil, func(w nethttp.ResponseWriter, r *nethttp.Request) {
			w.Header().Set("Connection", "close")
			io.WriteString(w, "hello")
		})
		http10, tally10 := rawHTTPServer(t, func(conn *tallyConn, _ int, r *nethttp.Request, _ []byte) bool {
			io.WriteString(conn, "HTTP/1.0 200 OK\r\nContent-Length: 5\r\n\r\nhello")
			return false
		})
		http10NoLength, tally10NoLength := rawHTTPServer(t, func(conn *tallyConn, _ int, r *nethttp.Request, _ []byte) bool {
			io.WriteString(conn, "HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\nhello")
			return false
		})
		cases := []struct {
			name string
			url  string
			ta   *serverTally
		}{
			{"Connection: close", httpClose.URL, closeTally},
			{"HTTP/1.0 with a length", http10, tally10},
			{"HTTP/1.0 without a length", http10NoLength, tally10NoLength},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				c := openConform(t, p, tc.url, nil)
				const vus, perVU = 3, 5
				var mu sync.Mutex
				var succeeded, connects, sent, received int64
				var wg sync.WaitGroup
				for vu := uint64(1); vu <= vus; vu++ {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for range perVU {
							o := conformCall(t, c, vu, getPath("/"), true, false)
							mu.Lock()
							if o.request.Error == "" && o.request.Status == 200 && string(o.request.Body) == "hello" {
								succeeded++
							} else {
								t.Errorf("VU %d: sample %+v, body %q", vu, o.request, o.request.Body)
							}
							if o.connect != nil {
								connects++
							}
							sent += o.request.BytesSent
							received += o.request.BytesReceived
							mu.Unlock()
						}
					}()
				}
				wg.Wait()
				requests, accepted := tc.ta.requests.Load(), tc.ta.accepted.Load()
				if succeeded != vus*perVU || requests != succeeded || accepted != succeeded {
					t.Errorf("hload counted %d successes of %d calls; the server read %d requests on %d connections", succeeded, vus*perVU, requests, accepted)
				}
				if connects != accepted {
					t.Errorf("%d connect samples for the %d connections the server accepted", connects, accepted)
				}
				if w, r := tc.ta.written.Load(), tc.ta.read.Load(); received != w || sent != r {
					t.Errorf("hload received %d and sent %d bytes; the server wrote %d and read %d", received, sent, w, r)
				}
			})
		}
	})
}

// TestConformIdleTimeout checks a server that closes idle keep-alive
// connections sooner than the VUs call again: the server's close is seen
// before the next request is written, so no call fails and no request is
// lost or sent twice. Every pause outlasts the idle timeout many times
// over, so every call needs a new connection: the server's count of
// connections says the test met the closes it is about.
func TestConformIdleTimeout(t *testing.T) {
	protocoltest.Run(t, New(), func(t *testing.T, _ protocoltest.Path, p protocols.Protocol) {
		const idle, pause = 20 * time.Millisecond, 250 * time.Millisecond
		var closedIdle atomic.Int64
		srv, ta := countedServer(t, false, func(s *httptest.Server) {
			s.Config.IdleTimeout = idle
			s.Config.ConnState = func(_ net.Conn, st nethttp.ConnState) {
				if st == nethttp.StateClosed {
					closedIdle.Add(1)
				}
			}
		}, func(w nethttp.ResponseWriter, r *nethttp.Request) {
			io.WriteString(w, "ok")
		})
		c := openConform(t, p, srv.URL, nil)
		const vus, perVU = 3, 4
		var succeeded, connects atomic.Int64
		var wg sync.WaitGroup
		for vu := uint64(1); vu <= vus; vu++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range perVU {
					if i > 0 {
						time.Sleep(pause)
					}
					o := conformCall(t, c, vu, getPath("/"), false, false)
					if o.request.Error == "" && o.request.Status == 200 {
						succeeded.Add(1)
					} else {
						t.Errorf("VU %d call %d after a pause past the server's idle timeout: %+v", vu, i+1, o.request)
					}
					if o.connect != nil {
						connects.Add(1)
					}
				}
			}()
		}
		wg.Wait()
		const calls = vus * perVU
		if got, requests := succeeded.Load(), ta.requests.Load(); got != calls || requests != calls {
			t.Errorf("hload counted %d successes of %d calls; the server read %d requests", got, calls, requests)
		}
		if accepted := ta.accepted.Load(); accepted != calls || connects.Load() != accepted {
			t.Errorf("the server accepted %d connections (closed %d) and hload reported %d connects, for %d calls each after the idle timeout",
				accepted, closedIdle.Load(), connects.Load(), calls)
		}
	})
}

// TestConformResetRule checks docs/http.md's rule that every request the
// server receives is counted once, under load: several VUs, and a server
// whose every connection answers three requests (the third with
// `Connection: close`), but whose every tenth reads its third request,
// on a reused connection, and resets. Each request names its call, so the
// server can tell a request sent twice from two calls. hload's successes
// plus its reset failures are the requests the server read; its successes
// are the ones the server answered, call by call. TestNoReplay checks the
// same rule one case at a time; this is the load the rule was written for.
func TestConformResetRule(t *testing.T) {
	protocoltest.Run(t, New(), func(t *testing.T, _ protocoltest.Path, p protocols.Protocol) {
		const perConn, every = 3, 10
		var mu sync.Mutex
		read := map[string]int{}     // call -> copies read
		answered := map[string]int{} // call -> copies answered
		reset := map[string]int{}    // call -> copies whose connection was reset
		url, ta := rawHTTPServer(t, func(conn *tallyConn, served int, r *nethttp.Request, body []byte) bool {
			id := r.URL.Path
			if r.Method == nethttp.MethodPost && string(body) != "payload "+id {
				id += " with a wrong body"
			}
			mu.Lock()
			read[id]++
			last := served == perConn
			if last && conn.id%every == 0 {
				reset[id]++
				mu.Unlock()
				conn.reset()
				return false
			}
			answered[id]++
			mu.Unlock()
			head := "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n"
			if last {
				head += "Connection: close\r\n"
			}
			if r.Method == nethttp.MethodHead {
				io.WriteString(conn, head+"\r\n")
			} else {
				io.WriteString(conn, head+"\r\nok")
			}
			return !last
		})
		c := openConform(t, p, url, nil)
		const vus, perVU = 4, 45
		type result struct {
			id      string
			kind    protocols.ErrorKind
			msg     string
			connect bool
		}
		results := make(chan result, vus*perVU)
		var wg sync.WaitGroup
		for vu := uint64(1); vu <= vus; vu++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range perVU {
					id := "/vu" + strconv.FormatUint(vu, 10) + "/call" + strconv.Itoa(i)
					r := getPath(id)
					// A connection carries three calls in a row; the kind
					// shifts from one triple to the next, so that the third
					// call, which may meet a reset, is each kind in turn.
					switch (i + i/perConn) % 3 {
					case 1: // what net/http replays: a POST with an Idempotency-Key
						r = req(map[string]cty.Value{"path": cty.StringVal(id), "body": cty.StringVal("payload " + id),
							"headers": strMap("Idempotency-Key", id)})
					case 2:
						r = req(map[string]cty.Value{"method": cty.StringVal("HEAD"), "path": cty.StringVal(id)})
					}
					o := conformCall(t, c, vu, r, false, false)
					results <- result{id, o.request.Error, o.request.Message, o.connect != nil}
				}
			}()
		}
		wg.Wait()
		close(results)

		var succeeded, resets, connects int
		mu.Lock()
		defer mu.Unlock()
		for res := range results {
			if res.connect {
				connects++
			}
			switch {
			case res.kind == protocols.ErrNone:
				succeeded++
				if read[res.id] != 1 || answered[res.id] != 1 {
					t.Errorf("%s succeeded; the server read it %d times and answered %d", res.id, read[res.id], answered[res.id])
				}
			case res.kind == protocols.ErrReset && res.msg != "":
				resets++
				if read[res.id] != 1 || reset[res.id] != 1 {
					t.Errorf("%s failed as reset; the server read it %d times and reset %d", res.id, read[res.id], reset[res.id])
				}
			default:
				t.Errorf("%s: error %q, message %q; want a success, or a reset with a message", res.id, res.kind, res.msg)
			}
		}
		var copies, resetDone int
		for id, n := range read {
			copies += n
			if n != 1 {
				t.Errorf("the server read %s %d times", id, n)
			}
		}
		for _, n := range reset {
			resetDone += n
		}
		const calls = vus * perVU
		if requests := int(ta.requests.Load()); succeeded+resets != requests || requests != calls || copies != calls {
			t.Errorf("hload: %d successes + %d resets; the server read %d requests (%d by call id) for %d calls", succeeded, resets, requests, copies, calls)
		}
		if resets != resetDone || resetDone == 0 {
			t.Errorf("hload counted %d resets; the server reset %d connections after reading a request", resets, resetDone)
		}
		if accepted := int(ta.accepted.Load()); connects != accepted {
			t.Errorf("%d connect samples; the server accepted %d connections", connects, accepted)
		}
		t.Logf("%d calls: %d succeeded, %d reset; the server read %d requests on %d connections",
			calls, succeeded, resets, ta.requests.Load(), ta.accepted.Load())
	})
}

// TestConformRedirects checks the redirects a browser follows: 301, 302
// and 303 turn a POST into a GET without its body; 307 and 308 keep the
// method and the body, which the server checks on the second hop; a
// relative Location resolves against the request's URL; a redirect may
// lead to another server. The server counts every hop.
func TestConformRedirects(t *testing.T) {
	protocoltest.Run(t, New(), func(t *testing.T, _ protocoltest.Path, p protocols.Protocol) {
		other, otherTally := countedServer(t, false, nil, func(w nethttp.ResponseWriter, r *nethttp.Request) {
			b, _ := io.ReadAll(r.Body)
			io.WriteString(w, "other "+r.Method+" "+r.URL.Path+" "+string(b))
		})
		var mu sync.Mutex
		var bodyMismatch []string // second hops of 307 and 308 whose body was not the first hop's
		srv, ta := countedServer(t, false, nil, func(w nethttp.ResponseWriter, r *nethttp.Request) {
			b, _ := io.ReadAll(r.Body)
			var n int
			switch path := r.URL.Path; {
			case strings.HasPrefix(path, "/code/"):
				code, _ := strconv.Atoi(strings.TrimPrefix(path, "/code/"))
				w.Header().Set("Location", "/landed?from="+strconv.Itoa(code)+"&sent="+string(b))
				w.WriteHeader(code)
				io.WriteString(w, "moved")
			case path == "/landed":
				if r.Method == nethttp.MethodPost && string(b) != r.URL.Query().Get("sent") {
					mu.Lock()
					bodyMismatch = append(bodyMismatch, r.URL.RawQuery+" got "+string(b))
					mu.Unlock()
				}
				io.WriteString(w, r.Method+" "+r.URL.Query().Get("from")+" body="+string(b))
			case path == "/dir/relative":
				w.Header().Set("Location", "next?q=1")
				w.WriteHeader(nethttp.StatusFound)
			case path == "/dir/up":
				w.Header().Set("Location", "../top")
				w.WriteHeader(nethttp.StatusFound)
			case path == "/away":
				w.Header().Set("Location", other.URL+"/there")
				w.WriteHeader(nethttp.StatusTemporaryRedirect)
			case pathNumber(path, "/hop/", &n) && n > 0:
				w.Header().Set("Location", "/hop/"+strconv.Itoa(n-1))
				w.WriteHeader(nethttp.StatusFound)
			default:
				io.WriteString(w, "at "+path+"?"+r.URL.RawQuery)
			}
		})
		post := func(path, body string) cty.Value {
			return req(map[string]cty.Value{"path": cty.StringVal(path), "body": cty.StringVal(body)})
		}
		c := openConform(t, p, srv.URL, nil)
		cases := []struct {
			name      string
			r         cty.Value
			body      string
			hops      int64 // requests the first server reads
			otherHops int64 // requests the other server reads
		}{
			{"301 turns POST into GET", post("/code/301", "data"), "GET 301 body=", 2, 0},
			{"302 turns POST into GET", post("/code/302", "data"), "GET 302 body=", 2, 0},
			{"303 turns POST into GET", post("/code/303", "data"), "GET 303 body=", 2, 0},
			{"307 keeps POST and its body", post("/code/307", "data307"), "POST 307 body=data307", 2, 0},
			{"308 keeps POST and its body", post("/code/308", "data308"), "POST 308 body=data308", 2, 0},
			{"301 keeps GET", getPath("/code/301"), "GET 301 body=", 2, 0},
			{"relative Location", getPath("/dir/relative"), "at /dir/next?q=1", 2, 0},
			{"Location with ..", getPath("/dir/up"), "at /top?", 2, 0},
			{"another server", post("/away", "far"), "other POST /there far", 1, 1},
			{"a chain of 5", getPath("/hop/5"), "at /hop/0?", 6, 0},
		}
		for _, tc := range cases {
			mine, others := ta.requests.Load(), otherTally.requests.Load()
			o := conformCall(t, c, 1, tc.r, true, false)
			if conformOK(t, tc.name, o, 200) && string(o.request.Body) != tc.body {
				t.Errorf("%s: body %q, want %q", tc.name, o.request.Body, tc.body)
			}
			if got, gotOther := ta.requests.Load()-mine, otherTally.requests.Load()-others; got != tc.hops || gotOther != tc.otherHops {
				t.Errorf("%s: the servers read %d and %d requests, want %d and %d", tc.name, got, gotOther, tc.hops, tc.otherHops)
			}
		}
		mu.Lock()
		if len(bodyMismatch) > 0 {
			t.Errorf("second hops that did not carry the first hop's body: %q", bodyMismatch)
		}
		mu.Unlock()

		t.Run("max_redirects exceeded", func(t *testing.T) {
			c := openConform(t, p, srv.URL, map[string]cty.Value{"max_redirects": cty.NumberIntVal(2)})
			before := ta.requests.Load()
			o := conformCall(t, c, 1, getPath("/hop/5"), true, false)
			s := o.request
			// net/http hands back the last redirect's status with the
			// error; an engine may report none. Either way it is one failed
			// call, of kind protocol, that says why.
			if s.Error != protocols.ErrProtocol || !strings.Contains(s.Message, "redirect") || (s.Status != 0 && s.Status != 302) {
				t.Errorf("sample status %d, error %q, message %q; want a protocol failure about redirects", s.Status, s.Error, s.Message)
			}
			if got := ta.requests.Load() - before; got != 3 {
				t.Errorf("the server read %d requests, want 3: the first and the 2 redirects allowed", got)
			}
		})
		t.Run("follow_redirects = false", func(t *testing.T) {
			c := openConform(t, p, srv.URL, map[string]cty.Value{"follow_redirects": cty.False})
			before := ta.requests.Load()
			o := conformCall(t, c, 1, post("/code/307", "kept"), true, true)
			if conformOK(t, "307 not followed", o, 307) {
				if got := o.request.Headers["Location"]; len(got) != 1 || got[0] != "/landed?from=307&sent=kept" {
					t.Errorf("Location = %q", got)
				}
				if string(o.request.Body) != "moved" {
					t.Errorf("body %q, want the 307's own", o.request.Body)
				}
			}
			if got := ta.requests.Load() - before; got != 1 {
				t.Errorf("the server read %d requests, want 1", got)
			}
		})
	})
}

// pathNumber reads the number after prefix in s.
func pathNumber(s, prefix string, n *int) bool {
	rest, found := strings.CutPrefix(s, prefix)
	if !found {
		return false
	}
	v, err := strconv.Atoi(rest)
	*n = v
	return err == nil
}

// TestConformCookies checks that each VU has its own cookies: the server
// sets one naming the VU on its first call and checks, on every later
// call, that the VU sends its own and no other VU's, while the VUs call at
// once. A cookie set on a redirect's first hop is sent on the next hop.
func TestConformCookies(t *testing.T) {
	protocoltest.Run(t, New(), func(t *testing.T, _ protocoltest.Path, p protocols.Protocol) {
		var mu sync.Mutex
		var wrong []string
		loggedIn := map[string]bool{}
		srv, ta := countedServer(t, false, nil, func(w nethttp.ResponseWriter, r *nethttp.Request) {
			vu := r.URL.Query().Get("vu")
			ck, err := r.Cookie("user")
			mu.Lock()
			defer mu.Unlock()
			switch {
			case r.URL.Path == "/login":
				loggedIn[vu] = true
				nethttp.SetCookie(w, &nethttp.Cookie{Name: "user", Value: vu, Path: "/"})
			case r.URL.Path == "/hop":
				nethttp.SetCookie(w, &nethttp.Cookie{Name: "hop", Value: vu, Path: "/"})
				nethttp.Redirect(w, r, "/after-hop?vu="+vu, nethttp.StatusFound)
				return
			case r.URL.Path == "/after-hop":
				if h, err := r.Cookie("hop"); err != nil || h.Value != vu {
					wrong = append(wrong, "VU "+vu+" did not send the cookie set on the redirect's first hop")
				}
			case err == nil && ck.Value != vu:
				wrong = append(wrong, "VU "+vu+" sent VU "+ck.Value+"'s cookie")
			case err == nil && !loggedIn[vu]:
				wrong = append(wrong, "VU "+vu+" sent a cookie before it was set one")
			case err != nil && loggedIn[vu]:
				wrong = append(wrong, "VU "+vu+" did not send its cookie")
			}
			if err == nil {
				io.WriteString(w, ck.Value)
			}
		})
		c := openConform(t, p, srv.URL, nil)
		const vus, perVU = 5, 6
		var wg sync.WaitGroup
		for vu := uint64(1); vu <= vus; vu++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				id := strconv.FormatUint(vu, 10)
				for i := range perVU {
					path := "/page?vu=" + id
					if i == 0 && vu != vus { // the last VU never logs in
						path = "/login?vu=" + id
					}
					want := id
					if vu == vus || i == 0 {
						want = ""
					}
					o := conformCall(t, c, vu, getPath(path), true, false)
					if conformOK(t, "VU "+id, o, 200) && string(o.request.Body) != want {
						t.Errorf("VU %d call %d: the server saw cookie %q, want %q", vu, i+1, o.request.Body, want)
					}
				}
			}()
		}
		wg.Wait()
		if got := ta.requests.Load(); got != vus*perVU {
			t.Errorf("the server read %d requests for %d calls", got, vus*perVU)
		}

		before := ta.requests.Load()
		o := conformCall(t, c, vus+1, getPath("/hop?vu="+strconv.Itoa(vus+1)), false, false)
		conformOK(t, "a cookie set on a redirect", o, 200)
		if got := ta.requests.Load() - before; got != 2 {
			t.Errorf("the server read %d requests for a call with one redirect, want 2", got)
		}
		mu.Lock()
		defer mu.Unlock()
		for _, w := range wrong {
			t.Error("the server saw: " + w)
		}
	})
}

// TestConformTLS checks HTTP/1.1 over TLS, on a server that offers only
// HTTP/1.1 while the target allows HTTP/2: the server sees HTTP/1.1, one
// connection per VU, and hload's byte counts are the server's, TLS
// records and handshake included. A server that offers h2 to a target
// with http2 = true is spoken to over HTTP/2.
func TestConformTLS(t *testing.T) {
	protocoltest.Run(t, New(), func(t *testing.T, _ protocoltest.Path, p protocols.Protocol) {
		t.Run("HTTP/1.1", func(t *testing.T) {
			var notH1 atomic.Int64
			srv, ta := countedServer(t, true, func(s *httptest.Server) { s.EnableHTTP2 = false },
				func(w nethttp.ResponseWriter, r *nethttp.Request) {
					if r.Proto != "HTTP/1.1" || r.TLS == nil {
						notH1.Add(1)
					}
					b, _ := io.ReadAll(r.Body)
					io.WriteString(w, r.Proto+" "+string(b))
				})
			c := openConform(t, p, srv.URL, map[string]cty.Value{"insecure_skip_verify": cty.True})
			const vus, perVU = 2, 4
			connects := 0
			for vu := uint64(1); vu <= vus; vu++ {
				for i := range perVU {
					what := "VU " + strconv.FormatUint(vu, 10) + " call " + strconv.Itoa(i+1)
					before := markServer(ta)
					o := conformCall(t, c, vu, req(map[string]cty.Value{"body": cty.StringVal("over tls")}), true, false)
					if o.connect != nil {
						connects++
					}
					if !conformOK(t, what, o, 200) {
						continue
					}
					checkWireBytes(t, what, o.request, ta, before)
					if got := string(o.request.Body); got != "HTTP/1.1 over tls" {
						t.Errorf("%s: body %q", what, got)
					}
				}
			}
			if got := ta.requests.Load(); got != vus*perVU || notH1.Load() != 0 {
				t.Errorf("the server read %d requests for %d calls, %d of them not HTTP/1.1 over TLS", got, vus*perVU, notH1.Load())
			}
			if got := ta.accepted.Load(); got != vus || connects != vus {
				t.Errorf("the server accepted %d connections and hload reported %d connects, want one per VU: %d", got, connects, vus)
			}
		})

		t.Run("HTTP/2", func(t *testing.T) {
			var notH2 atomic.Int64
			srv, ta := countedServer(t, true, func(s *httptest.Server) { s.EnableHTTP2 = true },
				func(w nethttp.ResponseWriter, r *nethttp.Request) {
					if r.ProtoMajor != 2 {
						notH2.Add(1)
					}
					io.WriteString(w, r.Proto)
				})
			c := openConform(t, p, srv.URL, map[string]cty.Value{"insecure_skip_verify": cty.True, "http2": cty.True})
			const calls = 4
			for i := range calls {
				o := conformCall(t, c, 1, getPath("/"), true, false)
				if conformOK(t, "call "+strconv.Itoa(i+1), o, 200) {
					if string(o.request.Body) != "HTTP/2.0" {
						t.Errorf("call %d: body %q, want HTTP/2.0", i+1, o.request.Body)
					}
					// HTTP/2's counts take in frames exchanged between
					// calls (see the package comment): they are not
					// compared with the server's call by call.
					if o.request.BytesSent <= 0 || o.request.BytesReceived <= 0 {
						t.Errorf("call %d: %d bytes sent, %d received", i+1, o.request.BytesSent, o.request.BytesReceived)
					}
				}
			}
			if got := ta.requests.Load(); got != calls || notH2.Load() != 0 {
				t.Errorf("the server read %d requests for %d calls, %d of them not over HTTP/2", got, calls, notH2.Load())
			}
			if got := ta.accepted.Load(); got != 1 {
				t.Errorf("the server accepted %d connections, want 1", got)
			}
		})
	})
}

// TestConformMisbehaving checks responses no server should send. Each is
// one failed call with a message, of kind protocol, or reset for a body
// cut short by the server's close (net/http reports io.ErrUnexpectedEOF,
// which hload calls a reset everywhere; an engine of its own may call it
// a protocol error, which it also is): never a success, a panic, a hang
// (that would be a timeout) or a second request. Each comes on a reused
// connection, where net/http would retry a request that failed before the
// response began, and the VU's next call succeeds on a new connection.
func TestConformMisbehaving(t *testing.T) {
	protocoltest.Run(t, New(), func(t *testing.T, _ protocoltest.Path, p protocols.Protocol) {
		const okResponse = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
		protocolOnly := []protocols.ErrorKind{protocols.ErrProtocol}
		cutShort := []protocols.ErrorKind{protocols.ErrReset, protocols.ErrProtocol}
		// net/http reads up to 10 MB of response headers by default; an
		// engine with a 64 KB buffer stops sooner. This block exceeds both.
		var huge strings.Builder
		huge.WriteString("HTTP/1.1 200 OK\r\n")
		for i := 0; huge.Len() < 11<<20; i++ {
			huge.WriteString("X-Filler-" + strconv.Itoa(i) + ": " + strings.Repeat("f", 1000) + "\r\n")
		}
		huge.WriteString("Content-Length: 2\r\n\r\nok")
		cases := []struct {
			name     string
			response string
			kinds    []protocols.ErrorKind
			// inBody says the header was sound and the body is at fault:
			// the sample may carry the header's status with the error.
			inBody bool
		}{
			{"garbage status line", "HTTP/1.1 2OO OK\r\nContent-Length: 2\r\n\r\nok", protocolOnly, false},
			{"no status line", "SSH-2.0-OpenSSH_9.6\r\n\r\n", protocolOnly, false},
			{"status out of range", "HTTP/1.1 2000 OK\r\nContent-Length: 2\r\n\r\nok", protocolOnly, false},
			{"negative Content-Length", "HTTP/1.1 200 OK\r\nContent-Length: -5\r\n\r\nhello", protocolOnly, false},
			{"non-numeric Content-Length", "HTTP/1.1 200 OK\r\nContent-Length: five\r\n\r\nhello", protocolOnly, false},
			{"two different Content-Length", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!", protocolOnly, false},
			{"bad chunk size", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nxyz\r\nhello\r\n0\r\n\r\n", protocolOnly, true},
			{"chunk size overflow", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nfffffffffffffffffff\r\nhello\r\n0\r\n\r\n", protocolOnly, true},
			{"header line without a colon", "HTTP/1.1 200 OK\r\nContent-Length 2\r\n\r\nok", protocolOnly, false},
			{"header block of 11 MB", huge.String(), protocolOnly, false},
			{"body cut short of Content-Length", "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n" + strings.Repeat("x", 50), cutShort, true},
			{"chunked body cut short", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n64\r\n" + strings.Repeat("x", 50), cutShort, true},
			{"chunked body without its last chunk", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n", cutShort, true},
			{"header cut short", "HTTP/1.1 200 OK\r\nContent-Le", cutShort, false},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				url, ta := rawHTTPServer(t, func(conn *tallyConn, _ int, r *nethttp.Request, _ []byte) bool {
					if r.URL.Path == "/bad" {
						io.WriteString(conn, tc.response)
						return false
					}
					io.WriteString(conn, okResponse)
					return true
				})
				c := openConform(t, p, url, nil)
				conformOK(t, "the call before", conformCall(t, c, 1, getPath("/ok"), false, false), 200)
				o := conformCall(t, c, 1, getPath("/bad"), true, true)
				s := o.request
				if !slices.Contains(tc.kinds, s.Error) || s.Message == "" || (s.Status != 0 && !(tc.inBody && s.Status == 200)) {
					t.Errorf("sample status %d, error %q, message %q; want one of %q with a message", s.Status, s.Error, s.Message, tc.kinds)
				} else {
					t.Logf("%s: %s", s.Error, s.Message)
				}
				conformOK(t, "the call after", conformCall(t, c, 1, getPath("/ok"), false, false), 200)
				if requests, accepted := ta.requests.Load(), ta.accepted.Load(); requests != 3 || accepted != 2 {
					t.Errorf("the server read %d requests on %d connections, want 3 on 2: the bad response's connection was reused or its request sent again",
						requests, accepted)
				}
			})
		}

		// A header block under net/http's limit but over 64 KB: net/http
		// takes it; an engine with a 64 KB buffer may refuse it. Either is
		// sound; what is not is a hang, a panic, or a header cut short.
		t.Run("header block of 100 KB", func(t *testing.T) {
			long := strings.Repeat("v", 100<<10)
			url, ta := rawHTTPServer(t, func(conn *tallyConn, _ int, r *nethttp.Request, _ []byte) bool {
				io.WriteString(conn, "HTTP/1.1 200 OK\r\nX-Long: "+long+"\r\nContent-Length: 2\r\n\r\nok")
				return true
			})
			c := openConform(t, p, url, nil)
			o := conformCall(t, c, 1, getPath("/"), true, true)
			s := o.request
			switch s.Error {
			case protocols.ErrNone:
				if got := s.Headers["X-Long"]; len(got) != 1 || got[0] != long || string(s.Body) != "ok" {
					t.Errorf("succeeded with an X-Long of %d values, body %q", len(got), s.Body)
				}
			case protocols.ErrProtocol:
				if s.Message == "" {
					t.Error("a protocol failure without a message")
				}
			default:
				t.Errorf("sample status %d, error %q, message %q; want a success or a protocol failure", s.Status, s.Error, s.Message)
			}
			if got := ta.requests.Load(); got != 1 {
				t.Errorf("the server read %d requests for one call", got)
			}
		})
	})
}

// TestConformSlowServer checks the timings of a response that comes in
// pieces: a header in three writes and a body in three more, with pauses
// between. The first byte is seen after the server wrote it and before it
// wrote the last piece, the call ends after that, and the time to first
// byte is no more than the call's. A connect sample comes once per
// connection the server accepted.
func TestConformSlowServer(t *testing.T) {
	protocoltest.Run(t, New(), func(t *testing.T, _ protocoltest.Path, p protocols.Protocol) {
		const pause = 40 * time.Millisecond
		var mu sync.Mutex
		var firstWrite, lastWrite time.Time
		url, ta := rawHTTPServer(t, func(conn *tallyConn, _ int, r *nethttp.Request, _ []byte) bool {
			closing := r.URL.Path == "/close"
			pieces := []string{"HTTP/1.1 200 OK\r\n", "Content-Length: 9\r\n", "\r\n", "abc", "def", "ghi"}
			if closing {
				pieces[1] = "Content-Length: 9\r\nConnection: close\r\n"
			}
			for i, piece := range pieces {
				if i > 0 {
					time.Sleep(pause)
				}
				// Noted before writing: once the last piece is out, the
				// call may end and the test read the times.
				mu.Lock()
				if i == 0 {
					firstWrite = time.Now()
				}
				lastWrite = time.Now()
				mu.Unlock()
				io.WriteString(conn, piece)
			}
			return !closing
		})
		c := openConform(t, p, url, nil)
		calls := []struct {
			vu   uint64
			path string
		}{{1, "/"}, {1, "/close"}, {1, "/"}, {1, "/"}, {2, "/"}, {2, "/"}}
		connects := 0
		for i, tc := range calls {
			what := "call " + strconv.Itoa(i+1)
			o := conformCall(t, c, tc.vu, getPath(tc.path), true, false)
			if !conformOK(t, what, o, 200) {
				continue
			}
			mu.Lock()
			first, last := firstWrite, lastWrite
			mu.Unlock()
			s := o.request
			if string(s.Body) != "abcdefghi" {
				t.Errorf("%s: body %q", what, s.Body)
			}
			if o.ttfb == nil {
				t.Errorf("%s: no ttfb sample", what)
			} else {
				fb := o.ttfb
				if fb.Value <= 0 || fb.Value > s.Value {
					t.Errorf("%s: ttfb %v of a call of %v", what, fb.Value, s.Value)
				}
				if fb.Time.Before(first) || !fb.Time.Before(last) {
					t.Errorf("%s: first byte %v after the server's first write, want from 0 and before its last write at %v",
						what, fb.Time.Sub(first), last.Sub(first))
				}
				if fb.Status != 200 {
					t.Errorf("%s: ttfb sample status %d", what, fb.Status)
				}
			}
			if s.Time.Before(last) {
				t.Errorf("%s: the call ended %v before the server's last write", what, last.Sub(s.Time))
			}
			if o.connect != nil {
				connects++
				if o.connect.Value <= 0 || o.connect.Value > s.Value {
					t.Errorf("%s: connect %v of a call of %v", what, o.connect.Value, s.Value)
				}
			}
		}
		if accepted := ta.accepted.Load(); accepted != 3 || connects != 3 {
			t.Errorf("%d connect samples; the server accepted %d connections; want 3: one per VU and one after Connection: close", connects, accepted)
		}
		if got := ta.requests.Load(); got != int64(len(calls)) {
			t.Errorf("the server read %d requests for %d calls", got, len(calls))
		}
	})
}

// TestConformGzip checks compressed responses, as issue 14 defines them:
// when the request asks for gzip, checks and captures see the decoded
// body, while the byte counts stay the wire's, the compressed bytes the
// server wrote. A body that does not decode fails the call rather than
// handing the check garbage. A request that does not ask gets the body as
// it is.
func TestConformGzip(t *testing.T) {
	protocoltest.Run(t, New(), func(t *testing.T, _ protocoltest.Path, p protocols.Protocol) {
		var doc strings.Builder
		doc.WriteString(`{"items":[`)
		for i := range 200 {
			if i > 0 {
				doc.WriteByte(',')
			}
			doc.WriteString(`{"id":` + strconv.Itoa(i) + `,"name":"item ` + strconv.Itoa(i) + `","tags":["a","b"]}`)
		}
		doc.WriteString(`]}`)
		plain := doc.String()
		var zipped bytes.Buffer
		zw := gzip.NewWriter(&zipped)
		io.WriteString(zw, plain)
		zw.Close()
		gz := zipped.Bytes()
		badCRC := bytes.Clone(gz)
		badCRC[len(badCRC)-8] ^= 0xff // the trailer's CRC-32

		var compressed atomic.Int64 // responses the server compressed
		srv, ta := countedServer(t, false, nil, func(w nethttp.ResponseWriter, r *nethttp.Request) {
			w.Header().Set("Content-Type", "application/json")
			if !strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
				io.WriteString(w, plain)
				return
			}
			compressed.Add(1)
			w.Header().Set("Content-Encoding", "gzip")
			switch r.URL.Path {
			case "/chunked":
				w.(nethttp.Flusher).Flush()
				for i := 0; i < len(gz); i += 100 {
					w.Write(gz[i:min(i+100, len(gz))])
				}
			case "/corrupt":
				io.WriteString(w, "this is not gzip at all, whatever the header says")
			case "/truncated":
				w.Write(gz[:len(gz)/2])
			case "/bad-crc":
				w.Write(badCRC)
			default:
				w.Header().Set("Content-Length", strconv.Itoa(len(gz)))
				w.Write(gz)
			}
		})
		c := openConform(t, p, srv.URL, nil)
		gzipped := func(path string) cty.Value {
			return req(map[string]cty.Value{"path": cty.StringVal(path), "headers": strMap("Accept-Encoding", "gzip")})
		}

		for _, path := range []string{"/", "/chunked"} {
			what := "gzip " + path
			before := markServer(ta)
			o := conformCall(t, c, 1, gzipped(path), true, false)
			if !conformOK(t, what, o, 200) {
				continue
			}
			checkWireBytes(t, what, o.request, ta, before)
			if got := o.request.Body; string(got) != plain {
				t.Errorf("%s: Body is %d bytes beginning %q; want the decoded JSON, %d bytes beginning %q",
					what, len(got), got[:min(len(got), 12)], len(plain), plain[:12])
			}
			if o.request.BytesReceived >= int64(len(plain)) {
				t.Errorf("%s: %d bytes received for %d of JSON compressed to %d", what, o.request.BytesReceived, len(plain), len(gz))
			}
		}

		before := markServer(ta)
		o := conformCall(t, c, 1, getPath("/"), true, false)
		if conformOK(t, "no gzip asked", o, 200) {
			checkWireBytes(t, "no gzip asked", o.request, ta, before)
			if string(o.request.Body) != plain {
				t.Errorf("no gzip asked: Body is %d bytes, want the %d of JSON as sent", len(o.request.Body), len(plain))
			}
		}

		for _, path := range []string{"/corrupt", "/truncated", "/bad-crc"} {
			o := conformCall(t, c, 1, gzipped(path), true, false)
			if s := o.request; s.Error != protocols.ErrProtocol || s.Message == "" {
				t.Errorf("gzip %s: sample status %d, error %q, message %q, %d bytes of body; want a protocol failure that says why",
					path, s.Status, s.Error, s.Message, len(s.Body))
			}
		}
		conformOK(t, "the call after the corrupt ones", conformCall(t, c, 1, gzipped("/"), false, false), 200)
		if got, want := ta.requests.Load(), int64(7); got != want || compressed.Load() != want-1 {
			t.Errorf("the server read %d requests, compressed %d; want %d and %d", got, compressed.Load(), want, want-1)
		}
	})
}

// TestConformConnectionsPerVU checks connections_per_vu = 3 with one VU
// making 9 calls in a row. Each VU may hold up to 3 connections, so the
// server sees no more than 3, and every call on one of them. The engine of
// issue 14 goes further: a VU rotates its calls over its connections, so
// the server sees exactly 3; net/http reuses the one idle connection, so
// that subtest fails on net/http's transport.
func TestConformConnectionsPerVU(t *testing.T) {
	protocoltest.Run(t, New(), func(t *testing.T, _ protocoltest.Path, p protocols.Protocol) {
		const perVU, calls = 3, 9
		run := func(t *testing.T) (addrs map[string]int, ta *serverTally) {
			var mu sync.Mutex
			addrs = map[string]int{}
			srv, ta := countedServer(t, false, nil, func(w nethttp.ResponseWriter, r *nethttp.Request) {
				mu.Lock()
				addrs[r.RemoteAddr]++
				mu.Unlock()
				io.WriteString(w, "ok")
			})
			c := openConform(t, p, srv.URL, map[string]cty.Value{"connections_per_vu": cty.NumberIntVal(perVU)})
			connects := 0
			for i := range calls {
				before := markServer(ta)
				o := conformCall(t, c, 1, getPath("/"), false, false)
				if conformOK(t, "call "+strconv.Itoa(i+1), o, 200) {
					checkWireBytes(t, "call "+strconv.Itoa(i+1), o.request, ta, before)
				}
				if o.connect != nil {
					connects++
				}
			}
			mu.Lock()
			defer mu.Unlock()
			total := 0
			for _, n := range addrs {
				total += n
			}
			if requests := ta.requests.Load(); requests != calls || total != calls {
				t.Errorf("the server read %d requests (%d by address) for %d calls", requests, total, calls)
			}
			if accepted := ta.accepted.Load(); int(accepted) != connects || int(accepted) < len(addrs) {
				t.Errorf("the server accepted %d connections, carrying requests from %d addresses; hload reported %d connects",
					accepted, len(addrs), connects)
			}
			return addrs, ta
		}
		t.Run("at most connections_per_vu", func(t *testing.T) {
			addrs, ta := run(t)
			if accepted := ta.accepted.Load(); accepted > perVU || len(addrs) > perVU {
				t.Errorf("the server accepted %d connections, carrying calls from %v; want at most %d", accepted, addrs, perVU)
			}
		})
		t.Run("exactly connections_per_vu, the calls rotated over them", func(t *testing.T) {
			addrs, ta := run(t)
			if accepted := ta.accepted.Load(); accepted != perVU || len(addrs) != perVU {
				t.Errorf("the server accepted %d connections, carrying calls from %v; want the VU's %d, its calls rotated over them",
					accepted, addrs, perVU)
			}
		})
	})
}
