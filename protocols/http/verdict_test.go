package http

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	nethttp "net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zclconf/go-cty/cty"

	"github.com/hload/hload/plugins/protocoltest"
	"github.com/hload/hload/protocols"
)

func statuses(codes ...int64) cty.Value {
	vs := make([]cty.Value, len(codes))
	for i, c := range codes {
		vs[i] = cty.NumberIntVal(c)
	}
	return cty.ListVal(vs)
}

func TestFailedResponses(t *testing.T) {
	protocoltest.Run(t, New(), func(t *testing.T, _ protocoltest.Path, p protocols.Protocol) {
		srv := httptest.NewServer(nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
			var code int
			switch r.URL.Path {
			case "/399", "/400", "/599", "/600":
				code, _ = strconv.Atoi(r.URL.Path[1:])
			case "/404":
				code = nethttp.StatusNotFound
			case "/503":
				code = nethttp.StatusServiceUnavailable
			case "/302":
				code = nethttp.StatusFound // no Location: returned as it is
			default:
				code = nethttp.StatusOK
			}
			w.WriteHeader(code)
			io.WriteString(w, "status body")
		}))
		defer srv.Close()
		plain := open(t, p, srv.URL, nil)
		expects404 := open(t, p, srv.URL, map[string]cty.Value{"expected_status": statuses(200, 404)})
		path := func(p string) map[string]cty.Value { return map[string]cty.Value{"path": cty.StringVal(p)} }
		with := func(set map[string]cty.Value, codes ...int64) map[string]cty.Value {
			set["expected_status"] = statuses(codes...)
			return set
		}

		cases := []struct {
			name   string
			c      protocols.Client
			set    map[string]cty.Value
			status int
			kind   protocols.ErrorKind
			msg    string
		}{
			{"200 succeeds", plain, path("/"), 200, "", ""},
			{"302 succeeds", plain, path("/302"), 302, "", ""},
			// The edges of the failed range: 400 is the first failure.
			{"399 succeeds", plain, path("/399"), 399, "", ""},
			{"400 fails", plain, path("/400"), 400, "http_4xx", "400 Bad Request"},
			{"599 fails", plain, path("/599"), 599, "http_5xx", "599"},
			{"600 fails", plain, path("/600"), 600, "http_6xx", "600"},
			{"404 fails", plain, path("/404"), 404, "http_4xx", "404 Not Found"},
			{"503 fails", plain, path("/503"), 503, "http_5xx", "503 Service Unavailable"},
			{"the target expects 404", expects404, path("/404"), 404, "", ""},
			{"the target does not expect 503", expects404, path("/503"), 503, "http_5xx", "503 Service Unavailable, which expected_status does not list"},
			{"the request expects 503", plain, with(path("/503"), 503), 503, "", ""},
			{"the request overrides the target", expects404, with(path("/404"), 503), 404, "http_4xx", "404 Not Found, which expected_status"},
			{"an unexpected 200 fails", plain, with(path("/"), 404), 200, "http_2xx", "200 OK, which"},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				res := do(t, tc.c, 1, req(tc.set), true)
				s := res.request
				if res.count != 1 || s.Status != tc.status || s.Error != tc.kind || !strings.HasPrefix(s.Message, tc.msg) {
					t.Fatalf("sample = %+v, want status %d, kind %q, message %q", s, tc.status, tc.kind, tc.msg)
				}
				if tc.kind == "" && s.Message != "" {
					t.Errorf("message %q on a success", s.Message)
				}
				if res.body != "status body" {
					t.Errorf("body %q: a failed response keeps its body for checks", res.body)
				}
			})
		}
	})
}

func TestValidateTarget(t *testing.T) {
	protocoltest.Run(t, New(), func(t *testing.T, _ protocoltest.Path, p protocols.Protocol) {
		v, ok := p.(protocols.TargetValidator)
		if !ok {
			t.Fatalf("%T is not a protocols.TargetValidator", p)
		}
		good := map[string]cty.Value{"base_url": cty.StringVal("http://127.0.0.1:8080")}
		cases := []struct {
			name string
			set  map[string]cty.Value
			attr string
			want string
		}{
			{"good", good, "", ""},
			{"timeout as seconds", map[string]cty.Value{"base_url": cty.StringVal("https://x"), "timeout": cty.StringVal("2")}, "", ""},
			{"timeout as a fraction", map[string]cty.Value{"base_url": cty.StringVal("https://x"), "timeout": cty.StringVal("0.5")}, "", ""},
			{"timeout fast", map[string]cty.Value{"base_url": cty.StringVal("http://x"), "timeout": cty.StringVal("fast")}, "timeout", `timeout "fast" is not a duration`},
			{"zero timeout", map[string]cty.Value{"base_url": cty.StringVal("http://x"), "timeout": cty.StringVal("0s")}, "timeout", "positive"},
			{"no scheme", map[string]cty.Value{"base_url": cty.StringVal("127.0.0.1:8080")}, "base_url", `base_url "127.0.0.1:8080" has no scheme; write it with http:// or https://`},
			{"host and port, no scheme", map[string]cty.Value{"base_url": cty.StringVal("localhost:8080")}, "base_url", "has no scheme"},
			{"host, no scheme", map[string]cty.Value{"base_url": cty.StringVal("example.com")}, "base_url", "has no scheme"},
			{"other scheme", map[string]cty.Value{"base_url": cty.StringVal("ftp://example.com")}, "base_url", "must be an http:// or https:// URL"},
			{"no host", map[string]cty.Value{"base_url": cty.StringVal("http://")}, "base_url", "has no host"},
			{"missing", map[string]cty.Value{}, "base_url", "base_url is required"},
			{"expected_status below 100", map[string]cty.Value{"base_url": cty.StringVal("http://x"), "expected_status": statuses(200, 99)}, "expected_status", "from 100 to 599, such as [200, 404]; it holds 99"},
			{"expected_status above 599", map[string]cty.Value{"base_url": cty.StringVal("http://x"), "expected_status": statuses(600)}, "expected_status", "it holds 600"},
			{"expected_status empty", map[string]cty.Value{"base_url": cty.StringVal("http://x"), "expected_status": cty.ListValEmpty(cty.Number)}, "expected_status", "is empty"},
			{"max_redirects", map[string]cty.Value{"base_url": cty.StringVal("http://x"), "max_redirects": cty.NumberFloatVal(1.5)}, "max_redirects", "whole number"},
			{"connections_per_vu", map[string]cty.Value{"base_url": cty.StringVal("http://x"), "connections_per_vu": cty.NumberIntVal(0)}, "connections_per_vu", "from 1 to 10000"},
			{"header name", map[string]cty.Value{"base_url": cty.StringVal("http://x"), "headers": strMap("X Bad", "v")}, "headers", `name "X Bad" is not a header name`},
			{"header value", map[string]cty.Value{"base_url": cty.StringVal("http://x"), "headers": strMap("X-Ok", "a\r\nInjected: 1")}, "headers", "control character"},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				target := object(p.Describe().TargetSpec, tc.set)
				attr, err := v.ValidateTarget(target)
				if tc.want == "" {
					if err != nil || attr != "" {
						t.Fatalf("ValidateTarget = %q, %v; want it accepted", attr, err)
					}
					if _, err := p.Open(context.Background(), target); err != nil {
						t.Fatalf("Open refused what ValidateTarget accepted: %v", err)
					}
					return
				}
				if err == nil || attr != tc.attr || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("ValidateTarget = %q, %v; want attribute %q and an error containing %q", attr, err, tc.attr, tc.want)
				}
				// Open goes through the same decoder and says the same.
				if _, oerr := p.Open(context.Background(), target); oerr == nil || !strings.Contains(oerr.Error(), tc.want) {
					t.Errorf("Open error = %v, want one containing %q", oerr, tc.want)
				}
			})
		}
	})
}

func TestValidateRequest(t *testing.T) {
	protocoltest.Run(t, New(), func(t *testing.T, _ protocoltest.Path, p protocols.Protocol) {
		v, ok := p.(protocols.RequestValidator)
		if !ok {
			t.Fatalf("%T is not a protocols.RequestValidator", p)
		}
		srv, last := recorder(t)
		c := open(t, p, srv.URL, nil)
		cases := []struct {
			name string
			set  map[string]cty.Value
			attr string
			want string
		}{
			{"empty", nil, "", ""},
			{"timeout as seconds", map[string]cty.Value{"timeout": cty.StringVal("2")}, "", ""},
			{"lower-case method", map[string]cty.Value{"method": cty.StringVal("delete")}, "", ""},
			{"extension method", map[string]cty.Value{"method": cty.StringVal("PURGE")}, "", ""},
			{"registered method one slip from a standard one", map[string]cty.Value{"method": cty.StringVal("LOCK")}, "", ""},
			{"expected_status", map[string]cty.Value{"expected_status": statuses(200, 404)}, "", ""},
			{"timeout fast", map[string]cty.Value{"timeout": cty.StringVal("fast")}, "timeout", `timeout "fast" is not a duration`},
			{"negative timeout", map[string]cty.Value{"timeout": cty.StringVal("-1s")}, "timeout", "positive"},
			{"method GTE", map[string]cty.Value{"method": cty.StringVal("GTE")}, "method", `method "GTE" is not an HTTP method; did you mean "GET"?`},
			{"method POTS", map[string]cty.Value{"method": cty.StringVal("POTS")}, "method", `did you mean "POST"?`},
			{"method PUTT", map[string]cty.Value{"method": cty.StringVal("PUTT")}, "method", `did you mean "PUT"?`},
			{"method DELTE", map[string]cty.Value{"method": cty.StringVal("DELTE")}, "method", `did you mean "DELETE"?`},
			{"method with a space", map[string]cty.Value{"method": cty.StringVal("GET /")}, "method", "is not an HTTP method"},
			{"body and json", map[string]cty.Value{"body": cty.StringVal("a"), "json": cty.StringVal("b")}, "json", "json cannot be set with body"},
			{"body and form", map[string]cty.Value{"body": cty.StringVal("a"), "form": strMap("b", "c")}, "form", "form cannot be set with body"},
			{"json and form", map[string]cty.Value{"json": cty.StringVal("a"), "form": strMap("b", "c")}, "form", "form cannot be set with json"},
			{"expected_status below 100", map[string]cty.Value{"expected_status": statuses(99)}, "expected_status", "from 100 to 599"},
			{"expected_status above 599", map[string]cty.Value{"expected_status": statuses(200, 600)}, "expected_status", "it holds 600"},
			{"expected_status fraction", map[string]cty.Value{"expected_status": cty.ListVal([]cty.Value{cty.NumberFloatVal(200.5)})}, "expected_status", "it holds 200.5"},
			{"header name", map[string]cty.Value{"headers": strMap("Bad:Name", "v")}, "headers", "is not a header name"},
			{"header value", map[string]cty.Value{"headers": strMap("X-A", "a\nb")}, "headers", "control character"},
			{"path", map[string]cty.Value{"path": cty.StringVal("/%zz")}, "path", `path "/%zz"`},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				r := req(tc.set)
				attr, err := v.ValidateRequest(r)
				if tc.want == "" {
					if err != nil || attr != "" {
						t.Fatalf("ValidateRequest = %q, %v; want it accepted", attr, err)
					}
					return
				}
				if err == nil || attr != tc.attr || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("ValidateRequest = %q, %v; want attribute %q and an error containing %q", attr, err, tc.attr, tc.want)
				}
				// A value evaluated per call gets the same check per
				// call: a protocol error that says why, and nothing sent.
				before := last()
				res := do(t, c, 1, r, false)
				s := res.request
				if res.count != 1 || s.Error != protocols.ErrProtocol || !strings.Contains(s.Message, tc.want) {
					t.Errorf("Do sample = %+v, want a protocol error whose message contains %q", s, tc.want)
				}
				if s.BytesSent != 0 || last().method != before.method || last().path != before.path {
					t.Error("the request was sent")
				}
			})
		}
	})
}

// replayServer serves HTTP/1.1 by hand on 127.0.0.1. On each connection it
// answers the first request, then reads the second and ends the
// connection without answering: with a reset (SO_LINGER 0), or with an
// orderly close when graceful. With partial, it resets after the second
// request's head and the first 64 KiB of its body, so that a large body
// is cut off while it is being written. It counts every request head it
// read.
type replayServer struct {
	url      string
	graceful bool
	partial  bool
	mu       sync.Mutex
	requests map[string]int // "METHOD path" -> requests read
	ended    int            // connections ended without an answer
}

func newReplayServer(t *testing.T, graceful, partial, useTLS bool) *replayServer {
	s := &replayServer{graceful: graceful, partial: partial, requests: map[string]int{}}
	if !useTLS {
		s.url = rawServer(t, s.serve)
		return s
	}
	// httptest's certificate, on a listener of our own.
	cert := httptest.NewUnstartedServer(nil)
	cert.StartTLS()
	cfg := cert.TLS.Clone()
	cert.Close()
	cfg.NextProtos = []string{"http/1.1"}
	url := rawServer(t, func(conn net.Conn) {
		tc := tls.Server(conn, cfg)
		if err := tc.Handshake(); err != nil {
			conn.Close()
			return
		}
		s.serve(tc)
	})
	s.url = strings.Replace(url, "http://", "https://", 1)
	return s
}

func (s *replayServer) serve(conn net.Conn) {
	defer conn.Close()
	tcp, _ := conn.(*net.TCPConn)
	if tc, ok := conn.(*tls.Conn); ok {
		tcp, _ = tc.NetConn().(*net.TCPConn)
	}
	br := bufio.NewReader(conn)
	for n := 1; ; n++ {
		r, err := nethttp.ReadRequest(br)
		if err != nil {
			return
		}
		if n == 2 && s.partial {
			io.CopyN(io.Discard, r.Body, 64<<10)
		} else {
			io.Copy(io.Discard, r.Body)
		}
		s.mu.Lock()
		s.requests[r.Method+" "+r.URL.Path]++
		if n == 2 {
			s.ended++
		}
		s.mu.Unlock()
		if n == 2 {
			if !s.graceful {
				tcp.SetLinger(0)
				tcp.Close() // a reset, without TLS's close_notify
			}
			return
		}
		header := "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n"
		if r.URL.Path == "/cookie" {
			header += "Set-Cookie: session=s1; Path=/\r\n"
		}
		if r.Method == nethttp.MethodHead {
			io.WriteString(conn, header+"\r\n")
			continue
		}
		io.WriteString(conn, header+"\r\nok")
	}
}

func (s *replayServer) seen() (map[string]int, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]int, len(s.requests))
	for k, v := range s.requests {
		out[k] = v
	}
	return out, s.ended
}

// TestNoReplay checks that a request whose connection fails after it was
// written is not sent again by the transport: net/http would replay a GET,
// or a POST with an Idempotency-Key, on a fresh connection, and the server
// would see two requests for one call.
func TestNoReplay(t *testing.T) {
	bigBody := strings.Repeat("b", 32<<20)
	protocoltest.Run(t, New(), func(t *testing.T, _ protocoltest.Path, p protocols.Protocol) {
		cases := []struct {
			name     string
			graceful bool
			partial  bool // the server resets while the body is being written
			tls      bool
			first    string // the path of the first call, on a fresh connection
			set      map[string]cty.Value
			key      string
			kind     protocols.ErrorKind
		}{
			{"GET reset", false, false, false, "/", map[string]cty.Value{"path": cty.StringVal("/x")}, "GET /x", protocols.ErrReset},
			{"HEAD reset", false, false, false, "/", map[string]cty.Value{"method": cty.StringVal("HEAD"), "path": cty.StringVal("/x")}, "HEAD /x", protocols.ErrReset},
			{"GET reset with cookies", false, false, false, "/cookie", map[string]cty.Value{"path": cty.StringVal("/x")}, "GET /x", protocols.ErrReset},
			{"POST with an Idempotency-Key reset", false, false, false, "/", map[string]cty.Value{
				"path": cty.StringVal("/x"), "body": cty.StringVal("data"), "headers": strMap("Idempotency-Key", "k1"),
			}, "POST /x", protocols.ErrReset},
			{"POST reset", false, false, false, "/", map[string]cty.Value{"path": cty.StringVal("/x"), "body": cty.StringVal("data")}, "POST /x", protocols.ErrReset},
			{"GET reset over TLS", false, false, true, "/", map[string]cty.Value{"path": cty.StringVal("/x")}, "GET /x", protocols.ErrReset},
			{"GET closed after it was read, over TLS", true, false, true, "/", map[string]cty.Value{"path": cty.StringVal("/x")}, "GET /x", protocols.ErrIdleClosed},
			{"GET closed after it was read", true, false, false, "/", map[string]cty.Value{"path": cty.StringVal("/x")}, "GET /x", protocols.ErrIdleClosed},
			// A body far larger than the socket buffers: the reset comes
			// while it is being written, after part of it reached the
			// server, which a resend would show as a second request.
			{"POST reset while its body is written", false, true, false, "/", map[string]cty.Value{"path": cty.StringVal("/x"), "body": cty.StringVal(bigBody)}, "POST /x", protocols.ErrReset},
			{"POST reset while its body is written, over TLS", false, true, true, "/", map[string]cty.Value{"path": cty.StringVal("/x"), "body": cty.StringVal(bigBody)}, "POST /x", protocols.ErrReset},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				srv := newReplayServer(t, tc.graceful, tc.partial, tc.tls)
				c := open(t, p, srv.url, map[string]cty.Value{"insecure_skip_verify": cty.True})
				const calls = 5
				for i := range calls {
					vu := uint64(i + 1) // a VU of its own: its first call opens a connection
					if res := do(t, c, vu, req(map[string]cty.Value{"path": cty.StringVal(tc.first)}), false); res.request.Error != "" {
						t.Fatalf("first call: %+v", res.request)
					}
					res := do(t, c, vu, req(tc.set), false)
					if res.count != 1 || res.request.Error != tc.kind || res.request.Message == "" {
						t.Errorf("second call: sample %+v, want kind %q with a message", res.request, tc.kind)
					}
				}
				seen, ended := srv.seen()
				if seen[tc.key] != calls || ended != calls {
					t.Errorf("the server read %d %q requests and ended %d connections, for %d calls: %v", seen[tc.key], tc.key, ended, calls, seen)
				}
			})
		}
	})
}

// TestWriteAfterCloseIsRefused checks the one retry that is left to net/http:
// a connection whose reader saw the server close it refuses the next write
// with nothing written, which is what lets the transport send the request
// on another connection, safely.
func TestWriteAfterCloseIsRefused(t *testing.T) {
	client, server := net.Pipe()
	w := &wire{}
	c := &countingConn{Conn: client, wire: w, guarded: true, guard: guard{wire: w}}
	server.Close()
	if _, err := c.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Fatalf("Read = %v, want EOF", err)
	}
	done := make(chan struct{})
	var n int
	var err error
	go func() {
		defer close(done)
		n, err = c.Write([]byte("GET / HTTP/1.1\r\n\r\n"))
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Write blocked on a connection the server closed")
	}
	if n != 0 || !errors.Is(err, errClosedBeforeWrite) || protocols.NetErrorKind(err) != protocols.ErrReset {
		t.Errorf("Write = %d, %v; want 0 and the refusal", n, err)
	}
	if got := w.sent.Load(); got != 0 {
		t.Errorf("%d bytes counted as sent", got)
	}
}

// TestIdleCloseIsSeenBeforeWriting checks that a call peeks before its
// first write on a connection net/http kept: a connection the server
// closed, whose reader has not run since, refuses the write with nothing
// written, so the transport sends the request on another connection,
// safely.
func TestIdleCloseIsSeenBeforeWriting(t *testing.T) {
	if runtime.GOOS != "linux" && runtime.GOOS != "darwin" {
		t.Skip("hload peeks on Linux and macOS only")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	server, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	w := &wire{}
	c := &countingConn{Conn: client, wire: w, guarded: true, guard: guard{wire: w, tcp: client.(*net.TCPConn)}}

	call := newCallState()
	w.inflight.Store(call)
	if _, err := c.Write([]byte("x")); err != nil {
		t.Fatalf("Write on an open connection: %v", err)
	}
	c.guard.armed.Store(nil) // as if the response came
	w.inflight.Store(newCallState())

	if _, err := io.ReadFull(server, make([]byte, 1)); err != nil {
		t.Fatal(err)
	}
	server.Close() // an orderly close, with nothing unread: a FIN
	deadline := time.Now().Add(5 * time.Second)
	for !peerClosed(client.(*net.TCPConn)) {
		if time.Now().After(deadline) {
			t.Fatal("no FIN seen in 5 s after the server closed on loopback: peerClosed does not see a close")
		}
		time.Sleep(time.Millisecond)
	}

	sent := w.sent.Load()
	n, err := c.Write([]byte("GET / HTTP/1.1\r\n\r\n"))
	if n != 0 || !errors.Is(err, errClosedBeforeWrite) {
		t.Errorf("Write on a closed connection = %d, %v; want 0 and the refusal", n, err)
	}
	if w.sent.Load() != sent || c.guard.armed.Load() != nil {
		t.Errorf("the refused write counted %d bytes, armed %v", w.sent.Load()-sent, c.guard.armed.Load())
	}
}

// TestNoReplayOnTheHTTP2Path holds the guard of the connections net/http
// makes for a VU whose target speaks HTTP/2: a redirect from it to a
// server of HTTP/1.1, plain or over TLS, goes over net/http's own
// HTTP/1.1 connection, and net/http would send a GET again on a new
// connection when the reused one fails before the response. The landing
// server answers the first request on each connection and resets on the
// second, after reading it; it must read one GET per call.
func TestNoReplayOnTheHTTP2Path(t *testing.T) {
	protocoltest.Run(t, New(), func(t *testing.T, _ protocoltest.Path, p protocols.Protocol) {
		for _, overTLS := range []bool{false, true} {
			t.Run(fmt.Sprintf("landing over TLS %v", overTLS), func(t *testing.T) {
				land := newReplayServer(t, false, false, overTLS)
				start := newCountingServer(t, true, true, func(w nethttp.ResponseWriter, r *nethttp.Request) {
					if r.ProtoMajor != 2 {
						t.Errorf("the start was reached over %s", r.Proto)
					}
					nethttp.Redirect(w, r, land.url+"/x", nethttp.StatusFound)
				})
				c := open(t, p, start.URL, map[string]cty.Value{"insecure_skip_verify": cty.True})
				const calls = 3
				for i := range calls {
					vu := uint64(i + 1)
					if res := do(t, c, vu, path("/"), false); res.request.Error != "" || res.request.Status != 200 {
						t.Fatalf("first call of VU %d: %+v", vu, res.request)
					}
					res := do(t, c, vu, path("/"), false)
					if res.count != 1 || res.request.Error != protocols.ErrReset {
						t.Errorf("second call of VU %d: %+v; want a reset", vu, res.request)
					}
				}
				seen, ended := land.seen()
				if seen["GET /x"] != 2*calls || ended != calls {
					t.Errorf("the landing server read %d GET /x and ended %d connections, for %d calls; want %d and %d", seen["GET /x"], ended, 2*calls, 2*calls, calls)
				}
			})
		}
	})
}
