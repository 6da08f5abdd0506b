package main

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hload/hload/metrics"
	"github.com/hload/hload/plugins/host"
)

// The plugin binaries the end-to-end plugin tests run: the example plugin,
// and the misbehaving ones under testdata/plugins.
var pluginPackages = map[string]string{
	"lines":      "../../examples/plugins/lines",
	"echo":       "../../examples/plugins/echo",
	"misbehave":  "./testdata/plugins/misbehave",
	"badcookie":  "./testdata/plugins/badcookie",
	"badversion": "./testdata/plugins/badversion",
}

// pluginLimit bounds every hload run in these tests.
const pluginLimit = 60 * time.Second

var plugins struct {
	once sync.Once
	dir  string
	err  error
}

// requirePlugins builds the plugin binaries once, in the folder TestMain
// removes. A plugin that cannot be built, or an hload without its plugin
// commands, fails the test: a missing feature is not a skip.
func requirePlugins(t *testing.T) {
	t.Helper()
	plugins.once.Do(func() {
		plugins.dir = filepath.Join(filepath.Dir(hloadBin), "plugins")
		args := []string{"build", "-o", plugins.dir + string(filepath.Separator)}
		for _, pkg := range pluginPackages {
			args = append(args, pkg)
		}
		if out, err := exec.Command("go", args...).CombinedOutput(); err != nil {
			plugins.err = fmt.Errorf("building the plugins: %v\n%s", err, out)
		}
	})
	if plugins.err != nil {
		t.Fatal(plugins.err)
	}
}

// pluginCopy copies a built plugin into its own folder of the test, so that
// its path names only this test's processes in /proc. It returns the
// absolute path and the sha256 sum.
func pluginCopy(t *testing.T, name string) (string, string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(plugins.dir, name))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "hload-plugin-"+name)
	if err := os.WriteFile(path, data, 0o755); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	t.Cleanup(func() { killLeftovers(t, path) })
	return path, hex.EncodeToString(sum[:])
}

// processesOf returns the pids of running processes started from path, and
// their states (R, S, T for stopped, ...), read from /proc. A zombie has an
// empty cmdline and is not listed: it is already dead.
func processesOf(path string) map[int]string {
	found := map[int]string{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		if argv0, _, _ := bytes.Cut(cmdline, []byte{0}); string(argv0) != path {
			continue
		}
		state := "?"
		if stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); err == nil {
			// The state follows the parenthesised command name.
			if i := bytes.LastIndexByte(stat, ')'); i >= 0 && i+2 < len(stat) {
				state = string(stat[i+2])
			}
		}
		found[pid] = state
	}
	return found
}

// noLeftovers fails the test if a process of path outlives hload. A killed
// process may take a moment to go, so it waits up to a second.
func noLeftovers(t *testing.T, path string) {
	t.Helper()
	deadline := time.Now().Add(time.Second)
	for {
		left := processesOf(path)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("plugin processes left behind after hload exited (pid: state): %v", left)
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// killLeftovers kills what a failed test left, so that no process outlives
// the test run, a stopped one included.
func killLeftovers(t *testing.T, path string) {
	for pid := range processesOf(path) {
		syscall.Kill(pid, syscall.SIGKILL)
	}
}

// startHload starts hload in dir; it is killed after pluginLimit.
func startHload(t *testing.T, dir string, args ...string) (*exec.Cmd, *bytes.Buffer, *bytes.Buffer) {
	t.Helper()
	cmd := exec.Command(hloadBin, args...)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	timer := time.AfterFunc(pluginLimit, func() { cmd.Process.Kill() })
	t.Cleanup(func() { timer.Stop() })
	return cmd, &stdout, &stderr
}

// lineServer is a loopback server for the lines protocol that answers as
// Redis answers inline commands, for the few the tests send: PING, SET and
// INCR. It counts the lines of each command and the connections.
type lineServer struct {
	addr     string
	conns    atomic.Int64
	mu       sync.Mutex
	lines    map[string]int64 // by command
	counters map[string]int64 // by key, for INCR
}

func startLineServer(t *testing.T) *lineServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &lineServer{addr: ln.Addr().String(), lines: map[string]int64{}, counters: map[string]int64{}}
	var wg sync.WaitGroup
	var open sync.Map
	t.Cleanup(func() {
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
			s.conns.Add(1)
			open.Store(conn, nil)
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer conn.Close()
				r, w := bufio.NewScanner(conn), bufio.NewWriter(conn)
				for r.Scan() {
					cmd, key, _ := strings.Cut(r.Text(), " ")
					key, _, _ = strings.Cut(key, " ")
					s.mu.Lock()
					s.lines[cmd]++
					s.counters[key]++
					n := s.counters[key]
					s.mu.Unlock()
					switch cmd {
					case "PING":
						w.WriteString("+PONG\r\n")
					case "SET":
						w.WriteString("+OK\r\n")
					case "INCR":
						fmt.Fprintf(w, ":%d\r\n", n)
					default:
						w.WriteString("-ERR unknown command\r\n")
					}
					if w.Flush() != nil {
						return
					}
				}
			}()
		}
	}()
	return s
}

func (s *lineServer) count(cmd string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lines[cmd]
}

func readSummary(t *testing.T, path string) *metrics.Summary {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("the summary was not exported: %v", err)
	}
	var sum metrics.Summary
	if err := json.Unmarshal(data, &sum); err != nil {
		t.Fatal(err)
	}
	return &sum
}

// TestPluginEndToEnd runs the example plugin as its own binary, pinned by
// its sha256, through a weighted mix against a loopback line server: every
// request the server answered is in the summary, and no more.
func TestPluginEndToEnd(t *testing.T) {
	requirePlugins(t)
	bin, sum := pluginCopy(t, "lines")
	srv := startLineServer(t)
	dir := t.TempDir()
	const vus, iterations = 4, 250
	writeFile(t, dir, "test.hcl", fmt.Sprintf(`
plugin "lines" {
  source = %q
  sha256 = %q
}
target "kv" {
  protocol = "lines"
  address  = %q
  timeout  = "2s"
}
scenario "kv" {
  executor   = "iterations"
  vus        = %d
  iterations = %d
  request "incr" {
    weight = 80
    line   = "INCR hits:${random_int(1, 100)}"
  }
  request "set" {
    weight = 20
    line   = "SET session:${vu.id} ${vu.iteration}"
    expect = "+OK"
    check {
      status = [200]
    }
  }
}
threshold {
  metric    = "latency"
  condition = "p95 < 50ms"
}
sink "csv" {
  path = "out.csv"
}
`, bin, sum, srv.addr, vus, iterations))

	cmd, stdout, stderr := startHload(t, dir, "apply", "--quiet", "test.hcl", "--summary-export", "summary.json")
	r := wait(t, cmd, stdout, stderr)
	noLeftovers(t, bin)
	if r.code != exitOK {
		t.Fatalf("exit %d, want 0\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	s := readSummary(t, filepath.Join(dir, "summary.json"))
	reqs := s.Scenarios["kv"].Requests
	incr, set := reqs["incr"], reqs["set"]
	if incr == nil || set == nil {
		t.Fatalf("summary lacks incr or set: %+v", reqs)
	}
	if incr.Count != srv.count("INCR") || set.Count != srv.count("SET") {
		t.Fatalf("summary counts incr %d set %d, server counts INCR %d SET %d", incr.Count, set.Count, srv.count("INCR"), srv.count("SET"))
	}
	if total := incr.Count + set.Count; total != vus*iterations {
		t.Fatalf("%d requests, want %d VUs × %d iterations", total, vus, iterations)
	}
	// The picker is deterministic: 80/20 weights make a cycle of 4 incr
	// and 1 set, so 1000 picks are exactly 800 and 200, by the server's
	// count. A weighted-random picker misses by about 13 either way.
	if srv.count("INCR") != 800 || srv.count("SET") != 200 {
		t.Errorf("the server received %d INCR and %d SET, want exactly 800 and 200 for weights 80/20", srv.count("INCR"), srv.count("SET"))
	}
	if incr.Errors+set.Errors != 0 || set.Checks.Failed != 0 || set.Checks.Passed != set.Count ||
		incr.Status["200"] != incr.Count || set.Status["200"] != set.Count {
		t.Fatalf("errors incr %d set %d, statuses incr %v set %v, set checks %+v", incr.Errors, set.Errors, incr.Status, set.Status, set.Checks)
	}
	if n := srv.conns.Load(); n != vus {
		t.Fatalf("the server saw %d connections, want one per VU: %d", n, vus)
	}
	if got := csvCount(t, filepath.Join(dir, "out.csv")); got != incr.Count+set.Count {
		t.Fatalf("CSV adds up to %d, summary %d", got, incr.Count+set.Count)
	}
	for name, f := range map[string]*metrics.RequestFigures{"incr": incr, "set": set} {
		l := f.Latency
		if !(l.Min > 0 && l.Min <= l.P50 && l.P50 < 50 && l.P50 <= l.P99 && l.P99 <= l.Max) {
			t.Errorf("%s latency %+v: want 0 < min <= p50 < 50 ms, p50 <= p99 <= max", name, l)
		}
		if f.BytesSent == 0 || f.BytesReceived == 0 {
			t.Errorf("%s bytes sent %d received %d", name, f.BytesSent, f.BytesReceived)
		}
	}
	// Every set's reply is "+OK\r\n": the bytes are counted on the wire.
	if set.BytesReceived != 5*set.Count {
		t.Errorf("set received %d bytes, want 5 per reply: %d", set.BytesReceived, 5*set.Count)
	}
	t.Logf("%d VUs × %d iterations through the plugin binary: incr %d, set %d; server INCR %d, SET %d on %d connections; "+
		"incr p50 %.3f ms p99 %.3f ms max %.3f ms, set p50 %.3f ms p99 %.3f ms; set checks passed %d of %d; took %.2f s",
		vus, iterations, incr.Count, set.Count, srv.count("INCR"), srv.count("SET"), srv.conns.Load(),
		incr.Latency.P50, incr.Latency.P99, incr.Latency.Max, set.Latency.P50, set.Latency.P99, set.Checks.Passed, set.Count, s.DurationS)
}

// TestPluginExample runs examples/plugins/lines/example.hcl as its README
// says, shortened, against the loopback server in place of Redis. It is
// copied with the binary where its relative source points.
func TestPluginExample(t *testing.T) {
	requirePlugins(t)
	src, err := os.ReadFile("../../examples/plugins/lines/example.hcl")
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	dir := filepath.Join(root, "examples", "plugins", "lines")
	if err := os.MkdirAll(filepath.Join(root, "plugins"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "example.hcl", string(src))
	built, _ := pluginCopy(t, "lines")
	bin := filepath.Join(root, "plugins", "hload-plugin-lines")
	if err := os.Rename(built, bin); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { killLeftovers(t, bin) })
	srv := startLineServer(t)

	if r := hload(t, root, "validate", "examples/plugins/lines/example.hcl"); r.code != exitOK {
		t.Fatalf("validate: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	cmd, stdout, stderr := startHload(t, root, "apply", "--quiet", "examples/plugins/lines/example.hcl",
		"--var", "address="+srv.addr, "--var", "duration=2s", "--summary-export", "summary.json")
	r := wait(t, cmd, stdout, stderr)
	noLeftovers(t, bin)
	if r.code != exitOK {
		t.Fatalf("exit %d, want 0\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	s := readSummary(t, filepath.Join(root, "summary.json"))
	var total int64
	for name, cmd := range map[string]string{"incr": "INCR", "set": "SET", "ping": "PING"} {
		req := s.Scenarios["cache"].Requests[name]
		if req == nil || req.Count == 0 || req.Count != srv.count(cmd) || req.Errors != 0 || req.Checks.Failed != 0 {
			t.Errorf("request %s: %+v, server %d %s lines", name, req, srv.count(cmd), cmd)
			continue
		}
		total += req.Count
	}
	t.Logf("example.hcl for 2 s with 10 VUs: %d requests (incr %d, set %d, ping %d)", total,
		srv.count("INCR"), srv.count("SET"), srv.count("PING"))
}

// failingTest is a test of one plugin: vus VUs for duration, against the
// line server for the lines-based plugins, exporting the summary and CSV.
func failingTest(name, source, sum, address, extra string) string {
	pin := ""
	if sum != "" {
		pin = fmt.Sprintf("  sha256 = %q\n", sum)
	}
	return fmt.Sprintf(`
plugin %q {
  source = %q
%s}
target "t" {
  protocol = %q
%s}
scenario "s" {
  executor = "constant-vus"
  vus      = 4
  duration = "30s"
  request "r" {
    %s
  }
}
sink "csv" {
  path = "out.csv"
}
`, name, source, pin, name, address, extra)
}

// checkFailure asserts what every plugin failure gives: exit 1, an error
// that names the plugin and says what went wrong, no panic, and no plugin
// process left behind.
func checkFailure(t *testing.T, r result, bin string, wants ...string) {
	t.Helper()
	noLeftovers(t, bin)
	if r.code != exitRuntime {
		t.Errorf("exit %d, want 1\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	out := r.stdout + r.stderr
	for _, w := range wants {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q\nstdout:\n%s\nstderr:\n%s", w, r.stdout, r.stderr)
		}
	}
	if strings.Contains(out, "panic") || strings.Contains(out, "goroutine ") {
		t.Errorf("panic:\n%s", out)
	}
}

// TestPluginStartFailures: a plugin that cannot be started safely is
// refused before any load is sent, each with its own error.
func TestPluginStartFailures(t *testing.T) {
	requirePlugins(t)

	t.Run("sha256 mismatch", func(t *testing.T) {
		bin, actual := pluginCopy(t, "misbehave")
		expected := strings.Repeat("0", 64)
		dir := t.TempDir()
		writeFile(t, dir, "test.hcl", failingTest("misbehave", bin, expected, "", `payload = "x"`))
		cmd, stdout, stderr := startHload(t, dir, "apply", "--quiet", "test.hcl", "--summary-export", "summary.json")
		r := wait(t, cmd, stdout, stderr)
		checkFailure(t, r, bin, `"misbehave"`, "sha256", expected, actual)
		// The plugin marks its start in a file: the checksum is checked
		// before the binary ever runs.
		if _, err := os.Stat(bin + ".started"); err == nil {
			t.Errorf("the plugin was started although its sha256 did not match")
		}
		t.Logf("exit %d:\n%s", r.code, strings.TrimSpace(r.stderr))
	})

	t.Run("missing binary", func(t *testing.T) {
		bin := filepath.Join(t.TempDir(), "nope", "hload-plugin-missing")
		dir := t.TempDir()
		writeFile(t, dir, "test.hcl", failingTest("missing", bin, "", "", `payload = "x"`))
		cmd, stdout, stderr := startHload(t, dir, "apply", "--quiet", "test.hcl", "--summary-export", "summary.json")
		r := wait(t, cmd, stdout, stderr)
		checkFailure(t, r, bin, `"missing"`, bin, "no such file")
		t.Logf("exit %d:\n%s", r.code, strings.TrimSpace(r.stderr))
	})

	for _, tc := range []struct {
		plugin string
		wants  []string
	}{
		// go-plugin's refusal, printed by the plugin itself, is its last
		// stderr line; the hint says what it means.
		{"badcookie", []string{"magic cookie", "This binary is a plugin"}},
		{"badversion", []string{"protocol version", fmt.Sprintf("version %d", host.ProtocolVersion+1), fmt.Sprintf("version %d", host.ProtocolVersion),
			"newer than this hload", "run it with a newer hload"}},
	} {
		t.Run(tc.plugin, func(t *testing.T) {
			bin, sum := pluginCopy(t, tc.plugin)
			srv := startLineServer(t)
			dir := t.TempDir()
			writeFile(t, dir, "test.hcl", failingTest(tc.plugin, bin, sum, fmt.Sprintf("  address = %q\n", srv.addr), `line = "GET k"`))
			cmd, stdout, stderr := startHload(t, dir, "apply", "--quiet", "test.hcl", "--summary-export", "summary.json")
			r := wait(t, cmd, stdout, stderr)
			checkFailure(t, r, bin, append([]string{`"` + tc.plugin + `"`}, tc.wants...)...)
			if tc.plugin == "badversion" {
				// The guide's refusal is this one, under the name and
				// path of its example.
				guide := fenced(t, pluginGuide, "than the hload that runs it", "")
				got := strings.NewReplacer(bin, "/home/you/plugins/hload-plugin-lines", `"badversion"`, `"lines"`).Replace(r.stderr)
				if !strings.HasSuffix(got, guide) {
					t.Errorf("docs/plugins.md shows the refusal of a newer plugin as\n%s\nhload prints\n%s", guide, got)
				}
			}
			if n := srv.conns.Load(); n != 0 {
				t.Errorf("the server saw %d connections: load was sent through a plugin that failed its handshake", n)
			}
			t.Logf("exit %d:\n%s", r.code, strings.TrimSpace(r.stderr))
		})
	}
}

// checkPartial asserts that the results of the requests done before a
// plugin failed were kept: the summary was exported and the CSV adds up to
// the same count. It returns the summary's request count.
func checkPartial(t *testing.T, dir string) *metrics.RequestFigures {
	t.Helper()
	s := readSummary(t, filepath.Join(dir, "summary.json"))
	if s.Passed {
		t.Errorf("the summary says the run passed")
	}
	r := s.Scenarios["s"].Requests["r"]
	if r == nil || r.Count == 0 {
		t.Fatalf("the summary holds no requests: %+v", s.Scenarios["s"])
	}
	if got := csvCount(t, filepath.Join(dir, "out.csv")); got != r.Count {
		t.Errorf("CSV adds up to %d, summary says %d", got, r.Count)
	}
	return r
}

// waitForProcess returns the pid of the one process started from path.
func waitForProcess(t *testing.T, path string, within time.Duration) int {
	t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		for pid := range processesOf(path) {
			return pid
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no process of %s within %v", path, within)
	return 0
}

// TestPluginCrash kills the plugin with SIGKILL 1.5 s into a 30 s run:
// hload ends the run at once with exit 1, names the plugin, shows its last
// stderr lines, and keeps the results of the requests done before.
func TestPluginCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("a 2 to 5 s end-to-end run; scripts/test.sh runs it without -short")
	}
	requirePlugins(t)
	bin, sum := pluginCopy(t, "misbehave")
	dir := t.TempDir()
	writeFile(t, dir, "test.hcl", failingTest("misbehave", bin, sum, "", `payload = "x"`))
	cmd, stdout, stderr := startHload(t, dir, "apply", "test.hcl", "--summary-export", "summary.json")
	pid := waitForProcess(t, bin, 10*time.Second)
	time.Sleep(1500 * time.Millisecond)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	r := wait(t, cmd, stdout, stderr)
	took := time.Since(killed)
	checkFailure(t, r, bin, `"misbehave"`, fmt.Sprintf("misbehave plugin ready (pid %d)", pid))
	if took > 5*time.Second {
		t.Errorf("hload took %v to exit after the plugin died", took)
	}
	req := checkPartial(t, dir)
	// Each of 4 VUs makes a call every ~2 ms: about 2 000 per second.
	if ok := req.Status["200"]; ok < 500 || req.Count != ok+req.Errors {
		t.Errorf("%d requests, %d with status 200 and %d errors: want over 500 done before the crash, and every other an error", req.Count, ok, req.Errors)
	}
	t.Logf("killed plugin pid %d at 1.5 s; hload exited %d after %v; summary and CSV: %d requests (%d status 200, %d errors %v)\nstderr:\n%s",
		pid, r.code, took.Round(time.Millisecond), req.Count, req.Status["200"], req.Errors, req.ErrorsByKind, strings.TrimSpace(r.stderr))
}

// TestPluginHang stops the plugin process (SIGSTOP, sent by the plugin to
// itself after 300 calls), so it neither answers nor heartbeats: hload
// declares it hung after its hang timeout, kills it, stopped as it is, and
// exits 1 with the results of the calls done before.
func TestPluginHang(t *testing.T) {
	if testing.Short() {
		t.Skip("an end-to-end run that waits for the hang timeout; scripts/test.sh runs it without -short")
	}
	requirePlugins(t)
	const stopAfter = 300
	bin, sum := pluginCopy(t, "misbehave")
	dir := t.TempDir()
	writeFile(t, dir, "test.hcl", failingTest("misbehave", bin, sum, fmt.Sprintf("  stop_after = %d\n", stopAfter), `payload = "x"`))
	start := time.Now()
	cmd, stdout, stderr := startHload(t, dir, "apply", "test.hcl", "--summary-export", "summary.json")
	pid := waitForProcess(t, bin, 10*time.Second)
	// Wait until the plugin has stopped itself, to time the detection.
	var stopped time.Time
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if processesOf(bin)[pid] == "T" {
			stopped = time.Now()
			break
		}
	}
	if stopped.IsZero() {
		t.Fatalf("the plugin did not stop itself within 20 s")
	}
	r := wait(t, cmd, stdout, stderr)
	detected := time.Since(stopped)
	checkFailure(t, r, bin, `"misbehave"`, fmt.Sprintf("misbehave: stopping myself after %d calls (pid %d)", stopAfter-1, pid))
	if out := strings.ToLower(r.stdout + r.stderr); !strings.Contains(out, "hung") && !strings.Contains(out, "responding") {
		t.Errorf("the error does not say the plugin hung:\n%s", r.stderr)
	}
	req := checkPartial(t, dir)
	// The calls before the stopping one finished before it stopped the
	// process, and only they succeeded. The calls pending then, and any
	// the VUs started before the run ended, are counted as failed.
	if ok := req.Status["200"]; ok != stopAfter-1 || req.Count != ok+req.Errors {
		t.Errorf("%d requests in the summary, %d with status 200 and %d errors: want the %d done before the hang to succeed, and every other to be an error",
			req.Count, ok, req.Errors, stopAfter-1)
	}
	t.Logf("plugin pid %d stopped itself %v into the run; hload exited %d %v later (%v in all); summary and CSV: %d requests (%d errors %v)\nstderr:\n%s",
		pid, stopped.Sub(start).Round(time.Millisecond), r.code, detected.Round(time.Millisecond), time.Since(start).Round(time.Millisecond),
		req.Count, req.Errors, req.ErrorsByKind, strings.TrimSpace(r.stderr))
}
