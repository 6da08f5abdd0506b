package http

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	nethttp "net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hload/hload/protocols"
	"github.com/zclconf/go-cty/cty"
)

// TestEngineTimeoutAfterManyFastCalls checks that the request timeout
// still bounds a call on a keep-alive connection that served many fast
// calls first: the engine writes and waits for the response in one poller
// wait (see send), and that wait must keep the connection's deadline.
func TestEngineTimeoutAfterManyFastCalls(t *testing.T) {
	const fast = 200
	var served atomic.Int64
	url := rawServer(t, func(conn net.Conn) {
		defer conn.Close()
		br := bufio.NewReader(conn)
		for {
			req, err := nethttp.ReadRequest(br)
			if err != nil {
				return
			}
			io.Copy(io.Discard, req.Body)
			if served.Add(1) > fast {
				// Never answers: read until the client gives up.
				io.Copy(io.Discard, br)
				return
			}
			io.WriteString(conn, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
		}
	})
	const timeout = 300 * time.Millisecond
	c := open(t, New(), url, map[string]cty.Value{"timeout": cty.StringVal(timeout.String())})
	for i := range fast {
		res := do(t, c, 1, path("/"), true)
		if res.request.Error != "" || res.body != "ok" {
			t.Fatalf("call %d: %+v body %q", i, res.request, res.body)
		}
	}
	began := time.Now()
	res := do(t, c, 1, path("/"), false)
	took := time.Since(began)
	if res.request.Error != protocols.ErrTimeout {
		t.Fatalf("a call the server never answers: %+v, want kind %q", res.request, protocols.ErrTimeout)
	}
	if took < timeout || took > 10*timeout {
		t.Errorf("the timed-out call took %v, want about %v", took, timeout)
	}
	if got := served.Load(); got != fast+1 {
		t.Errorf("the server read %d requests for %d calls", got, fast+1)
	}
}

// TestEngineSendsABodyLargerThanTheSendBuffer checks the case where send
// cannot write the request at once: a body larger than the socket's send
// buffer, whose rest the connection's own Write sends. The server counts
// the body's bytes and echoes the count.
func TestEngineSendsABodyLargerThanTheSendBuffer(t *testing.T) {
	const size = 8 << 20
	var requests atomic.Int64
	url := rawServer(t, func(conn net.Conn) {
		defer conn.Close()
		br := bufio.NewReader(conn)
		for {
			req, err := nethttp.ReadRequest(br)
			if err != nil {
				return
			}
			// Slow to start reading, so the client's send buffer fills.
			time.Sleep(20 * time.Millisecond)
			n, _ := io.Copy(io.Discard, req.Body)
			requests.Add(1)
			got := strconv.FormatInt(n, 10)
			io.WriteString(conn, "HTTP/1.1 200 OK\r\nContent-Length: "+strconv.Itoa(len(got))+"\r\n\r\n"+got)
		}
	})
	c := open(t, New(), url, nil)
	body := strings.Repeat("b", size)
	r := req(map[string]cty.Value{"method": cty.StringVal("POST"), "path": cty.StringVal("/"), "body": cty.StringVal(body)})
	for i := range 2 {
		res := do(t, c, 1, r, true)
		if res.request.Error != "" || res.body != strconv.Itoa(size) {
			t.Fatalf("call %d: %+v, the server read %q bytes of the body, want %d", i, res.request, res.body, size)
		}
		if res.request.BytesSent < size {
			t.Errorf("call %d: %d bytes sent, want more than the body's %d", i, res.request.BytesSent, size)
		}
	}
	if got := requests.Load(); got != 2 {
		t.Errorf("the server read %d requests for 2 calls", got)
	}
}

// TestEngineGetAllocatesNothing checks that a prepared GET on a kept
// connection allocates nothing per call in this process, send included:
// the server here reads into one buffer and writes one constant answer,
// allocating nothing itself once running.
func TestEngineGetAllocatesNothing(t *testing.T) {
	const answer = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
	var requests atomic.Int64
	url := rawServer(t, func(conn net.Conn) {
		defer conn.Close()
		buf := make([]byte, 4096)
		reply := []byte(answer)
		crlf2 := []byte("\r\n\r\n")
		have := 0
		for {
			n, err := conn.Read(buf[have:])
			if err != nil {
				return
			}
			have += n
			// Each request is a head without a body: answer each one.
			for {
				end := bytes.Index(buf[:have], crlf2)
				if end < 0 {
					break
				}
				requests.Add(1)
				conn.Write(reply)
				have = copy(buf, buf[end+4:have])
			}
		}
	})
	c := open(t, New(), url, nil)
	r := path("/")
	p, err := c.(protocols.Preparer).Prepare(r)
	if err != nil {
		t.Fatal(err)
	}
	call := protocols.Call{VU: 1, Request: r, Prepared: p}
	ctx := context.Background()
	failed := 0
	check := func(s protocols.Sample) {
		if s.Metric == protocols.MetricRequest && (s.Error != "" || s.Status != 200) {
			failed++
		}
	}
	c.Do(ctx, call, check) // the connection and its buffer
	const runs = 200
	allocs := testing.AllocsPerRun(runs, func() { c.Do(ctx, call, check) })
	if allocs != 0 {
		t.Errorf("a prepared GET allocated %v times per call, want 0", allocs)
	}
	if failed > 0 {
		t.Errorf("%d calls failed", failed)
	}
	if got := requests.Load(); got != runs+2 {
		t.Errorf("the server answered %d requests for %d calls", got, runs+2)
	}
}
