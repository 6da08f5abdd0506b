package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"github.com/hload/hload/plugins/host"
	"github.com/hload/hload/protocols"
)

// isolateTest runs VUS VUs for DURATION against var.base_url, with
// isolate set on the target.
const isolateTest = `
variable "base_url" {}
variable "isolate" {
  default = true
}
variable "vus" {
  default = 4
}
variable "duration" {
  default = "1s"
}
target "t" {
  base_url = var.base_url
  isolate  = var.isolate
}
scenario "s" {
  executor = "constant-vus"
  vus      = var.vus
  duration = var.duration
  request "r" {
    path = "/r"
    check {
      status = [200]
    }
  }
}
`

// isolatedLeftovers lists live processes that run hload as a plugin, which
// must all be gone once hload exited.
func isolatedLeftovers(t testing.TB) []string {
	t.Helper()
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	var left []string
	for _, p := range procs {
		cmdline, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		args := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
		if len(args) >= 2 && args[0] == hloadBin && args[1] == servePluginCommand {
			left = append(left, fmt.Sprintf("%s: %q", filepath.Dir(p), args))
		}
	}
	return left
}

// TestIsolatedHTTPCountsMatch runs HTTP through the isolated built-in (the
// hload binary as its own plugin): the summary counts exactly what the
// server received, latencies are sane and no plugin process is left.
func TestIsolatedHTTPCountsMatch(t *testing.T) {
	srv, served := okServer(t) // 2 ms per request
	dir := t.TempDir()
	writeFile(t, dir, "test.hcl", isolateTest)
	r := hload(t, dir, "apply", "test.hcl", "--quiet", "--var", "base_url="+srv.URL, "--summary-export", "summary.json")
	if r.code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	sum := *exportedSummary(t, filepath.Join(dir, "summary.json"))
	figures := sum.Scenarios["s"].Requests["r"]
	if figures.Count == 0 || figures.Count != served.Load() {
		t.Errorf("summary count %d, server received %d", figures.Count, served.Load())
	}
	if figures.Errors != 0 || figures.Checks.Failed != 0 || figures.Status["200"] != figures.Count {
		t.Errorf("errors %d, failed checks %d, status %v", figures.Errors, figures.Checks.Failed, figures.Status)
	}
	if l := figures.Latency; l.Min < 2 || l.P50 > 50 || l.Max > 1000 {
		t.Errorf("latency %+v ms, want at least the server's 2 ms and sane", l)
	}
	if left := isolatedLeftovers(t); len(left) > 0 {
		t.Errorf("plugin processes left after hload exited: %v", left)
	}
}

// TestIsolatedHTTPFailuresKeepTheirMessages: why a call failed crosses
// the plugin wire: against a server that answers every other request 500,
// the isolated run counts exactly the server's 500s as errors, and its
// summary gives the same messages as the in-process run's.
func TestIsolatedHTTPFailuresKeepTheirMessages(t *testing.T) {
	var served, failed atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if served.Add(1)%2 == 0 {
			failed.Add(1)
			http.Error(w, "broken on purpose", http.StatusInternalServerError)
			return
		}
		w.Write([]byte("ok"))
	}))
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	writeFile(t, dir, "test.hcl", isolateTest)
	messages := map[bool][]string{}
	for _, isolate := range []bool{false, true} {
		served.Store(0)
		failed.Store(0)
		out := fmt.Sprintf("summary-%v.json", isolate)
		r := hload(t, dir, "apply", "test.hcl", "--quiet", "--var", "base_url="+srv.URL, "--var", fmt.Sprintf("isolate=%v", isolate),
			"--var", "vus=2", "--var", "duration=500ms", "--summary-export", out)
		if r.code != exitOK && r.code != exitThreshold {
			t.Fatalf("isolate=%v: exit %d\nstdout:\n%s\nstderr:\n%s", isolate, r.code, r.stdout, r.stderr)
		}
		figures := exportedSummary(t, filepath.Join(dir, out)).Scenarios["s"].Requests["r"]
		if figures.Count != served.Load() || figures.Errors != failed.Load() || figures.Errors == 0 {
			t.Errorf("isolate=%v: %d requests, %d errors; the server served %d, %d of them 500", isolate, figures.Count, figures.Errors, served.Load(), failed.Load())
		}
		for _, m := range figures.ErrorMessages {
			messages[isolate] = append(messages[isolate], m...)
		}
		if len(messages[isolate]) == 0 {
			t.Errorf("isolate=%v: no error messages in the summary: %+v", isolate, figures.ErrorMessages)
		}
	}
	if !reflect.DeepEqual(messages[false], messages[true]) {
		t.Errorf("messages in-process %q, isolated %q", messages[false], messages[true])
	}
	t.Logf("messages: %q", messages[true])
	if left := isolatedLeftovers(t); len(left) > 0 {
		t.Errorf("plugin processes left: %v", left)
	}
}

func TestPluginDescribeHTTP(t *testing.T) {
	r := hload(t, t.TempDir(), "plugin", "describe", "http")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	var d host.Description
	if err := json.Unmarshal([]byte(r.stdout), &d); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, r.stdout)
	}
	if d.Name != "http" || d.Version == "" || d.SDKVersion == "" || d.ProtocolVersion != host.ProtocolVersion {
		t.Errorf("description = %+v", d)
	}
	has := func(attrs []host.SchemaAttribute, want host.SchemaAttribute) bool {
		for _, a := range attrs {
			if a == want {
				return true
			}
		}
		return false
	}
	if !has(d.TargetSchema, host.SchemaAttribute{Name: "base_url", Type: "string", Required: true}) {
		t.Errorf("target schema lacks base_url: %+v", d.TargetSchema)
	}
	if !has(d.RequestSchema, host.SchemaAttribute{Name: "headers", Type: "map(string)"}) {
		t.Errorf("request schema lacks headers: %+v", d.RequestSchema)
	}
	if left := isolatedLeftovers(t); len(left) > 0 {
		t.Errorf("plugin processes left: %v", left)
	}
}

func TestPluginListListsHTTP(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "plugins", "hload-plugin-x")
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	r := hload(t, dir, "plugin", "list")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	// A header, then every built-in, then the plugins found.
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	builtins := registry().Names()
	if len(lines) != 2+len(builtins) {
		t.Fatalf("plugin list has %d lines, want a header, %d built-ins and x:\n%s", len(lines), len(builtins), r.stdout)
	}
	for i, name := range builtins {
		if f := strings.Fields(lines[1+i]); len(f) != 2 || f[0] != name || f[1] != "built-in" {
			t.Errorf("line %d = %q, want %s built-in", 2+i, lines[1+i], name)
		}
	}
	if last := lines[len(lines)-1]; !strings.HasPrefix(last, "x ") || !strings.HasSuffix(last, bin) {
		t.Errorf("last line = %q, want x and %s", last, bin)
	}
}

// benchServerEnv makes the test binary serve the benchmark's 60-byte
// body instead of running tests, so the server has a process of its own
// that can be pinned to a core.
const benchServerEnv = "HLOAD_TEST_BENCH_SERVER"

// serveBench answers every request with 60 bytes and prints its address on
// stdout. It exits when stdin closes.
func serveBench() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	fmt.Println(ln.Addr().String())
	body := bytes.Repeat([]byte("x"), 60)
	go http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(body) }))
	io.Copy(io.Discard, os.Stdin)
}

// pinned returns the command that runs args on one CPU when pin is true,
// the machine has two and taskset is there, and reports whether it pinned.
func pinned(pin bool, cpu int, args ...string) (*exec.Cmd, bool) {
	if taskset, err := exec.LookPath("taskset"); err == nil && pin && runtime.NumCPU() >= 2 {
		return exec.Command(taskset, append([]string{"-c", strconv.Itoa(cpu)}, args...)...), true
	}
	return exec.Command(args[0], args[1:]...), false
}

// BenchmarkIsolatedHTTP compares HTTP in-process and isolated against the
// same loopback server, 50 VUs for 5 s each, in two set-ups:
//   - pinned, the way docs/performance.md measures its peers: the server pinned
//     to CPU 1, and hload, with its plugin process when isolated, pinned to
//     CPU 0. Both modes then saturate CPU 0, so the ratio is that of the
//     CPU each spends per request. It reports pinned=1 when the pinning
//     took.
//   - unpinned, as a user runs it: the server, hload and the plugin share
//     both cores as the kernel schedules them.
//
// Each reports both modes' requests/s, their ratio (the goal is >= 0.8)
// and the CPU time per request of hload and its plugin together (wait4's
// rusage of hload includes the children it reaped).
func BenchmarkIsolatedHTTP(b *testing.B) {
	b.Run("pinned", func(b *testing.B) { benchIsolated(b, true) })
	b.Run("unpinned", func(b *testing.B) { benchIsolated(b, false) })
}

// startBenchServer starts this test binary as the 60-byte server
// (serveBench), on CPU 1 when pin is true and the machine allows it,
// which it reports. The server stops when the benchmark ends.
func startBenchServer(b *testing.B, pin bool) (baseURL string, isPinned bool) {
	server, isPinned := pinned(pin, 1, os.Args[0], "-test.run=^$")
	server.Env = append(os.Environ(), benchServerEnv+"=1")
	stdin, err := server.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := server.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	server.Stderr = os.Stderr
	if err := server.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		stdin.Close()
		server.Wait()
	})
	addr, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		b.Fatalf("bench server: %v", err)
	}
	return "http://" + strings.TrimSpace(addr), isPinned
}

func benchIsolated(b *testing.B, pin bool) {
	baseURL, isPinned := startBenchServer(b, pin)

	dir := b.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "test.hcl"), []byte(isolateTest), 0o644); err != nil {
		b.Fatal(err)
	}
	run := func(isolate bool) (rps, cpuPerRequest float64) {
		out := filepath.Join(dir, fmt.Sprintf("summary-%v.json", isolate))
		cmd, _ := pinned(pin, 0, hloadBin, "apply", "test.hcl", "--quiet", "--summary-export", out,
			"--var", "base_url="+baseURL, "--var", fmt.Sprintf("isolate=%v", isolate),
			"--var", "vus=50", "--var", "duration=5s")
		cmd.Dir = dir
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Run(); err != nil {
			b.Fatalf("isolate=%v: %v\n%s", isolate, err, stderr.String())
		}
		sum := *exportedSummary(b, out)
		figures := sum.Scenarios["s"].Requests["r"]
		if figures.Errors != 0 || figures.Count == 0 {
			b.Fatalf("isolate=%v: %d requests, %d errors", isolate, figures.Count, figures.Errors)
		}
		// taskset execs hload, so the rusage is hload's and its plugin's.
		cpu := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
		return figures.RPS, float64(cpu.Microseconds()) / float64(figures.Count)
	}
	pinMetric := 0.0
	if isPinned {
		pinMetric = 1
	}
	for b.Loop() {
		inRPS, inCPU := run(false)
		isoRPS, isoCPU := run(true)
		b.ReportMetric(inRPS, "in-process-req/s")
		b.ReportMetric(isoRPS, "isolated-req/s")
		b.ReportMetric(isoRPS/inRPS, "ratio")
		b.ReportMetric(inCPU, "in-process-cpu-µs/req")
		b.ReportMetric(isoCPU, "isolated-cpu-µs/req")
		if pin {
			b.ReportMetric(pinMetric, "pinned")
		}
	}
}

// TestIsolatedBuiltinsValidateOverTheWire: a built-in served as a plugin
// of hload itself (isolate = true) describes the same metrics and gives
// the same verdict on targets and requests as in-process, attribute and
// words, because its validators run in the plugin process; and a server
// that is down does not matter, as nothing is dialled.
func TestIsolatedBuiltinsValidateOverTheWire(t *testing.T) {
	for _, tc := range []struct {
		protocol string
		targets  []string
		requests []string
	}{
		{"http",
			[]string{`base_url = "http://127.0.0.1:1"`, `base_url = "127.0.0.1:8080"`, "base_url = \"http://127.0.0.1:1\"\ntimeout = \"fast\""},
			[]string{`method = "GET"`, `method = "GTE"`, "body = \"a\"\njson = {a = 1}", `timeout = "fast"`}},
		{"sse",
			[]string{`base_url = "http://127.0.0.1:1"`, `base_url = "127.0.0.1:8080"`, "base_url = \"http://127.0.0.1:1\"\ntimeout = \"soon\""},
			[]string{`path = "/events"`, `duration = "long"`, `reconnect_delay = "-1s"`}},
		{"amqp",
			[]string{`url = "amqp://127.0.0.1:1"`, `url = "127.0.0.1:5672"`, "url = \"amqp://127.0.0.1:1\"\nheartbeat = \"often\""},
			[]string{"kind = \"publish\"\nrouting_key = \"q\"", `kind = "shout"`}},
	} {
		t.Run(tc.protocol, func(t *testing.T) {
			local, ok := registry().Lookup(tc.protocol)
			if !ok {
				t.Fatalf("no built-in %q", tc.protocol)
			}
			p, err := host.Launch(context.Background(), host.LaunchSpec{Name: tc.protocol, Path: hloadBin, Args: []string{servePluginCommand, tc.protocol}})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Kill()
			if got, want := p.Describe().Metrics, local.Describe().Metrics; !reflect.DeepEqual(got, want) {
				t.Errorf("metrics over the wire %q, in-process %q", got, want)
			}
			// The first value of each list is valid, the others are not.
			compare := func(kind string, spec hcldec.ObjectSpec, src string, valid bool, validate func(protocols.Protocol, cty.Value) (string, error)) {
				t.Helper()
				f, diags := hclsyntax.ParseConfig([]byte(src), "t.hcl", hcl.InitialPos)
				if diags.HasErrors() {
					t.Fatal(diags)
				}
				v, diags := hcldec.Decode(f.Body, spec, nil)
				if diags.HasErrors() {
					t.Fatalf("%s %q: %v", kind, src, diags)
				}
				wantAttr, wantErr := validate(local, v)
				attr, err := validate(p, v)
				if attr != wantAttr || fmt.Sprint(err) != fmt.Sprint(wantErr) {
					t.Errorf("%s %q: over the wire %q %v, in-process %q %v", kind, src, attr, err, wantAttr, wantErr)
				}
				if (err == nil) != valid || !valid && attr == "" {
					t.Errorf("%s %q: %q %v, want valid: %v", kind, src, attr, err, valid)
				}
				t.Logf("%s %q: %q %v", kind, src, attr, err)
			}
			for i, src := range tc.targets {
				compare("target", local.Describe().TargetSpec, src, i == 0, func(p protocols.Protocol, v cty.Value) (string, error) {
					tv, ok := p.(protocols.TargetValidator)
					if !ok {
						t.Fatalf("%T validates no target", p)
					}
					return tv.ValidateTarget(v)
				})
			}
			for i, src := range tc.requests {
				compare("request", local.Describe().RequestSpec, src, i == 0, func(p protocols.Protocol, v cty.Value) (string, error) {
					rv, ok := p.(protocols.RequestValidator)
					if !ok {
						t.Fatalf("%T validates no request", p)
					}
					return rv.ValidateRequest(v)
				})
			}
		})
	}
}
