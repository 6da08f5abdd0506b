package http

import (
	"context"
	"net"
	nethttp "net/http"
	"strconv"
	"testing"
	"time"

	"github.com/zclconf/go-cty/cty"

	"github.com/hload/hload/protocols"
)

// TestKeptDeadlineIsResumed checks a connection's deadline kept from an
// earlier call (callDeadline) against a countingConn on a TCP pair, where
// the times are the test's own: the second call's read, still waiting at
// the first call's deadline, goes on until its own.
func TestKeptDeadlineIsResumed(t *testing.T) {
	const (
		first  = 300 * time.Millisecond // the first call's deadline, from now
		second = 700 * time.Millisecond // the second's
		answer = 500 * time.Millisecond // when the peer writes
	)
	client, server := tcpPair(t)
	c := &countingConn{Conn: client, wire: &wire{}}
	now := time.Now()
	c.arm(now.Add(first), time.Second)
	c.arm(now.Add(second), time.Second)
	if !c.dl.armed.Equal(now.Add(first)) {
		t.Fatalf("the socket's deadline is %v from now, want the first call's kept", c.dl.armed.Sub(now))
	}
	go func() {
		time.Sleep(answer)
		server.Write([]byte("ok"))
	}()
	buf := make([]byte, 8)
	n, err := c.Read(buf)
	if err != nil || string(buf[:n]) != "ok" {
		t.Fatalf("Read = %q, %v after %v; want ok: the read stopped at the first call's deadline", buf[:n], err, time.Since(now))
	}
	if !c.dl.armed.Equal(now.Add(second)) {
		t.Errorf("the socket's deadline is %v from now, want the second call's", c.dl.armed.Sub(now))
	}

	// The call's own deadline still ends it.
	n, err = c.Read(buf)
	if ne, ok := err.(net.Error); n != 0 || !ok || !ne.Timeout() {
		t.Errorf("Read past the call's deadline = %d, %v; want a timeout", n, err)
	}
	if late := time.Since(now); late < second {
		t.Errorf("the read ended %v after the start, before the call's deadline of %v", late, second)
	}
}

func tcpPair(t *testing.T) (client, server net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	client, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server = <-accepted
	if server == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { client.Close(); server.Close() })
	return client, server
}

// TestEngineDeadlines checks the engine's calls against the deadline a
// connection keeps from the call before, over plain TCP (send's system
// calls) and TLS, for a response whose head or body comes late: a call
// that answers within its timeout succeeds though it outlives the earlier
// call's deadline; a shorter timeout ends a call at its own time, not at
// the earlier call's; and the end of the run ends a call at once.
func TestEngineDeadlines(t *testing.T) {
	const timeout = 2 * time.Second
	handler := func(w nethttp.ResponseWriter, r *nethttp.Request) {
		ms, _ := strconv.Atoi(r.URL.Query().Get("ms"))
		if r.URL.Query().Get("part") == "body" {
			w.Header().Set("Content-Length", "2")
			w.WriteHeader(200)
			w.(nethttp.Flusher).Flush()
		}
		select {
		case <-time.After(time.Duration(ms) * time.Millisecond):
		case <-r.Context().Done():
			return
		}
		w.Write([]byte("ok"))
	}
	for _, tls := range []bool{false, true} {
		name := "http"
		if tls {
			name = "https"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := newCountingServer(t, tls, false, handler)
			set := map[string]cty.Value{"timeout": cty.StringVal(timeout.String())}
			if tls {
				set["insecure_skip_verify"] = cty.True
			}
			c := open(t, New(), srv.URL, set)
			at := func(q string) cty.Value { return path("/?" + q) }
			// warm makes the VU's connection and a call on it, whose
			// deadline the next call's connection keeps. Over TLS the
			// first call's is not kept: the server's session tickets are
			// read before the next call, on a deadline of their own.
			warm := func(t *testing.T, vu uint64) {
				for range 2 {
					if res := do(t, c, vu, at("ms=0"), true); res.request.Error != "" {
						t.Fatalf("warm-up call: %+v", res.request)
					}
				}
			}

			for _, part := range []string{"head", "body"} {
				t.Run("late "+part, func(t *testing.T) {
					// The second call starts 600 ms after the first, so
					// its connection keeps the first's deadline, which
					// comes 1.4 s into it; the answer comes at 1.8 s.
					vu := uint64(1)
					if part == "body" {
						vu = 2
					}
					warm(t, vu)
					time.Sleep(600 * time.Millisecond)
					res := do(t, c, vu, at("ms=1800&part="+part), true)
					if res.request.Error != "" || res.body != "ok" {
						t.Errorf("second call: %+v body %q; want ok within its timeout of %v", res.request, res.body, timeout)
					}
				})
			}

			t.Run("shorter timeout", func(t *testing.T) {
				warm(t, 3)
				short := 300 * time.Millisecond
				r := req(map[string]cty.Value{"path": cty.StringVal("/?ms=5000"), "timeout": cty.StringVal(short.String())})
				res := do(t, c, 3, r, true)
				// The warm-up's deadline comes almost 2 s later.
				if res.request.Error != protocols.ErrTimeout || res.request.Value < short || res.request.Value >= timeout/2 {
					t.Errorf("%+v; want a timeout after %v, well before the warm-up's deadline", res.request, short)
				}
			})

			t.Run("run ends", func(t *testing.T) {
				warm(t, 4)
				ctx, cancel := context.WithCancel(context.Background())
				time.AfterFunc(200*time.Millisecond, cancel)
				res := doCtx(ctx, c, 4, at("ms=5000"), true)
				if res.request.Error != protocols.ErrInterrupted || res.request.Value >= timeout {
					t.Errorf("%+v; want interrupted, before the timeout of %v", res.request, timeout)
				}
			})
		})
	}
}
