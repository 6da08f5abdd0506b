package lines_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"github.com/hload/hload/examples/plugins/lines/lines"
	"github.com/hload/hload/plugins/sdk"
	"github.com/hload/hload/plugins/sdk/sdktest"
)

// paths are the two ways a protocol is reached: in-process, and through the
// whole plugin wire with the SDK's harness. Every test runs on both, so the
// wire may change nothing a protocol does.
var paths = []struct {
	name string
	open func(t *testing.T) sdk.Protocol
}{
	{"direct", func(t *testing.T) sdk.Protocol { return lines.New() }},
	{"harness", harness},
}

func harness(t *testing.T) sdk.Protocol {
	t.Helper()
	h, err := sdktest.NewHarness(lines.New())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := h.Close(); err != nil {
			t.Errorf("closing the harness: %v", err)
		}
	})
	return h
}

func eachPath(t *testing.T, test func(t *testing.T, p sdk.Protocol)) {
	for _, path := range paths {
		t.Run(path.name, func(t *testing.T) { test(t, path.open(t)) })
	}
}

// server is a loopback line server. It answers each line with the line
// itself, except for a few commands that misbehave on purpose.
type server struct {
	addr string

	mu    sync.Mutex
	conns [][]string // the lines each accepted connection carried
}

// The commands the test server understands beside echo.
const (
	cmdClose  = "CLOSE"  // close the connection without a reply
	cmdSilent = "SILENT" // never reply
	cmdHalf   = "HALF"   // send half a line, then close
	cmdLong   = "LONG"   // reply with a line longer than lines.MaxLine
)

func startServer(t *testing.T) *server {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &server{addr: ln.Addr().String()}
	var wg sync.WaitGroup
	done := make(chan struct{})
	var open sync.Map
	t.Cleanup(func() {
		close(done)
		ln.Close()
		open.Range(func(c, _ any) bool { c.(net.Conn).Close(); return true })
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			open.Store(conn, nil)
			s.mu.Lock()
			s.conns = append(s.conns, nil)
			i := len(s.conns) - 1
			s.mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer conn.Close()
				r := bufio.NewScanner(conn)
				for r.Scan() {
					line := r.Text()
					s.mu.Lock()
					s.conns[i] = append(s.conns[i], line)
					s.mu.Unlock()
					switch {
					case line == cmdClose:
						return
					case line == cmdSilent:
						<-done
						return
					case line == cmdHalf:
						conn.Write([]byte("partial"))
						return
					case line == cmdLong:
						conn.Write([]byte(strings.Repeat("x", lines.MaxLine+10) + "\n"))
					default:
						conn.Write([]byte(line + "\n"))
					}
				}
			}()
		}
	}()
	return s
}

func (s *server) connections() [][]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([][]string, len(s.conns))
	for i, c := range s.conns {
		out[i] = append([]string(nil), c...)
	}
	return out
}

func target(address, timeout string) cty.Value {
	t := cty.NullVal(cty.String)
	if timeout != "" {
		t = cty.StringVal(timeout)
	}
	return cty.ObjectVal(map[string]cty.Value{"address": cty.StringVal(address), "timeout": t})
}

func request(line string, expect *string) cty.Value {
	e := cty.NullVal(cty.String)
	if expect != nil {
		e = cty.StringVal(*expect)
	}
	return cty.ObjectVal(map[string]cty.Value{"line": cty.StringVal(line), "expect": e})
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

// do runs one call and returns its samples, with Body copied out because
// it is valid only during emit.
func do(ctx context.Context, c sdk.Client, call sdk.Call) []sdk.Sample {
	var out []sdk.Sample
	c.Do(ctx, call, func(s sdk.Sample) {
		s.Body = append([]byte(nil), s.Body...)
		out = append(out, s)
	})
	return out
}

// split returns a call's request sample and whether it dialed.
func split(t *testing.T, samples []sdk.Sample) (req sdk.Sample, connect *sdk.Sample) {
	t.Helper()
	n := 0
	for i, s := range samples {
		switch s.Metric {
		case sdk.MetricRequest:
			req = s
			n++
		case sdk.MetricConnect:
			connect = &samples[i]
		default:
			t.Errorf("unexpected sample %q", s.Metric)
		}
	}
	if n != 1 {
		t.Fatalf("%d request samples, want exactly 1: %+v", n, samples)
	}
	return req, connect
}

func TestDescribe(t *testing.T) {
	eachPath(t, func(t *testing.T, p sdk.Protocol) {
		info := p.Describe()
		if info.Name != lines.Name || info.Version != lines.Version {
			t.Errorf("name %q version %q", info.Name, info.Version)
		}
		// The schemas must decode HCL the same way after crossing the wire:
		// types, required attributes and the values themselves.
		decode := func(spec hcldec.ObjectSpec, src string) (cty.Value, hcl.Diagnostics) {
			f, diags := hclsyntax.ParseConfig([]byte(src), "t.hcl", hcl.InitialPos)
			if diags.HasErrors() {
				t.Fatal(diags)
			}
			return hcldec.Decode(f.Body, spec, nil)
		}
		v, diags := decode(info.TargetSpec, `
address = "127.0.0.1:6379"
timeout = "250ms"
`)
		if diags.HasErrors() {
			t.Fatal(diags)
		}
		if got := v.GetAttr("address").AsString(); got != "127.0.0.1:6379" {
			t.Errorf("address %q", got)
		}
		if got := v.GetAttr("timeout").AsString(); got != "250ms" {
			t.Errorf("timeout %q", got)
		}
		if _, diags := decode(info.TargetSpec, `timeout = "1s"`); !strings.Contains(diags.Error(), `"address" is required`) {
			t.Errorf("a target without address decoded: %v", diags)
		}
		v, diags = decode(info.RequestSpec, `line = "GET k"`)
		if diags.HasErrors() {
			t.Fatal(diags)
		}
		if v.GetAttr("line").AsString() != "GET k" || !v.GetAttr("expect").IsNull() {
			t.Errorf("request decoded as %#v", v)
		}
		if _, diags := decode(info.RequestSpec, `expect = "OK"`); !strings.Contains(diags.Error(), `"line" is required`) {
			t.Errorf("a request without line decoded: %v", diags)
		}
		if _, diags := decode(info.RequestSpec, "line = \"GET k\"\nbogus = 1\n"); !strings.Contains(diags.Error(), "bogus") {
			t.Errorf("an unknown request attribute decoded: %v", diags)
		}
	})
}

// TestValidateAgreesWithOpen: every target Open refuses, ValidateTarget
// refuses first, with the same reason and the attribute at fault, and
// without dialling: the addresses point at nothing.
func TestValidateAgreesWithOpen(t *testing.T) {
	eachPath(t, func(t *testing.T, p sdk.Protocol) {
		v, ok := p.(sdk.TargetValidator)
		if !ok {
			t.Fatalf("%T is not an sdk.TargetValidator", p)
		}
		for _, tc := range []struct {
			target     cty.Value
			attr, want string
		}{
			{target("", ""), "address", "address is required"},
			{target("127.0.0.1", ""), "address", "must be host:port"},
			{target(":6379", ""), "address", "must be host:port"},
			{target("127.0.0.1:6379", "soon"), "timeout", `timeout "soon" is not a duration`},
			{target("127.0.0.1:6379", "-1s"), "timeout", "positive duration"},
			{target("127.0.0.1:6379", "0"), "timeout", "positive duration"},
			{target("127.0.0.1:6379", "2"), "", ""},     // a number of seconds
			{target("127.0.0.1:6379", "250ms"), "", ""}, // nothing listens: not checked
		} {
			attr, verr := v.ValidateTarget(tc.target)
			c, err := p.Open(context.Background(), tc.target)
			if err == nil {
				c.Close()
			}
			switch {
			case tc.want == "" && (verr != nil || err != nil):
				t.Errorf("%#v: validate %q %v, open %v; want both fine", tc.target, attr, verr, err)
			case tc.want == "":
			case verr == nil || err == nil:
				t.Errorf("%#v: validate %v, open %v; want both to fail", tc.target, verr, err)
			// Over the wire, Open's error names the plugin first.
			case attr != tc.attr || !strings.Contains(verr.Error(), tc.want) || !strings.HasSuffix(err.Error(), ": "+verr.Error()) && err.Error() != verr.Error():
				t.Errorf("%#v: validate %q %q, open %q; want %q, %q from both", tc.target, attr, verr, err, tc.attr, tc.want)
			}
		}
	})
}

// TestValidateRequestAgreesWithDo: a request Do fails as a protocol error,
// ValidateRequest refuses first, at the attribute, and Do's sample says
// why in its message.
func TestValidateRequestAgreesWithDo(t *testing.T) {
	eachPath(t, func(t *testing.T, p sdk.Protocol) {
		v, ok := p.(sdk.RequestValidator)
		if !ok {
			t.Fatalf("%T is not an sdk.RequestValidator", p)
		}
		srv := startServer(t)
		c := open(t, p, target(srv.addr, ""))
		for _, tc := range []struct {
			request    cty.Value
			attr, want string
		}{
			{request("GET a\nGET b", nil), "line", "must be one non-empty line"},
			{request("", nil), "line", "must be one non-empty line"},
			{request("PING", nil), "", ""},
			// Known only per iteration: left to Do.
			{cty.ObjectVal(map[string]cty.Value{"line": cty.UnknownVal(cty.String), "expect": cty.NullVal(cty.String)}), "", ""},
		} {
			attr, err := v.ValidateRequest(tc.request)
			if attr != tc.attr || (err == nil) != (tc.want == "") || err != nil && !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%#v: validate %q %v, want %q %q", tc.request, attr, err, tc.attr, tc.want)
			}
			if tc.want == "" {
				continue
			}
			req, _ := split(t, do(context.Background(), c, sdk.Call{VU: 1, Request: tc.request}))
			if req.Error != sdk.ErrProtocol || req.Message != err.Error() {
				t.Errorf("%#v: Do's sample %q %q, want protocol with validate's message %q", tc.request, req.Error, req.Message, err)
			}
		}
	})
}

// TestCalls runs 4 VUs of 25 calls each at once: every VU keeps one
// connection of its own, replies and statuses are right, and bytes and
// times add up.
func TestCalls(t *testing.T) {
	eachPath(t, func(t *testing.T, p sdk.Protocol) {
		srv := startServer(t)
		c := open(t, p, target(srv.addr, ""))
		const vus, calls = 4, 25
		var wg sync.WaitGroup
		errs := make(chan error, vus*calls)
		for vu := uint64(1); vu <= vus; vu++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := uint64(0); i < calls; i++ {
					line := fmt.Sprintf("SET vu%d:%d value", vu, i)
					want := line
					status := lines.StatusOK
					var expect *string
					switch i % 3 {
					case 1:
						expect = &want
					case 2:
						wrong := "NOT " + line
						expect, status = &wrong, lines.StatusMismatch
					}
					before := time.Now()
					samples := do(context.Background(), c, sdk.Call{VU: vu, Iteration: i, Planned: before, Request: request(line, expect), KeepBody: true})
					after := time.Now()
					if err := checkCall(samples, i == 0, before, after, line, status); err != nil {
						errs <- fmt.Errorf("VU %d call %d: %v", vu, i, err)
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}

		conns := srv.connections()
		if len(conns) != vus {
			t.Fatalf("the server saw %d connections, want one per VU: %d", len(conns), vus)
		}
		for i, lines := range conns {
			if len(lines) != calls {
				t.Errorf("connection %d carried %d lines, want %d", i, len(lines), calls)
			}
			vu := strings.SplitN(lines[0], ":", 2)[0]
			for _, l := range lines {
				if !strings.HasPrefix(l, vu+":") {
					t.Errorf("connection %d carried %q and %q: two VUs share it", i, lines[0], l)
					break
				}
			}
		}
	})
}

func checkCall(samples []sdk.Sample, first bool, before, after time.Time, line string, status int) error {
	var req sdk.Sample
	var connect *sdk.Sample
	n := 0
	for i, s := range samples {
		switch s.Metric {
		case sdk.MetricRequest:
			req, n = s, n+1
		case sdk.MetricConnect:
			connect = &samples[i]
		}
	}
	switch {
	case n != 1 || len(samples) > 2:
		return fmt.Errorf("samples %+v, want one request sample and at most one connect", samples)
	case req.Error != sdk.ErrNone:
		return fmt.Errorf("error %q", req.Error)
	case req.Status != status:
		return fmt.Errorf("status %d, want %d", req.Status, status)
	case string(req.Body) != line:
		return fmt.Errorf("reply %q, want %q", req.Body, line)
	case req.BytesSent != int64(len(line)+1) || req.BytesReceived != int64(len(line)+1):
		return fmt.Errorf("bytes sent %d received %d, want %d each", req.BytesSent, req.BytesReceived, len(line)+1)
	case first != (connect != nil):
		return fmt.Errorf("connect sample %v on a call that dialed: %v", connect != nil, first)
	case req.Value <= 0 || req.Value > after.Sub(before) || req.Value > time.Second:
		return fmt.Errorf("latency %v outside (0, %v]", req.Value, after.Sub(before))
	case req.Time.Before(before.Add(req.Value)) || req.Time.After(after):
		return fmt.Errorf("sample time %v outside the call [%v, %v]", req.Time, before, after)
	case connect != nil && (connect.Value <= 0 || connect.Value > req.Value || connect.Time.After(req.Time)):
		return fmt.Errorf("connect %v at %v, request %v at %v", connect.Value, connect.Time, req.Value, req.Time)
	}
	return nil
}

// TestErrors shows each error kind, and that a VU dials again after one.
func TestErrors(t *testing.T) {
	eachPath(t, func(t *testing.T, p sdk.Protocol) {
		srv := startServer(t)
		ok := func(t *testing.T, c sdk.Client, vu uint64, wantDial bool) {
			t.Helper()
			req, connect := split(t, do(context.Background(), c, sdk.Call{VU: vu, Request: request("PING", nil)}))
			if req.Error != sdk.ErrNone || req.Status != lines.StatusOK || (connect != nil) != wantDial {
				t.Fatalf("PING: error %q status %d dialed %v, want a success that dialed: %v", req.Error, req.Status, connect != nil, wantDial)
			}
		}
		for _, tc := range []struct {
			name    string
			timeout string
			line    string
			kind    sdk.ErrorKind
		}{
			{"server closes", "", cmdClose, sdk.ErrReset},
			{"server closes mid-line", "", cmdHalf, sdk.ErrReset},
			{"no reply", "300ms", cmdSilent, sdk.ErrTimeout},
			{"reply too long", "", cmdLong, sdk.ErrProtocol},
			{"line holds a newline", "", "GET a\nGET b", sdk.ErrProtocol},
		} {
			t.Run(tc.name, func(t *testing.T) {
				c := open(t, p, target(srv.addr, tc.timeout))
				ok(t, c, 1, true)
				start := time.Now()
				req, connect := split(t, do(context.Background(), c, sdk.Call{VU: 1, Request: request(tc.line, nil)}))
				took := time.Since(start)
				if req.Error != tc.kind || req.Status != 0 || connect != nil {
					t.Fatalf("error %q status %d dialed %v, want %q with no status on the open connection", req.Error, req.Status, connect != nil, tc.kind)
				}
				if tc.kind == sdk.ErrTimeout && (req.Value < 300*time.Millisecond || took > 2*time.Second) {
					t.Fatalf("timed out after %v (call took %v), want the 300ms timeout", req.Value, took)
				}
				// A failed call leaves the connection in an unknown state, so
				// the next call dials afresh; a refused line never touched it.
				ok(t, c, 1, tc.kind != sdk.ErrProtocol || tc.line == cmdLong)
			})
		}

		t.Run("connection refused", func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			addr := ln.Addr().String()
			ln.Close()
			c := open(t, p, target(addr, ""))
			for range 2 {
				req, connect := split(t, do(context.Background(), c, sdk.Call{VU: 1, Request: request("PING", nil)}))
				if req.Error != sdk.ErrConnectionRefused || connect != nil || req.BytesSent != 0 {
					t.Fatalf("error %q, connect %v, sent %d: want connection_refused and no connect sample", req.Error, connect != nil, req.BytesSent)
				}
			}
		})

		t.Run("interrupted", func(t *testing.T) {
			c := open(t, p, target(srv.addr, ""))
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(200*time.Millisecond, cancel)
			start := time.Now()
			req, _ := split(t, do(ctx, c, sdk.Call{VU: 7, Request: request(cmdSilent, nil)}))
			took := time.Since(start)
			if req.Error != sdk.ErrInterrupted || took > 2*time.Second {
				t.Fatalf("error %q after %v, want interrupted soon after the 200ms cancel", req.Error, took)
			}
			ok(t, c, 7, true)
		})

		t.Run("closed client", func(t *testing.T) {
			c, err := p.Open(context.Background(), target(srv.addr, ""))
			if err != nil {
				t.Fatal(err)
			}
			ok(t, c, 1, true)
			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
			if err := c.Close(); err != nil {
				t.Fatalf("second Close: %v", err)
			}
		})
	})
}
