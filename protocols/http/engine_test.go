package http

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log"
	"net"
	nethttp "net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zclconf/go-cty/cty"

	"github.com/hload/hload/protocols"
)

// countingServer is a net/http test server that counts the requests it
// handled and the connections it accepted: the figures hload's must match.
type countingServer struct {
	*httptest.Server
	requests atomic.Int64
	conns    atomic.Int64
	closed   atomic.Int64 // connections the server has closed
	mu       sync.Mutex
	addrs    map[string]int // remote address -> requests
}

func newCountingServer(t *testing.T, tls bool, h2 bool, handler nethttp.HandlerFunc) *countingServer {
	return startCountingServer(t, tls, h2, 0, handler)
}

// startCountingServer starts a counting server; readTimeout, when not
// zero, is its net/http ReadTimeout.
func startCountingServer(t *testing.T, tls, h2 bool, readTimeout time.Duration, handler nethttp.HandlerFunc) *countingServer {
	s := &countingServer{addrs: map[string]int{}}
	s.Server = httptest.NewUnstartedServer(nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
		s.requests.Add(1)
		s.mu.Lock()
		s.addrs[r.RemoteAddr]++
		s.mu.Unlock()
		handler(w, r)
	}))
	s.Config.ErrorLog = log.New(io.Discard, "", 0)
	s.Config.ReadTimeout = readTimeout
	s.Config.ConnState = func(_ net.Conn, st nethttp.ConnState) {
		switch st {
		case nethttp.StateNew:
			s.conns.Add(1)
		case nethttp.StateClosed:
			s.closed.Add(1)
		}
	}
	s.EnableHTTP2 = h2
	if tls {
		s.StartTLS()
	} else {
		s.Start()
	}
	t.Cleanup(s.Close)
	return s
}

func path(p string) cty.Value { return req(map[string]cty.Value{"path": cty.StringVal(p)}) }

// TestEngineFraming checks each framing of RFC 9112 6.3 against net/http's
// server: the body read, the status, and the server's own counts of
// requests and connections.
func TestEngineFraming(t *testing.T) {
	srv := newCountingServer(t, false, false, func(w nethttp.ResponseWriter, r *nethttp.Request) {
		switch r.URL.Path {
		case "/length":
			w.Header().Set("Content-Length", "5")
			io.WriteString(w, "hello")
		case "/chunked":
			for _, part := range []string{"one,", "two,", strings.Repeat("x", 10000)} {
				io.WriteString(w, part)
				w.(nethttp.Flusher).Flush()
			}
		case "/trailer":
			w.Header().Set("Trailer", "X-Sum")
			io.WriteString(w, "body")
			w.(nethttp.Flusher).Flush()
			w.Header().Set("X-Sum", "4")
		case "/204":
			w.WriteHeader(204)
		case "/304":
			w.WriteHeader(304)
		case "/103":
			w.Header().Set("Link", "</style.css>; rel=preload")
			w.WriteHeader(103)
			io.WriteString(w, "after hints")
		case "/close":
			w.Header().Set("Connection", "close")
			io.WriteString(w, "bye")
		default:
			io.WriteString(w, "hello")
		}
	})
	cases := []struct {
		path, method string
		status       int
		body         string
		conns        int64 // new connections for 3 calls
	}{
		{"/length", "GET", 200, "hello", 1},
		{"/chunked", "GET", 200, "one,two," + strings.Repeat("x", 10000), 1},
		{"/trailer", "GET", 200, "body", 1},
		{"/length", "HEAD", 200, "", 1},
		{"/204", "GET", 204, "", 1},
		{"/304", "GET", 304, "", 1},
		{"/103", "GET", 200, "after hints", 1},
		{"/close", "GET", 200, "bye", 3},
	}
	for _, tc := range cases {
		t.Run(tc.method+tc.path, func(t *testing.T) {
			c := open(t, New(), srv.URL, nil)
			req0, conns0 := srv.requests.Load(), srv.conns.Load()
			for i := range 3 {
				res := do(t, c, 1, req(map[string]cty.Value{"path": cty.StringVal(tc.path), "method": cty.StringVal(tc.method)}), true)
				if res.request.Error != "" || res.request.Status != tc.status || res.body != tc.body {
					t.Fatalf("call %d: %+v body %d bytes %.40q, want %d and %.40q", i, res.request, len(res.body), res.body, tc.status, tc.body)
				}
			}
			if n := srv.requests.Load() - req0; n != 3 {
				t.Errorf("the server handled %d requests for 3 calls", n)
			}
			if n := srv.conns.Load() - conns0; n != tc.conns {
				t.Errorf("the server accepted %d connections for 3 calls, want %d", n, tc.conns)
			}
		})
	}
}

// misbehaving starts a raw server that answers each request it reads with
// reply, until reply or the client closes the connection; it counts the
// requests it read and the connections it accepted.
func misbehaving(t *testing.T, reply func(conn net.Conn)) (string, *atomic.Int64) {
	url, n, _ := misbehavingConns(t, reply)
	return url, n
}

func misbehavingConns(t *testing.T, reply func(conn net.Conn)) (string, *atomic.Int64, *atomic.Int64) {
	var n, conns atomic.Int64
	url := rawServer(t, func(conn net.Conn) {
		conns.Add(1)
		defer conn.Close()
		br := bufio.NewReader(conn)
		for {
			r, err := nethttp.ReadRequest(br)
			if err != nil {
				return
			}
			io.Copy(io.Discard, r.Body)
			n.Add(1)
			reply(conn)
		}
	})
	return url, &n, &conns
}

// TestEngineMisbehavingServers checks that malformed responses fail the
// call with a protocol error that says why, in bounded time, and that a
// body read until the server closes is read whole.
func TestEngineMisbehavingServers(t *testing.T) {
	write := func(s string) func(net.Conn) {
		return func(conn net.Conn) { io.WriteString(conn, s) }
	}
	cases := []struct {
		name  string
		reply func(net.Conn)
		kind  protocols.ErrorKind
		want  string // in the message, or the body when kind is ""
		conns int64  // connections the server accepted for 3 calls; 0: not checked
	}{
		{"until close", func(conn net.Conn) {
			io.WriteString(conn, "HTTP/1.1 200 OK\r\n\r\nall of it")
			conn.Close()
		}, "", "all of it", 3},
		// The server would take another request; hload must not send it.
		{"HTTP/1.0 without keep-alive", write("HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok"), "", "ok", 3},
		{"HTTP/1.0 with keep-alive", write("HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\nok"), "", "ok", 1},
		{"chunks in many small writes", func(conn net.Conn) {
			for _, b := range []byte("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3;x=y\r\nabc\r\n10\r\n0123456789abcdef\r\n0\r\nT: 1\r\n\r\n") {
				conn.Write([]byte{b})
				time.Sleep(100 * time.Microsecond)
			}
		}, "", "abc0123456789abcdef", 1},
		{"conflicting lengths", write("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nok"), protocols.ErrProtocol, "conflicting Content-Length", 0},
		{"bad length", write("HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\nok"), protocols.ErrProtocol, "bad Content-Length", 0},
		{"bad chunk size", write("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nnope\r\n"), protocols.ErrProtocol, "bad chunk size", 0},
		{"truncated body", func(conn net.Conn) {
			io.WriteString(conn, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nshort")
			conn.Close()
		}, protocols.ErrProtocol, "after 5 of the body's 100 bytes", 0},
		{"101", write("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n"), protocols.ErrProtocol, "switched protocols", 0},
		{"bad status line", write("HTTP/1.1 OK 200\r\n\r\n"), protocols.ErrProtocol, "malformed status", 0},
		{"head too long", write("HTTP/1.1 200 OK\r\nX-Big: " + strings.Repeat("b", 70<<10) + "\r\n\r\n"), protocols.ErrProtocol, "longer than 65536 bytes", 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			url, n, conns := misbehavingConns(t, tc.reply)
			c := open(t, New(), url, nil)
			for i := range 3 {
				began := time.Now()
				res := do(t, c, 1, path("/"), true)
				if took := time.Since(began); took > 4*time.Second {
					t.Errorf("call %d took %v", i, took)
				}
				if res.count != 1 || res.request.Error != tc.kind {
					t.Fatalf("call %d: %+v, want kind %q", i, res.request, tc.kind)
				}
				if tc.kind == "" && res.body != tc.want || tc.kind != "" && !strings.Contains(res.request.Message, tc.want) {
					t.Errorf("call %d: message %q body %q, want %q", i, res.request.Message, res.body, tc.want)
				}
			}
			if got := n.Load(); got != 3 {
				t.Errorf("the server read %d requests for 3 calls", got)
			}
			if got := conns.Load(); tc.conns > 0 && got != tc.conns {
				t.Errorf("the server accepted %d connections for 3 calls, want %d", got, tc.conns)
			}
		})
	}
}

// TestEngineServesHTTP1OverTLS checks that an https target whose server
// does not offer h2 goes through the engine, and that one that does is
// handed to net/http on the connection the engine opened.
func TestEngineServesHTTP1OverTLS(t *testing.T) {
	for _, h2 := range []bool{false, true} {
		t.Run(fmt.Sprintf("server offers h2: %v", h2), func(t *testing.T) {
			var protos sync.Map
			srv := newCountingServer(t, true, h2, func(w nethttp.ResponseWriter, r *nethttp.Request) {
				protos.Store(r.Proto, true)
				io.WriteString(w, "ok")
			})
			c := open(t, New(), srv.URL, map[string]cty.Value{"insecure_skip_verify": cty.True})
			for i := range 3 {
				if res := do(t, c, 1, path("/"), true); res.request.Error != "" || res.body != "ok" {
					t.Fatalf("call %d: %+v", i, res.request)
				}
			}
			v := c.(*Client).vu(1)
			want, served := "HTTP/1.1", int64(3)
			if h2 {
				want, served = "HTTP/2.0", 0
			}
			if _, ok := protos.Load(want); !ok || v.served != served || v.h2 != h2 {
				t.Errorf("the server saw %v; the engine served %d calls (h2 %v), want %s and %d", keys(&protos), v.served, v.h2, want, served)
			}
			if n := srv.conns.Load(); n != 1 {
				t.Errorf("the server accepted %d connections for 3 calls, want 1", n)
			}
		})
	}
}

func keys(m *sync.Map) []any {
	var ks []any
	m.Range(func(k, _ any) bool { ks = append(ks, k); return true })
	return ks
}

// TestEngineIdleCloseIsSeenBeforeWriting checks that a call after a pause
// finds the connection the server closed as idle by a peek, and sends on
// a new connection instead: every call succeeds, and the server counts one
// request per call.
func TestEngineIdleCloseIsSeenBeforeWriting(t *testing.T) {
	url, n := misbehaving(t, func(conn net.Conn) {
		// A keep-alive response, then the server closes the connection
		// as idle, as servers do after their idle timeout.
		io.WriteString(conn, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
		time.Sleep(time.Millisecond)
		conn.Close()
	})
	c := open(t, New(), url, nil)
	const calls = 5
	for i := range calls {
		if res := do(t, c, 1, path("/"), false); res.request.Error != "" {
			t.Fatalf("call %d: %+v", i, res.request)
		}
		time.Sleep(30 * time.Millisecond) // the close arrives meanwhile
	}
	if got := n.Load(); got != calls {
		t.Errorf("the server read %d requests for %d calls", got, calls)
	}
}

// TestEngineUnwrittenRequestGoesOnANewConnection checks the one case where
// the engine opens another connection within a call: a write that failed
// with nothing written, which the server cannot have seen.
func TestEngineUnwrittenRequestGoesOnANewConnection(t *testing.T) {
	srv := newCountingServer(t, false, false, func(w nethttp.ResponseWriter, r *nethttp.Request) { io.WriteString(w, "ok") })
	c := open(t, New(), srv.URL, nil)
	if res := do(t, c, 1, path("/"), false); res.request.Error != "" {
		t.Fatal(res.request)
	}
	// Close the connection under the engine: its next write fails with
	// nothing written.
	c.(*Client).vu(1).conns[0].tcp.Conn.Close()
	res := do(t, c, 1, path("/"), false)
	if res.request.Error != "" || res.connect == nil {
		t.Errorf("after a failed write: %+v, connect %v; want a success on a new connection", res.request, res.connect)
	}
	if n := srv.requests.Load(); n != 2 {
		t.Errorf("the server handled %d requests for 2 calls", n)
	}
}

// TestConnectionsPerVU checks that a VU turns its calls over its
// connections_per_vu keep-alive connections.
func TestConnectionsPerVU(t *testing.T) {
	srv := newCountingServer(t, false, false, func(w nethttp.ResponseWriter, r *nethttp.Request) { io.WriteString(w, "ok") })
	c := open(t, New(), srv.URL, map[string]cty.Value{"connections_per_vu": cty.NumberIntVal(3)})
	connects := 0
	for i := range 9 {
		res := do(t, c, 1, path("/"), false)
		if res.request.Error != "" {
			t.Fatalf("call %d: %+v", i, res.request)
		}
		if res.connect != nil {
			connects++
		}
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if len(srv.addrs) != 3 || srv.conns.Load() != 3 || connects != 3 {
		t.Errorf("the server saw %d connections (%v), hload reported %d connects; want 3", srv.conns.Load(), srv.addrs, connects)
	}
	for a, n := range srv.addrs {
		if n != 3 {
			t.Errorf("%s carried %d requests, want 3", a, n)
		}
	}
}

// TestConnectOpensTheVUsConnections: Connect opens a VU's
// connections_per_vu connections before its first call, and the calls
// then use them: the server accepts 3 connections for 6 calls, 2 on each,
// and each connection's connect time is reported once, on its first call.
// Over TLS with h2 offered, the one connection Connect opened carries the
// calls through net/http.
func TestConnectOpensTheVUsConnections(t *testing.T) {
	for _, tc := range []struct {
		name    string
		tls, h2 bool
		conns   int64
	}{
		{"plain", false, false, 3},
		{"tls", true, false, 3},
		{"tls, h2", true, true, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newCountingServer(t, tc.tls, tc.h2, func(w nethttp.ResponseWriter, r *nethttp.Request) { io.WriteString(w, "ok") })
			c := open(t, New(), srv.URL, map[string]cty.Value{"connections_per_vu": cty.NumberIntVal(3), "insecure_skip_verify": cty.True})
			if err := c.(protocols.Connector).Connect(context.Background(), 1); err != nil {
				t.Fatal(err)
			}
			// The kernel completes a connect before the server's accept
			// loop takes it: its count lags the client a little.
			for end := time.Now().Add(5 * time.Second); srv.conns.Load() < tc.conns && time.Now().Before(end); {
				time.Sleep(time.Millisecond)
			}
			if n := srv.conns.Load(); n != tc.conns {
				t.Fatalf("after Connect the server had accepted %d connections, want %d", n, tc.conns)
			}
			connects := int64(0)
			for i := range 6 {
				res := do(t, c, 1, path("/"), true)
				if res.request.Error != "" || res.body != "ok" {
					t.Fatalf("call %d: %+v", i, res.request)
				}
				if res.connect != nil {
					connects++
				}
			}
			if n := srv.conns.Load(); n != tc.conns || srv.requests.Load() != 6 {
				t.Errorf("the server accepted %d connections and %d requests, want %d and 6", n, srv.requests.Load(), tc.conns)
			}
			if !tc.h2 && connects != tc.conns {
				t.Errorf("the calls reported %d connects, want %d: one per connection Connect opened", connects, tc.conns)
			}
		})
	}
}

// TestConnectedAheadThenClosed: a server with a read timeout closes a
// connection that Connect opened and no call used yet, as net/http's
// ReadTimeout and nginx's client_header_timeout do. The first call sees
// the close before it writes and goes on a new connection: it succeeds,
// plain and over TLS.
func TestConnectedAheadThenClosed(t *testing.T) {
	for _, tls := range []bool{false, true} {
		t.Run(fmt.Sprintf("tls %v", tls), func(t *testing.T) {
			srv := newTimeoutServer(t, tls, 100*time.Millisecond)
			c := open(t, New(), srv.URL, map[string]cty.Value{"insecure_skip_verify": cty.True})
			if err := c.(protocols.Connector).Connect(context.Background(), 1); err != nil {
				t.Fatal(err)
			}
			// Until the server has closed it: by its own account, not after
			// a fixed sleep, which a busy machine under -race outran (its
			// read timeout fired after the first call was written).
			deadline := time.Now().Add(10 * time.Second)
			for srv.closed.Load() == 0 {
				if time.Now().After(deadline) {
					t.Fatal("the server has not closed the idle connection 10 s after its 100 ms read timeout")
				}
				time.Sleep(time.Millisecond)
			}
			for i := range 3 {
				if res := do(t, c, 1, path("/"), true); res.request.Error != "" || res.body != "ok" {
					t.Fatalf("call %d: %+v", i, res.request)
				}
			}
			if n, r := srv.conns.Load(), srv.requests.Load(); n != 2 || r != 3 {
				t.Errorf("the server accepted %d connections and %d requests, want 2 and 3", n, r)
			}
		})
	}
}

// newTimeoutServer is a counting server that closes a connection when
// no request came on it within readTimeout.
func newTimeoutServer(t *testing.T, tls bool, readTimeout time.Duration) *countingServer {
	return startCountingServer(t, tls, false, readTimeout, func(w nethttp.ResponseWriter, r *nethttp.Request) { io.WriteString(w, "ok") })
}

// TestCompressedBodies checks that checks and captures read a gzip or
// deflate body decoded, while the bytes received stay the wire's.
func TestCompressedBodies(t *testing.T) {
	plain := strings.Repeat("hload compresses well. ", 1000)
	var gz, zl bytes.Buffer
	w := gzip.NewWriter(&gz)
	io.WriteString(w, plain)
	w.Close()
	z := zlib.NewWriter(&zl)
	io.WriteString(z, plain)
	z.Close()
	srv := newCountingServer(t, false, false, func(w nethttp.ResponseWriter, r *nethttp.Request) {
		switch r.URL.Path {
		case "/gzip":
			w.Header().Set("Content-Encoding", "gzip")
			w.Write(gz.Bytes())
		case "/deflate":
			w.Header().Set("Content-Encoding", "deflate")
			w.Write(zl.Bytes())
		case "/corrupt":
			w.Header().Set("Content-Encoding", "gzip")
			b := bytes.Clone(gz.Bytes())
			b[len(b)/2] ^= 0xff
			w.Write(b)
		}
	})
	c := open(t, New(), srv.URL, nil)
	for _, p := range []string{"/gzip", "/deflate", "/gzip"} {
		res := do(t, c, 1, req(map[string]cty.Value{"path": cty.StringVal(p), "headers": strMap("Accept-Encoding", "gzip, deflate")}), true)
		if res.request.Error != "" || res.body != plain {
			t.Errorf("%s: %+v, body %d bytes, want %d decoded", p, res.request, len(res.body), len(plain))
		}
		if got := res.request.BytesReceived; got > int64(len(plain))/4 || got < int64(zl.Len()) {
			t.Errorf("%s: %d bytes received, want the compressed body's size (~%d), not the decoded %d", p, got, gz.Len(), len(plain))
		}
	}
	res := do(t, c, 1, path("/corrupt"), true)
	if res.request.Error != protocols.ErrProtocol || !strings.Contains(res.request.Message, "gzip") {
		t.Errorf("corrupt gzip: %+v", res.request)
	}
	if res := do(t, c, 1, path("/gzip"), false); res.request.Error != "" {
		t.Errorf("a body nothing reads is not decoded: %+v", res.request)
	}
	if n := srv.requests.Load(); n != 5 {
		t.Errorf("the server handled %d requests for 5 calls", n)
	}
}

// TestCookieJarIsLazy checks that a VU sends no Cookie header and holds no
// jar until a server sets a cookie.
func TestCookieJarIsLazy(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	srv := newCountingServer(t, false, false, func(w nethttp.ResponseWriter, r *nethttp.Request) {
		mu.Lock()
		seen = append(seen, fmt.Sprintf("%s cookie=%q", r.URL.Path, r.Header["Cookie"]))
		mu.Unlock()
		if r.URL.Path == "/app/login" {
			nethttp.SetCookie(w, &nethttp.Cookie{Name: "s", Value: "1", Path: "/app"})
			nethttp.SetCookie(w, &nethttp.Cookie{Name: "t", Value: "2", Path: "/app/cart"})
		}
	})
	c := open(t, New(), srv.URL, nil)
	do(t, c, 1, path("/a"), false)
	if c.(*Client).vu(1).jar.jar != nil {
		t.Error("a jar before any Set-Cookie")
	}
	for _, p := range []string{"/app/login", "/app/b", "/app/cart/1", "/other"} {
		do(t, c, 1, path(p), false)
	}
	// The jar's order: the longer path first (RFC 6265 5.4).
	want := []string{`/a cookie=[]`, `/app/login cookie=[]`, `/app/b cookie=["s=1"]`, `/app/cart/1 cookie=["t=2; s=1"]`, `/other cookie=[]`}
	if strings.Join(seen, "\n") != strings.Join(want, "\n") {
		t.Errorf("the server saw\n%s\nwant\n%s", strings.Join(seen, "\n"), strings.Join(want, "\n"))
	}
}

// TestRedirectToAnotherHost checks that a redirect to another host is
// sent on a connection to that host, kept for the next calls, and that
// credentials do not follow a redirect to another domain.
func TestRedirectToAnotherHost(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	land := newCountingServer(t, false, false, func(w nethttp.ResponseWriter, r *nethttp.Request) {
		mu.Lock()
		seen = append(seen, fmt.Sprintf("%s %s auth=%q keep=%q", r.Host[:strings.IndexByte(r.Host, ':')], r.URL.Path, r.Header.Get("Authorization"), r.Header.Get("X-Keep")))
		mu.Unlock()
		io.WriteString(w, "landed")
	})
	port := land.URL[strings.LastIndexByte(land.URL, ':'):]
	start := newCountingServer(t, false, false, func(w nethttp.ResponseWriter, r *nethttp.Request) {
		host := "127.0.0.1" // same domain, another port
		if r.URL.Path == "/away" {
			host = "localhost" // another domain
		}
		nethttp.Redirect(w, r, "http://"+host+port+"/land", nethttp.StatusFound)
	})
	c := open(t, New(), start.URL, map[string]cty.Value{"headers": strMap("Authorization", "Bearer t", "X-Keep", "k")})
	for _, p := range []string{"/near", "/near", "/away", "/away"} {
		if res := do(t, c, 1, path(p), true); res.request.Error != "" || res.body != "landed" {
			t.Fatalf("%s: %+v", p, res.request)
		}
	}
	want := []string{
		`127.0.0.1 /land auth="Bearer t" keep="k"`, `127.0.0.1 /land auth="Bearer t" keep="k"`,
		`localhost /land auth="" keep="k"`, `localhost /land auth="" keep="k"`,
	}
	if strings.Join(seen, "\n") != strings.Join(want, "\n") {
		t.Errorf("the landing server saw\n%s\nwant\n%s", strings.Join(seen, "\n"), strings.Join(want, "\n"))
	}
	// One connection to the start, one per host name to the landing.
	if start.conns.Load() != 1 || land.conns.Load() != 2 {
		t.Errorf("connections: start %d, landing %d; want 1 and 2", start.conns.Load(), land.conns.Load())
	}
}

// TestTTFBIsTheFinalResponses checks that the time to first byte is the
// final response's, not an interim one's: a 103 that comes at once and a
// 200 that comes 50 ms later give a ttfb of 50 ms or more.
func TestTTFBIsTheFinalResponses(t *testing.T) {
	const delay = 50 * time.Millisecond
	url, n := misbehaving(t, func(conn net.Conn) {
		io.WriteString(conn, "HTTP/1.1 103 Early Hints\r\nLink: </a.css>\r\n\r\n")
		time.Sleep(delay)
		io.WriteString(conn, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
	})
	c := open(t, New(), url, nil)
	res := do(t, c, 1, path("/"), true)
	if res.request.Error != "" || res.body != "ok" || res.ttfb == nil || res.ttfb.Value < delay {
		t.Errorf("%+v ttfb %v, want ok and a ttfb of at least %v", res.request, res.ttfb, delay)
	}
	if n.Load() != 1 {
		t.Errorf("the server read %d requests for 1 call", n.Load())
	}
}

// TestCompressedBodiesOverHTTP2 checks that checks and captures read a
// gzip body decoded on the net/http path too.
func TestCompressedBodiesOverHTTP2(t *testing.T) {
	plain := strings.Repeat("hload compresses well. ", 1000)
	var gz bytes.Buffer
	w := gzip.NewWriter(&gz)
	io.WriteString(w, plain)
	w.Close()
	srv := newCountingServer(t, true, true, func(w nethttp.ResponseWriter, r *nethttp.Request) {
		w.Header().Set("Content-Encoding", "gzip")
		w.Write(gz.Bytes())
	})
	c := open(t, New(), srv.URL, map[string]cty.Value{"insecure_skip_verify": cty.True})
	for i := range 2 {
		res := do(t, c, 1, req(map[string]cty.Value{"headers": strMap("Accept-Encoding", "gzip")}), true)
		if res.request.Error != "" || res.body != plain || !c.(*Client).vu(1).h2 {
			t.Errorf("call %d: %+v, body %d bytes, h2 %v; want %d decoded over HTTP/2", i, res.request, len(res.body), c.(*Client).vu(1).h2, len(plain))
		}
	}
}

// TestNoHTTP2SwitchAfterARedirect checks that a call whose redirect opens a
// new connection to the target does not switch to HTTP/2 there: net/http
// would then send the call's first request again. The server offers only
// HTTP/1.1 on its first connection, and h2 after.
func TestNoHTTP2SwitchAfterARedirect(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]int{}
	srv := httptest.NewUnstartedServer(nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
		mu.Lock()
		seen[r.URL.Path+" "+r.Proto]++
		mu.Unlock()
		if r.URL.Path == "/start" {
			w.Header().Set("Connection", "close")
			nethttp.Redirect(w, r, "/end", nethttp.StatusFound)
			return
		}
		io.WriteString(w, "end")
	}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)
	base := srv.TLS
	var hellos atomic.Int32
	base.GetConfigForClient = func(*tls.ClientHelloInfo) (*tls.Config, error) {
		cfg := base.Clone()
		cfg.GetConfigForClient = nil
		if hellos.Add(1) == 1 {
			cfg.NextProtos = []string{"http/1.1"}
		}
		return cfg, nil
	}
	c := open(t, New(), srv.URL, map[string]cty.Value{"insecure_skip_verify": cty.True})
	if res := do(t, c, 1, path("/start"), true); res.request.Error != "" || res.body != "end" {
		t.Fatalf("%+v body %q", res.request, res.body)
	}
	mu.Lock()
	defer mu.Unlock()
	if seen["/start HTTP/1.1"] != 1 || len(seen) != 2 || seen["/end HTTP/1.1"] != 1 {
		t.Errorf("the server saw %v for one call; want /start once and /end once, both HTTP/1.1", seen)
	}
}
