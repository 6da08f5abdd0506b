package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2"

	"github.com/hload/hload/config"
	"github.com/hload/hload/plugins/host"
	"github.com/hload/hload/plugins/sdk"
)

// The echo example plugin's test file, and the guide that quotes it.
const (
	echoExample = "examples/plugins/echo/example.hcl"
	pluginGuide = "../../docs/plugins.md"
)

// echoServer is a loopback TCP echo server. It counts the connections it
// accepted and the bytes it echoed back.
type echoServer struct {
	addr  string
	conns atomic.Int64
	bytes atomic.Int64

	ln       net.Listener
	accepted chan struct{} // closed when the accept loop has returned
	handlers sync.WaitGroup
	once     sync.Once
}

func startEchoServer(t *testing.T) *echoServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &echoServer{addr: ln.Addr().String(), ln: ln, accepted: make(chan struct{})}
	go func() {
		defer close(s.accepted)
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			s.conns.Add(1)
			s.handlers.Add(1)
			go func() {
				defer s.handlers.Done()
				defer conn.Close()
				n, _ := io.Copy(conn, conn) // until the client closes
				s.bytes.Add(n)
			}()
		}
	}()
	t.Cleanup(func() { s.stop(t) })
	return s
}

// stop closes the listener and waits for every connection to end, so that
// the counts are final. A client that is gone has closed its connections,
// so that takes a moment at most.
func (s *echoServer) stop(t *testing.T) {
	t.Helper()
	s.once.Do(func() {
		s.ln.Close()
		<-s.accepted // no handler is added after this
		done := make(chan struct{})
		go func() { s.handlers.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Errorf("the echo server's connections were still open 5 s after it stopped")
		}
	})
}

// fenced returns the body of the first ``` block of the given language that
// follows after in the markdown file at path.
func fenced(t *testing.T, path, after, lang string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(data), after)
	_, rest, ok2 := strings.Cut(rest, "```"+lang+"\n")
	block, _, ok3 := strings.Cut(rest, "\n```\n")
	if !ok || !ok2 || !ok3 {
		t.Fatalf("%s has no %s block after %q", path, lang, after)
	}
	return block + "\n"
}

// TestEchoGuideQuotesExample keeps docs/plugins.md's test the one that
// TestEchoPluginExample runs: the hcl block after the guide's link to
// example.hcl is the file, byte for byte.
func TestEchoGuideQuotesExample(t *testing.T) {
	file, err := os.ReadFile(filepath.Join("../..", echoExample))
	if err != nil {
		t.Fatal(err)
	}
	quote := fenced(t, pluginGuide, "(../"+echoExample+")", "hcl")
	if quote == string(file) {
		return
	}
	q, f := strings.Split(quote, "\n"), strings.Split(string(file), "\n")
	line := 0
	for line < len(q) && line < len(f) && q[line] == f[line] {
		line++
	}
	at := func(lines []string) string {
		if line < len(lines) {
			return lines[line]
		}
		return "(end)"
	}
	t.Fatalf("docs/plugins.md quotes %s with a difference at line %d:\nguide: %q\nfile:  %q\nCopy the file into the guide's hcl block.",
		echoExample, line+1, at(q), at(f))
}

// TestEchoPluginExample builds examples/plugins/echo and runs its
// example.hcl as docs/plugins.md does: from the root of a copy of the
// repository's layout, whose ./plugins/ holds the binary, so that the
// plugin block without source finds it. The test's own echo server stands
// in for socat, and the run is shortened to 2 s.
func TestEchoPluginExample(t *testing.T) {
	requirePlugins(t)
	t.Setenv(host.PathEnv, "") // only ./plugins/ is searched, as in the guide
	src, err := os.ReadFile(filepath.Join("../..", echoExample))
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "plugins"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, filepath.Dir(echoExample)), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, root, echoExample, string(src))
	built, _ := pluginCopy(t, "echo")
	bin := filepath.Join(root, "plugins", "hload-plugin-echo")
	if err := os.Rename(built, bin); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { killLeftovers(t, bin) })

	// plugin describe starts the binary it finds and prints its schemas,
	// as the guide shows them.
	r := hload(t, root, "plugin", "describe", "echo")
	noLeftovers(t, bin)
	if r.code != exitOK {
		t.Fatalf("plugin describe: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	var got host.Description
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatalf("plugin describe printed no JSON: %v\n%s", err, r.stdout)
	}
	want := host.Description{
		Name: "echo", Version: "0.1.0", SDKVersion: sdk.Version, ProtocolVersion: host.ProtocolVersion,
		TargetSchema: []host.SchemaAttribute{
			{Name: "address", Type: "string", Required: true, Description: "The echo server, as host:port."},
			{Name: "timeout", Type: "string", Description: "How long a call may take: a duration or a number of seconds.", Default: "5s"},
		},
		RequestSchema: []host.SchemaAttribute{{Name: "payload", Type: "string", Description: "What a call sends and expects back.", Default: "ping"}},
		Metrics:       []string{},
		Gauges:        []string{},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("plugin describe echo = %+v\nwant %+v", got, want)
	}
	var guide host.Description
	if err := json.Unmarshal([]byte(fenced(t, pluginGuide, "`plugin describe` starts the plugin", "json")), &guide); err != nil {
		t.Errorf("the guide's plugin describe output is not JSON: %v", err)
	} else if !reflect.DeepEqual(got, guide) {
		t.Errorf("docs/plugins.md shows plugin describe printing %+v, it prints %+v", guide, got)
	}

	if r := hload(t, root, "validate", echoExample); r.code != exitOK {
		t.Fatalf("validate: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	noLeftovers(t, bin)

	srv := startEchoServer(t)
	cmd, stdout, stderr := startHload(t, root, "apply", "--quiet", "--summary-export", "summary.json", echoExample,
		"--var", "address="+srv.addr, "--var", "duration=2s")
	r = wait(t, cmd, stdout, stderr)
	noLeftovers(t, bin)
	if r.code != exitOK {
		t.Fatalf("apply: exit %d, want 0\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	srv.stop(t)
	s := readSummary(t, filepath.Join(root, "summary.json"))
	sc := s.Scenarios["ping"]
	if sc == nil || sc.Requests["hello"] == nil {
		t.Fatalf("the summary lacks scenario ping's request hello: %+v", s.Scenarios)
	}
	req := sc.Requests["hello"]
	conns, echoed := srv.conns.Load(), srv.bytes.Load()

	// The plugin dials once per call: one connection per request.
	if req.Count == 0 || req.Count != conns || sc.Iterations != req.Count {
		t.Errorf("%d requests in %d iterations, the server accepted %d connections: want one request per iteration and one connection per request",
			req.Count, sc.Iterations, conns)
	}
	if !s.Passed || s.Failed != "" || req.Errors != 0 || len(req.ErrorsByKind) != 0 {
		t.Errorf("passed %v, failed %q, errors %d %v: want a clean run", s.Passed, s.Failed, req.Errors, req.ErrorsByKind)
	}
	if req.Checks.Passed != req.Count || req.Checks.Failed != 0 {
		t.Errorf("checks %+v, want body_contains to pass for each of %d requests", req.Checks, req.Count)
	}
	if len(req.Status) != 0 {
		t.Errorf("statuses %v: echo reports none, and status 0 is not counted", req.Status)
	}
	if l := req.Latency; !(l.Min > 0 && l.Min <= l.P50 && l.P50 <= l.P99 && l.P99 <= l.Max) {
		t.Errorf("latency %+v ms: want 0 < min <= p50 <= p99 <= max", l)
	}
	// What hload counts as sent is what the server read and echoed, and
	// what it counts as received is that echo.
	if req.BytesSent == 0 || req.BytesSent != echoed || req.BytesReceived != echoed {
		t.Errorf("bytes sent %d received %d, the server echoed %d: want all three equal", req.BytesSent, req.BytesReceived, echoed)
	}
	t.Logf("example.hcl for 2 s with 4 VUs: %d requests on %d connections, %d bytes each way, checks passed %d; "+
		"latency min %.3f p50 %.3f p99 %.3f max %.3f ms; took %.2f s",
		req.Count, conns, echoed, req.Checks.Passed, req.Latency.Min, req.Latency.P50, req.Latency.P99, req.Latency.Max, s.DurationS)
}

// TestEchoValidateRejectsBadAttributes: a value the echo plugin's Open or
// Do would refuse is refused by hload validate first, with exit 2 and the
// place of the attribute, though no echo server is up: the plugin checks
// it with its own validator, over the wire, without connecting.
func TestEchoValidateRejectsBadAttributes(t *testing.T) {
	requirePlugins(t)
	bin, _ := pluginCopy(t, "echo")
	const test = `plugin "echo" {
  source = %q
}
target "echo" {
  protocol = "echo"
  address  = %q
  timeout  = %s
}
scenario "ping" {
  executor = "constant-vus"
  vus      = 1
  duration = "1s"
  request "hello" {
    payload = %s
  }
}
`
	for _, tc := range []struct {
		name                      string
		address, timeout, payload string
		// The attribute at fault, where its value starts, and the words
		// of the diagnostic; none when the test is valid.
		attr      string
		line, col int
		wants     []string
	}{
		{name: "good, server down", address: "127.0.0.1:1", timeout: `"2s"`, payload: `"hello ${vu.id}"`},
		{name: "timeout as seconds", address: "127.0.0.1:1", timeout: `2`, payload: `"hello"`},
		{"timeout not a duration", "127.0.0.1:1", `"fast"`, `"hello"`, "timeout", 7, 14, []string{
			`Error: Invalid timeout`,
			`on test.hcl line 7, in target "echo":`,
			`7:   timeout  = "fast"`,
			`timeout "fast" is not a duration`,
			`1 error(s) in the config, at test.hcl:7:14;`,
		}},
		{"address not host:port", "localhost", `"2s"`, `"hello"`, "address", 6, 14, []string{
			`Error: Invalid address`,
			`on test.hcl line 6, in target "echo":`,
			`6:   address  = "localhost"`,
			`address "localhost" must be host:port`,
			`1 error(s) in the config, at test.hcl:6:14;`,
		}},
		{"empty payload", "127.0.0.1:1", `"2s"`, `""`, "payload", 14, 15, []string{
			`Error: Invalid payload`,
			`on test.hcl line 14`,
			`14:     payload = ""`,
			`payload is empty`,
			`1 error(s) in the config, at test.hcl:14:15;`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, dir, "test.hcl", fmt.Sprintf(test, bin, tc.address, tc.timeout, tc.payload))
			r := hload(t, dir, "validate", "--no-color", "test.hcl")
			noLeftovers(t, bin)
			code := exitOK
			if tc.attr != "" {
				code = exitUsage
			}
			if r.code != code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, code, r.stdout, r.stderr)
			}
			for _, want := range tc.wants {
				if !strings.Contains(r.stderr, want) {
					t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
				}
			}
			if tc.attr == "" {
				return
			}
			// The text shows the line; the diagnostic holds the column too.
			ph := newPluginHost(context.Background())
			defer ph.killAll()
			_, diags := config.Load([]string{filepath.Join(dir, "test.hcl")}, config.Options{
				Protocols: registry(), Sinks: sinkTypes().Specs(), LookupEnv: os.LookupEnv, Plugins: ph.declared,
			})
			errs := diags.Errs()
			if len(errs) != 1 {
				t.Fatalf("%d errors, want 1: %v", len(errs), diags)
			}
			d, _ := errs[0].(*hcl.Diagnostic)
			if d == nil || d.Subject == nil || filepath.Base(d.Subject.Filename) != "test.hcl" ||
				d.Subject.Start.Line != tc.line || d.Subject.Start.Column != tc.col || d.Summary != "Invalid "+tc.attr {
				t.Errorf("diagnostic %+v at %v, want %q at test.hcl:%d:%d", d, d.Subject, "Invalid "+tc.attr, tc.line, tc.col)
			}
		})
	}
}

// TestEchoDefaultPayload: a request that leaves out the echo plugin's
// payload sends the default the plugin declares, "ping", as the echo
// server, which hload does not write, counts: 4 bytes on each connection,
// one connection per request. validate accepts the file first.
func TestEchoDefaultPayload(t *testing.T) {
	requirePlugins(t)
	bin, _ := pluginCopy(t, "echo")
	srv := startEchoServer(t)
	dir := t.TempDir()
	writeFile(t, dir, "test.hcl", fmt.Sprintf(`plugin "echo" {
  source = %q
}
target "echo" {
  protocol = "echo"
  address  = %q
}
scenario "ping" {
  executor = "constant-vus"
  vus      = 2
  duration = "1s"
  request "default" {
    check {
      body_contains = "ping"
    }
  }
}
`, bin, srv.addr))
	if r := hload(t, dir, "validate", "test.hcl"); r.code != exitOK {
		t.Fatalf("validate: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if conns := srv.conns.Load(); conns != 0 {
		t.Fatalf("validate connected %d times", conns)
	}
	r := hload(t, dir, "apply", "--quiet", "--summary-export", "summary.json", "test.hcl")
	noLeftovers(t, bin)
	if r.code != exitOK {
		t.Fatalf("apply: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	srv.stop(t)
	s := readSummary(t, filepath.Join(dir, "summary.json"))
	req := s.Scenarios["ping"].Requests["default"]
	conns, echoed := srv.conns.Load(), srv.bytes.Load()
	if req == nil || req.Count == 0 || req.Count != conns || req.Errors != 0 || req.Checks.Passed != req.Count {
		t.Fatalf("summary %+v, the server accepted %d connections: want one clean request per connection", req, conns)
	}
	if echoed != conns*int64(len("ping")) {
		t.Errorf("the server echoed %d bytes on %d connections, want %d: 4 bytes (\"ping\") each", echoed, conns, conns*4)
	}
	t.Logf("1 s, 2 VUs, no payload: %d requests, %d connections, %d bytes echoed", req.Count, conns, echoed)
}
