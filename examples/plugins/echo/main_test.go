package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/zclconf/go-cty/cty"

	"github.com/hload/hload/plugins/sdk"
	"github.com/hload/hload/plugins/sdk/sdktest"
)

// Every test runs the protocol through the whole plugin wire: sdktest.NewHarness
// puts the plugin's server and hload's client on the two ends of an
// in-memory gRPC connection, so the schemas, calls and samples cross it as
// they do between two processes, without building a binary or running hload.
func harness(t *testing.T) sdk.Protocol {
	t.Helper()
	h, err := sdktest.NewHarness(echo{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

// server is a loopback TCP server whose connections handle serves. It
// counts the connections and the bytes it read.
type server struct {
	addr  string
	conns atomic.Int64
	bytes atomic.Int64
}

func startServer(t *testing.T, handle func(conn net.Conn, s *server)) *server {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &server{addr: ln.Addr().String()}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			s.conns.Add(1)
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer conn.Close()
				handle(conn, s)
			}()
		}
	}()
	return s
}

// The servers' behaviours. A client always closes its connection at the
// end of a call, which ends every one of them.
var (
	echoBack = func(conn net.Conn, s *server) {
		buf := make([]byte, 4096)
		for {
			n, err := conn.Read(buf)
			s.bytes.Add(int64(n)) // before the echo, so a call that got it is counted
			if err != nil {
				return
			}
			if _, err := conn.Write(buf[:n]); err != nil {
				return
			}
		}
	}
	closeAtOnce = func(net.Conn, *server) {}
	silent      = func(conn net.Conn, _ *server) { io.Copy(io.Discard, conn) }
	shout       = func(conn net.Conn, _ *server) {
		buf := make([]byte, 64)
		n, _ := conn.Read(buf)
		conn.Write(bytes.ToUpper(buf[:n]))
	}
)

func target(address, timeout string) cty.Value {
	t := cty.NullVal(cty.String) // as hload passes an attribute left out
	if timeout != "" {
		t = cty.StringVal(timeout)
	}
	return cty.ObjectVal(map[string]cty.Value{"address": cty.StringVal(address), "timeout": t})
}

func request(payload string) cty.Value {
	return cty.ObjectVal(map[string]cty.Value{"payload": cty.StringVal(payload)})
}

func open(t *testing.T, p sdk.Protocol, tgt cty.Value) sdk.Client {
	t.Helper()
	c, err := p.Open(context.Background(), tgt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// do runs one call and returns its one request sample. Body is copied,
// because it is valid only during emit.
func do(ctx context.Context, c sdk.Client, call sdk.Call) (sdk.Sample, error) {
	var out []sdk.Sample
	c.Do(ctx, call, func(s sdk.Sample) {
		s.Body = bytes.Clone(s.Body)
		out = append(out, s)
	})
	if len(out) != 1 || out[0].Metric != sdk.MetricRequest {
		return sdk.Sample{}, fmt.Errorf("samples %+v, want exactly one %q sample", out, sdk.MetricRequest)
	}
	return out[0], nil
}

func TestDescribe(t *testing.T) {
	info := harness(t).Describe()
	if info.Name != "echo" || info.Version != "0.1.0" {
		t.Errorf("name %q version %q", info.Name, info.Version)
	}
	for _, tc := range []struct {
		spec     hcldec.ObjectSpec
		name     string
		required bool
	}{
		{info.TargetSpec, "address", true},
		{info.TargetSpec, "timeout", false},
		{info.RequestSpec, "payload", false},
	} {
		a, ok := tc.spec[tc.name].(*hcldec.AttrSpec)
		if !ok || a.Type != cty.String || a.Required != tc.required {
			t.Errorf("%s crossed the wire as %#v, want a string, required: %v", tc.name, tc.spec[tc.name], tc.required)
		}
	}
}

// TestValidateAgreesWithOpen: every target Open refuses, ValidateTarget
// refuses first, at the attribute, with the same words; in-process and over
// the wire, and without connecting: nothing listens at these addresses.
func TestValidateAgreesWithOpen(t *testing.T) {
	for name, p := range map[string]sdk.Protocol{"direct": echo{}, "harness": harness(t)} {
		t.Run(name, func(t *testing.T) {
			v, ok := p.(sdk.TargetValidator)
			if !ok {
				t.Fatalf("%T is not an sdk.TargetValidator", p)
			}
			for _, tc := range []struct {
				target     cty.Value
				attr, want string
			}{
				{target("localhost", ""), "address", `address "localhost" must be host:port`},
				{target("127.0.0.1:7", "soon"), "timeout", `timeout "soon" is not a duration`},
				{target("127.0.0.1:7", "-1s"), "timeout", `timeout "-1s" must be a positive duration`},
				{target("127.0.0.1:7", "2"), "", ""}, // timeout = 2: seconds
				{target("127.0.0.1:7", "250ms"), "", ""},
			} {
				attr, verr := v.ValidateTarget(tc.target)
				c, err := p.Open(context.Background(), tc.target)
				if err == nil {
					c.Close()
				}
				switch {
				case tc.want == "":
					if verr != nil || err != nil {
						t.Errorf("%#v: validate %q %v, open %v; want both fine", tc.target, attr, verr, err)
					}
				case verr == nil || err == nil:
					t.Errorf("%#v: validate %v, open %v; want both to fail", tc.target, verr, err)
				case attr != tc.attr || !strings.HasPrefix(verr.Error(), tc.want) || !strings.HasSuffix(err.Error(), verr.Error()):
					t.Errorf("%#v: validate %q %q, open %q; want %q and %q from both", tc.target, attr, verr, err, tc.attr, tc.want)
				}
			}
		})
	}
}

// TestValidateRequestAgreesWithDo: a payload Do refuses, ValidateRequest
// refuses first, and Do's sample carries the same words as its message.
func TestValidateRequestAgreesWithDo(t *testing.T) {
	srv := startServer(t, echoBack)
	for name, p := range map[string]sdk.Protocol{"direct": echo{}, "harness": harness(t)} {
		t.Run(name, func(t *testing.T) {
			c := open(t, p, target(srv.addr, "2s"))
			v := p.(sdk.RequestValidator)
			if attr, err := v.ValidateRequest(request("hello")); attr != "" || err != nil {
				t.Errorf("hello: %q %v", attr, err)
			}
			unknown := cty.ObjectVal(map[string]cty.Value{"payload": cty.UnknownVal(cty.String)})
			if attr, err := v.ValidateRequest(unknown); attr != "" || err != nil {
				t.Errorf("a payload known per iteration: %q %v", attr, err)
			}
			attr, err := v.ValidateRequest(request(""))
			if attr != "payload" || err == nil || !strings.Contains(err.Error(), "payload is empty") {
				t.Fatalf("empty payload: %q %v", attr, err)
			}
			s, derr := do(context.Background(), c, sdk.Call{VU: 1, Request: request("")})
			if derr != nil {
				t.Fatal(derr)
			}
			if s.Error != sdk.ErrProtocol || s.Message != err.Error() {
				t.Errorf("Do: %q %q, want protocol with %q", s.Error, s.Message, err)
			}
		})
	}
}

// TestCalls runs 4 VUs of 25 calls each at once: every call is echoed and
// measured, and the server saw every byte hload counted.
func TestCalls(t *testing.T) {
	srv := startServer(t, echoBack)
	c := open(t, harness(t), target(srv.addr, "2s"))
	const vus, calls = 4, 25
	var wg sync.WaitGroup
	var sent atomic.Int64
	for vu := uint64(1); vu <= vus; vu++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range uint64(calls) {
				payload := fmt.Sprintf("VU %d, call %d", vu, i)
				keep := i%2 == 0
				before := time.Now()
				s, err := do(context.Background(), c, sdk.Call{VU: vu, Iteration: i, Request: request(payload), KeepBody: keep})
				took := time.Since(before)
				switch {
				case err != nil:
					t.Error(err)
					return
				case s.Error != sdk.ErrNone:
					t.Errorf("%q: error %q", payload, s.Error)
				case s.Value <= 0 || s.Value > took:
					t.Errorf("%q: latency %v outside (0, %v]", payload, s.Value, took)
				case s.BytesSent != int64(len(payload)) || s.BytesReceived != int64(len(payload)):
					t.Errorf("%q: bytes sent %d received %d, want %d each", payload, s.BytesSent, s.BytesReceived, len(payload))
				case keep && string(s.Body) != payload, !keep && s.Body != nil:
					t.Errorf("%q: body %q with KeepBody %v", payload, s.Body, keep)
				}
				sent.Add(s.BytesSent)
			}
		}()
	}
	wg.Wait()
	if n := srv.conns.Load(); n != vus*calls {
		t.Errorf("the server saw %d connections, want one per call: %d", n, vus*calls)
	}
	if got, want := srv.bytes.Load(), sent.Load(); got != want {
		t.Errorf("the server echoed %d bytes, the samples count %d", got, want)
	}
}

// TestHeadersForCaptures is a capture's round trip across the wire: 4 VUs
// of 10 calls, each asking for the headers, the body, both or neither. A
// call that asks gets the two ends of its own connection, which the server
// saw from its side, and its own payload back; one that does not ask gets
// neither.
func TestHeadersForCaptures(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]bool{} // the clients' addresses, as the server saw them
	srv := startServer(t, func(conn net.Conn, s *server) {
		mu.Lock()
		seen[conn.RemoteAddr().String()] = true
		mu.Unlock()
		echoBack(conn, s)
	})
	c := open(t, harness(t), target(srv.addr, "2s"))
	const vus, calls = 4, 10
	var wg sync.WaitGroup
	var localsMu sync.Mutex
	locals := map[string]int{} // Local-Address -> calls that reported it
	for vu := uint64(1); vu <= vus; vu++ {
		wg.Go(func() {
			for i := range uint64(calls) {
				payload := fmt.Sprintf("VU %d, call %d", vu, i)
				keepBody, keepHeaders := i%2 == 0, i%4 < 2
				s, err := do(context.Background(), c, sdk.Call{VU: vu, Iteration: i, Request: request(payload), KeepBody: keepBody, KeepHeaders: keepHeaders})
				if err != nil || s.Error != sdk.ErrNone {
					t.Errorf("%q: %v %+v", payload, err, s)
					return
				}
				if keepBody != (string(s.Body) == payload) || !keepBody && s.Body != nil {
					t.Errorf("%q: body %q with KeepBody %v", payload, s.Body, keepBody)
				}
				if !keepHeaders {
					if s.Headers != nil {
						t.Errorf("%q: headers %v without KeepHeaders", payload, s.Headers)
					}
					continue
				}
				local, remote := s.Headers["Local-Address"], s.Headers["Remote-Address"]
				if len(s.Headers) != 2 || len(local) != 1 || len(remote) != 1 || remote[0] != srv.addr {
					t.Errorf("%q: headers %v, want Local-Address and Remote-Address %s", payload, s.Headers, srv.addr)
					continue
				}
				localsMu.Lock()
				locals[local[0]]++
				localsMu.Unlock()
			}
		})
	}
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	want := 0
	for i := range calls {
		if i%4 < 2 {
			want += vus
		}
	}
	if len(locals) != want {
		t.Errorf("%d distinct Local-Address values, want one per call that asked: %d", len(locals), want)
	}
	for addr, n := range locals {
		if !seen[addr] || n != 1 {
			t.Errorf("Local-Address %s: reported by %d calls; the server saw it: %v", addr, n, seen[addr])
		}
	}
}

// TestErrors gives each failure its kind.
func TestErrors(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := ln.Addr().String() // nobody listens there once it is closed
	ln.Close()

	p := harness(t)
	for _, tc := range []struct {
		name    string
		address string
		timeout string
		kind    sdk.ErrorKind
	}{
		{"nobody listens", refused, "", sdk.ErrConnectionRefused},
		{"server closes", startServer(t, closeAtOnce).addr, "", sdk.ErrReset},
		{"no reply", startServer(t, silent).addr, "200ms", sdk.ErrTimeout},
		{"another reply", startServer(t, shout).addr, "", sdk.ErrProtocol},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := open(t, p, target(tc.address, tc.timeout))
			before := time.Now()
			s, err := do(context.Background(), c, sdk.Call{VU: 1, Request: request("hello")})
			took := time.Since(before)
			if err != nil {
				t.Fatal(err)
			}
			if s.Error != tc.kind || s.Value <= 0 || took > 2*time.Second {
				t.Fatalf("error %q, latency %v, took %v: want %q, soon", s.Error, s.Value, took, tc.kind)
			}
			if tc.kind == sdk.ErrTimeout && s.Value < 200*time.Millisecond {
				t.Fatalf("timed out after %v, before the 200ms timeout", s.Value)
			}
		})
	}

	// The end of the run (its graceful stop ran out) cancels the call's
	// context; over the wire, that is a cancel message to the plugin.
	t.Run("interrupted", func(t *testing.T) {
		c := open(t, p, target(startServer(t, silent).addr, "10s"))
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(100*time.Millisecond, cancel)
		before := time.Now()
		s, err := do(ctx, c, sdk.Call{VU: 1, Request: request("hello")})
		took := time.Since(before)
		if err != nil {
			t.Fatal(err)
		}
		if s.Error != sdk.ErrInterrupted || took > 500*time.Millisecond {
			t.Fatalf("error %q after %v, want interrupted soon after the cancel at 100ms", s.Error, took)
		}
	})
}
