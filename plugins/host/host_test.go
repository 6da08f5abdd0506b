package host

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zclconf/go-cty/cty"

	"github.com/hload/hload/protocols"
)

// fakeBin is the plugin built from testdata/fakeplugin for these tests,
// and fakeBinV2 the same protocol built with the SDK of wire version 2
// (testdata/fakeplugin-v2).
var fakeBin, fakeBinV2 string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "hload-host")
	if err != nil {
		panic(err)
	}
	fakeBin = filepath.Join(dir, BinaryPrefix+"fake")
	fakeBinV2 = filepath.Join(dir, "v2", BinaryPrefix+"fake")
	for bin, pkg := range map[string]string{fakeBin: "./testdata/fakeplugin", fakeBinV2: "./testdata/fakeplugin-v2"} {
		if out, err := exec.Command("go", "build", "-o", bin, pkg).CombinedOutput(); err != nil {
			os.RemoveAll(dir)
			panic("building the fake plugin " + pkg + ": " + err.Error() + "\n" + string(out))
		}
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// children returns the live processes whose parent is this test, so a
// test can tell a plugin process was left behind.
func children(t *testing.T) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	self := os.Getpid()
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// The command name in parentheses may hold spaces; the fields
		// after its closing parenthesis are the state and the parent.
		rest := string(stat[strings.LastIndexByte(string(stat), ')')+2:])
		fields := strings.Fields(rest)
		if len(fields) < 2 || fields[0] == "Z" {
			continue
		}
		if ppid, _ := strconv.Atoi(fields[1]); ppid == self {
			pids = append(pids, pid)
		}
	}
	return pids
}

func noChildren(t *testing.T) {
	t.Helper()
	// go test may run the go command's helpers; only plugins are ours, so
	// compare with the command line.
	for _, pid := range children(t) {
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if strings.Contains(string(cmdline), fakeBin) {
			t.Errorf("plugin process %d is still running: %q", pid, cmdline)
		}
	}
}

func sum(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := sha256.Sum256(data)
	return hex.EncodeToString(s[:])
}

func TestRingKeepsLastLines(t *testing.T) {
	r := newRing(3)
	// go-plugin writes a line and its newline apart.
	for i := 1; i <= 5; i++ {
		fmt.Fprintf(r, "line %d", i)
		r.Write([]byte("\n"))
	}
	r.Write([]byte("partial"))
	got := strings.Join(r.Lines(), "|")
	if want := "line 4|line 5|partial"; got != want {
		t.Errorf("Lines = %q, want %q", got, want)
	}
	r.Write([]byte(strings.Repeat("x", 2*maxLineBytes) + "\n"))
	if l := r.Lines(); len(l[len(l)-1]) != maxLineBytes {
		t.Errorf("a long line kept %d bytes, want %d", len(l[len(l)-1]), maxLineBytes)
	}
}

func TestLaunchChecksBinaryBeforeStart(t *testing.T) {
	dir := t.TempDir()
	// A binary that leaves a mark if it is ever run.
	marker := filepath.Join(dir, "ran")
	script := filepath.Join(dir, "hload-plugin-marker")
	if err := os.WriteFile(script, []byte("#!/bin/sh\ntouch "+marker+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	notExec := filepath.Join(dir, "hload-plugin-plain")
	if err := os.WriteFile(notExec, []byte("data"), 0o644); err != nil {
		t.Fatal(err)
	}
	zeros := strings.Repeat("0", 64)
	cases := []struct {
		name, path, sha256 string
		want               []string
	}{
		{"missing binary", filepath.Join(dir, "nope"), "", []string{`plugin "p"`, "nope", "no such file"}},
		{"not executable", notExec, "", []string{`plugin "p"`, "not executable"}},
		{"sha256 mismatch", script, zeros, []string{`plugin "p"`, script, "sha256 mismatch", "expected " + zeros, "actual " + sum(t, script)}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := Launch(context.Background(), LaunchSpec{Name: "p", Path: c.path, SHA256: c.sha256})
			if err == nil {
				p.Kill()
				t.Fatal("Launch succeeded")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
			var pe *Error
			if !errors.As(err, &pe) || pe.Plugin != "p" {
				t.Errorf("error is not a *host.Error naming the plugin: %#v", err)
			}
		})
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the binary with the wrong sum was started")
	}
}

func TestLaunchChecksumOK(t *testing.T) {
	p, err := Launch(context.Background(), LaunchSpec{Name: "pinned", Path: fakeBin, SHA256: strings.ToUpper(sum(t, fakeBin))})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Kill()
	if got := p.Describe().Name; got != "pinned" {
		t.Errorf("Describe().Name = %q, want the launch name %q", got, "pinned")
	}
	if got := p.Info().Name; got != "fake" {
		t.Errorf("Info().Name = %q, want the plugin's own name", got)
	}
}

// TestPluginRunsCalls runs a call through the process and describes it.
func TestPluginRunsCalls(t *testing.T) {
	p, err := Launch(context.Background(), LaunchSpec{Name: "fake", Path: fakeBin})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Kill()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := p.Open(ctx, cty.ObjectVal(map[string]cty.Value{"address": cty.StringVal("x")}))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := c.(protocols.Failer); !ok {
		t.Errorf("client %T is not a protocols.Failer", c)
	}
	var got []protocols.Sample
	c.Do(ctx, protocols.Call{VU: 1, Planned: time.Now(), Request: cty.ObjectVal(map[string]cty.Value{"message": cty.StringVal("hi")})},
		func(s protocols.Sample) { got = append(got, s) })
	if len(got) != 1 || got[0].Metric != protocols.MetricRequest || got[0].Status != 200 || got[0].Value != time.Millisecond {
		t.Errorf("samples = %+v, want one request sample of 1ms, status 200", got)
	}
	if err := c.Close(); err != nil {
		t.Errorf("Close = %v", err)
	}

	d := Describe(p)
	if d.Name != "fake" || d.Version != "1.2.3" || d.SDKVersion == "" || d.ProtocolVersion != ProtocolVersion {
		t.Errorf("Describe = %+v", d)
	}
	if len(d.TargetSchema) != 1 || d.TargetSchema[0] != (SchemaAttribute{Name: "address", Type: "string", Required: true}) {
		t.Errorf("target schema = %+v", d.TargetSchema)
	}
	if len(d.RequestSchema) != 1 || d.RequestSchema[0] != (SchemaAttribute{Name: "message", Type: "string"}) {
		t.Errorf("request schema = %+v", d.RequestSchema)
	}
	if len(d.Metrics) != 1 || d.Metrics[0] != "fake_metric" {
		t.Errorf("metrics = %q", d.Metrics)
	}
	if len(d.Gauges) != 1 || d.Gauges[0] != "fake_gauge" {
		t.Errorf("gauges = %q", d.Gauges)
	}
}

// TestPluginHeadersCrossTheProcess: a plugin process hands back a call's
// body and headers when the call asks, as a capture would, and neither
// when it does not, though the fake plugin sets both on every sample.
func TestPluginHeadersCrossTheProcess(t *testing.T) {
	p, err := Launch(context.Background(), LaunchSpec{Name: "fake", Path: fakeBin})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Kill()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := p.Open(ctx, cty.ObjectVal(map[string]cty.Value{"address": cty.StringVal("x")}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, tc := range []struct{ body, headers bool }{{true, true}, {false, true}, {true, false}, {false, false}} {
		msg := fmt.Sprintf("body=%v headers=%v", tc.body, tc.headers)
		var got []protocols.Sample
		c.Do(ctx, protocols.Call{VU: 1, KeepBody: tc.body, KeepHeaders: tc.headers,
			Request: cty.ObjectVal(map[string]cty.Value{"message": cty.StringVal(msg)})},
			func(s protocols.Sample) {
				s.Body = append([]byte(nil), s.Body...)
				got = append(got, s)
			})
		if len(got) != 1 || got[0].Error != "" {
			t.Fatalf("%s: samples %+v", msg, got)
		}
		s := got[0]
		if tc.body != (string(s.Body) == msg) || !tc.body && len(s.Body) != 0 {
			t.Errorf("%s: body %q", msg, s.Body)
		}
		switch {
		case !tc.headers && s.Headers != nil:
			t.Errorf("%s: headers %v, not asked for", msg, s.Headers)
		case tc.headers && (len(s.Headers) != 2 || strings.Join(s.Headers["X-Message"], "|") != msg ||
			strings.Join(s.Headers["Set-Cookie"], "|") != "a=1|b=2"):
			t.Errorf("%s: headers %v", msg, s.Headers)
		}
	}
}

// TestPluginValidates: the plugin process checks a target with its own
// validator; the fake plugin has no request validator, so every request
// passes.
func TestPluginValidates(t *testing.T) {
	p, err := Launch(context.Background(), LaunchSpec{Name: "fake", Path: fakeBin})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Kill()
	target := func(a string) cty.Value { return cty.ObjectVal(map[string]cty.Value{"address": cty.StringVal(a)}) }
	if attr, err := p.ValidateTarget(target("bad")); attr != "address" || err == nil || err.Error() != `address "bad" is not host:port` {
		t.Errorf("bad target: got %q, %v", attr, err)
	}
	if attr, err := p.ValidateTarget(target("127.0.0.1:1")); attr != "" || err != nil {
		t.Errorf("good target: got %q, %v", attr, err)
	}
	if attr, err := p.ValidateRequest(cty.ObjectVal(map[string]cty.Value{"message": cty.StringVal("anything")})); attr != "" || err != nil {
		t.Errorf("request: got %q, %v", attr, err)
	}
}

// TestLaunchSchedulesOnlyThePlugin: the plugin's threads run under
// SCHED_BATCH, and the process that launched it keeps its own policy.
func TestLaunchSchedulesOnlyThePlugin(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("scheduling policies are set on Linux only")
	}
	before := policies(t, os.Getpid())
	p, err := Launch(context.Background(), LaunchSpec{Name: "fake", Path: fakeBin})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Kill()
	for tid, pol := range policies(t, os.Getpid()) {
		if want, ok := before[tid]; ok && pol != want {
			t.Errorf("host thread %d: policy %d after Launch, %d before", tid, pol, want)
		}
		if _, ok := before[tid]; !ok && pol == schedBatch {
			t.Errorf("host thread %d, started since, runs under SCHED_BATCH", tid)
		}
	}
	plugin := policies(t, p.Pid())
	if len(plugin) == 0 {
		t.Fatal("no threads of the plugin")
	}
	for tid, pol := range plugin {
		if pol != schedBatch {
			t.Errorf("plugin thread %d: policy %d, want SCHED_BATCH (%d)", tid, pol, schedBatch)
		}
	}
}

// schedBatch is Linux's SCHED_BATCH.
const schedBatch = 3

// policies reads the scheduling policy of each thread of pid from /proc.
func policies(t *testing.T, pid int) map[int]int {
	t.Helper()
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		t.Fatal(err)
	}
	out := map[int]int{}
	for _, task := range tasks {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/sched", pid, task.Name()))
		if err != nil {
			continue // exited meanwhile
		}
		for _, line := range strings.Split(string(data), "\n") {
			if name, value, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(name) == "policy" {
				tid, _ := strconv.Atoi(task.Name())
				out[tid], _ = strconv.Atoi(strings.TrimSpace(value))
			}
		}
	}
	return out
}

func TestKillLeavesNoProcess(t *testing.T) {
	p, err := Launch(context.Background(), LaunchSpec{Name: "fake", Path: fakeBin})
	if err != nil {
		t.Fatal(err)
	}
	pid := p.Pid()
	if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err != nil {
		t.Fatalf("plugin process %d not running: %v", pid, err)
	}
	p.Kill()
	p.Kill() // idempotent
	if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("/proc/%d still exists after Kill (err %v): the process was not reaped", pid, err)
	}
	if !p.Exited() {
		t.Error("Exited() = false after Kill")
	}
}

func TestStderrKeepsLastLines(t *testing.T) {
	p, err := Launch(context.Background(), LaunchSpec{Name: "fake", Path: fakeBin, Args: []string{"stderr", "30"}})
	if err != nil {
		t.Fatal(err)
	}
	p.Kill() // waits for go-plugin to have read all of stderr
	lines := p.Stderr()
	if len(lines) != stderrLines || lines[0] != "fake line 11" || lines[len(lines)-1] != "fake line 30" {
		t.Errorf("Stderr() = %q, want fake line 11 to 30", lines)
	}
}

// TestStartFailures covers the ways a start goes wrong: each error names
// the plugin, says what happened with the plugin's stderr, and leaves no
// process behind.
func TestStartFailures(t *testing.T) {
	cases := []struct {
		mode string
		want []string
	}{
		{"wrong-cookie", []string{"magic cookie did not match", "This binary is a plugin"}},
		// A plugin newer than hload, and one older than any version hload
		// still speaks: both versions named, and what to do.
		{"wrong-version", []string{"speaks protocol version 99", fmt.Sprintf("this hload speaks protocol version %d (and %d and %d, for plugins built before);", ProtocolVersion, ProtocolVersion-1, OldestProtocolVersion),
			"newer than this hload", "run it with a newer hload"}},
		{"v1", []string{"speaks protocol version 1 ", fmt.Sprintf("this hload speaks protocol version %d (and %d and %d, for plugins built before);", ProtocolVersion, ProtocolVersion-1, OldestProtocolVersion),
			"older than this hload", "rebuild it against this hload's plugins/sdk"}},
		{"hang", []string{"did not start within 1s", "fake: hanging at start"}},
	}
	for _, c := range cases {
		t.Run(c.mode, func(t *testing.T) {
			start := time.Now()
			p, err := Launch(context.Background(), LaunchSpec{Name: "fake", Path: fakeBin, Args: []string{c.mode}, StartTimeout: time.Second})
			if err == nil {
				p.Kill()
				t.Fatal("Launch succeeded")
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("Launch took %s", d)
			}
			for _, w := range append(c.want, `plugin "fake"`, fakeBin) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
			noChildren(t)
		})
	}
}

func executable(t *testing.T, path string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
}

func TestFindOrder(t *testing.T) {
	root := t.TempDir()
	t.Chdir(root)
	first, second := filepath.Join(root, "first"), filepath.Join(root, "second")
	executable(t, filepath.Join(second, "hload-plugin-a"))
	executable(t, filepath.Join(first, "hload-plugin-b"))
	executable(t, filepath.Join(second, "hload-plugin-b"))
	executable(t, filepath.Join(root, "plugins", "hload-plugin-a"))
	executable(t, filepath.Join(root, "plugins", "hload-plugin-c"))
	executable(t, filepath.Join(root, "conf", "bin", "x"))
	if err := os.WriteFile(filepath.Join(first, "hload-plugin-a"), []byte("not executable"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := func(k string) (string, bool) {
		if k == PathEnv {
			return first + string(os.PathListSeparator) + string(os.PathListSeparator) + second, true
		}
		return "", false
	}
	cases := []struct {
		name, source string
		env          func(string) (string, bool)
		want         string
	}{
		{"a", "", env, filepath.Join(second, "hload-plugin-a")}, // first's a is not executable
		{"b", "", env, filepath.Join(first, "hload-plugin-b")},
		{"c", "", env, filepath.Join(root, "plugins", "hload-plugin-c")},
		{"a", "", nil, filepath.Join(root, "plugins", "hload-plugin-a")},
		{"a", "./bin/x", env, filepath.Join(root, "conf", "bin", "x")}, // source wins, relative to the config
	}
	for _, c := range cases {
		got, err := Find(c.name, c.source, filepath.Join(root, "conf"), c.env)
		if err != nil || got != c.want {
			t.Errorf("Find(%q, %q) = %q, %v; want %q", c.name, c.source, got, err, c.want)
		}
	}

	_, err := Find("zzz", "", root, env)
	for _, w := range []string{`plugin "zzz"`, "hload-plugin-zzz", first, second, filepath.Join(root, "plugins"), PathEnv} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("Find error lacks %q: %v", w, err)
		}
	}
	if _, err := Find("a", "bin/missing", filepath.Join(root, "conf"), env); err == nil || !strings.Contains(err.Error(), "bin/missing") {
		t.Errorf("Find with a missing source: %v", err)
	}

	found, err := List(env)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range found {
		got = append(got, fmt.Sprintf("%s %s %v", f.Name, strings.TrimPrefix(f.Path, root), f.Shadowed))
	}
	want := []string{
		"b /first/hload-plugin-b false",
		"a /second/hload-plugin-a false",
		"b /second/hload-plugin-b true",
		"a /plugins/hload-plugin-a true",
		"c /plugins/hload-plugin-c false",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("List =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestRingSkipsGoPluginChatter(t *testing.T) {
	r := newRing(5)
	r.Write([]byte(`{"@level":"debug","@message":"plugin address","network":"unix"}` + "\n"))
	r.Write([]byte(`{"@level":"error","@message":"broken"}` + "\n"))
	r.Write([]byte("panic: boom\n"))
	got := strings.Join(r.Lines(), "|")
	if want := `{"@level":"error","@message":"broken"}|panic: boom`; got != want {
		t.Errorf("Lines = %q, want %q", got, want)
	}
}

// countingServer counts the GETs of each path, as the fake plugin makes
// them when its target's address is the server's URL.
type countingServer struct {
	*httptest.Server
	mu     sync.Mutex
	counts map[string]int
	total  int
}

func newCountingServer(t *testing.T) *countingServer {
	s := &countingServer{counts: make(map[string]int)}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.counts[r.URL.Path]++
		s.total++
		s.mu.Unlock()
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *countingServer) snapshot() (map[string]int, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.counts), s.total
}

func message(m string) cty.Value {
	return cty.ObjectVal(map[string]cty.Value{"message": cty.StringVal(m)})
}

// runCalls has vus VUs each make calls calls through c, alternating the
// constant request (with prepared, as the core hands it) and one whose
// message is the VU's and the iteration's, and returns the samples'
// statuses by message.
func runCalls(t *testing.T, c protocols.Client, vus, calls int, constant cty.Value, prepared any) map[string][]int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var mu sync.Mutex
	got := make(map[string][]int)
	var wg sync.WaitGroup
	for vu := 1; vu <= vus; vu++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for it := range calls {
				call := protocols.Call{VU: uint64(vu), Iteration: uint64(it), KeepBody: true, Request: constant, Prepared: prepared}
				if it%2 == 1 {
					call.Request, call.Prepared = message(fmt.Sprintf("d-%d-%d", vu, it)), nil
				}
				c.Do(ctx, call, func(s protocols.Sample) {
					mu.Lock()
					got[string(s.Body)] = append(got[string(s.Body)], s.Status)
					mu.Unlock()
				})
			}
		}()
	}
	wg.Wait()
	return got
}

// checkCounts compares what the calls reported with what the server
// counted: every message as many times, and the statuses as wanted.
func checkCounts(t *testing.T, srv *countingServer, before map[string]int, got map[string][]int, constant string, constantStatus, vus, calls int) {
	t.Helper()
	after, _ := srv.snapshot()
	n := 0
	for msg, statuses := range got {
		n += len(statuses)
		if served := after["/"+msg] - before["/"+msg]; served != len(statuses) {
			t.Errorf("message %q: %d samples, the server counted %d", msg, len(statuses), served)
		}
		want := 200
		if msg == constant {
			want = constantStatus
		}
		for _, s := range statuses {
			if s != want {
				t.Errorf("message %q: status %d, want %d", msg, s, want)
				break
			}
		}
	}
	if n != vus*calls {
		t.Errorf("%d samples for %d calls", n, vus*calls)
	}
	if len(got[constant]) != vus*calls/2 {
		t.Errorf("%d samples of the constant request, want %d", len(got[constant]), vus*calls/2)
	}
	for vu := 1; vu <= vus; vu++ {
		for it := 1; it < calls; it += 2 {
			if m := fmt.Sprintf("d-%d-%d", vu, it); len(got[m]) != 1 {
				t.Errorf("message %q: %d samples, want 1", m, len(got[m]))
			}
		}
	}
}

// TestPluginPreparedAndDynamicCounts: through a plugin process, from many
// VUs at once, a request prepared once and requests that vary reach the
// server as many times as hload counts them, each with its own values;
// the plugin's client prepared the constant one (status 203). A second
// client handed the first one's prepared request sends it whole, and
// still works once the first is closed.
func TestPluginPreparedAndDynamicCounts(t *testing.T) {
	srv := newCountingServer(t)
	p, err := Launch(context.Background(), LaunchSpec{Name: "fake", Path: fakeBin})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Kill()
	if v := p.ProtocolVersion(); v != ProtocolVersion {
		t.Fatalf("agreed on wire version %d, want %d", v, ProtocolVersion)
	}
	target := cty.ObjectVal(map[string]cty.Value{"address": cty.StringVal(srv.URL)})
	a, err := p.Open(context.Background(), target)
	if err != nil {
		t.Fatal(err)
	}
	constant := message("constant")
	preparer, ok := a.(protocols.Preparer)
	if !ok {
		t.Fatalf("client %T is not a protocols.Preparer", a)
	}
	prepared, err := preparer.Prepare(constant)
	if err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	const vus, calls = 20, 50
	got := runCalls(t, a, vus, calls, constant, prepared)
	checkCounts(t, srv, nil, got, "constant", 203, vus, calls)

	// Another client of the same plugin: the handle is a's, so b sends the
	// request itself, which its plugin client did not prepare.
	b, err := p.Open(context.Background(), target)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	before, _ := srv.snapshot()
	got = runCalls(t, b, vus, calls, constant, prepared)
	checkCounts(t, srv, before, got, "constant", 200, vus, calls)
}

// TestPluginOfWireVersion2: a plugin built with the SDK of wire version 2
// runs at version 2, end to end: the handshake agrees on 2, it describes
// itself as before, Prepare says why it cannot (that wire has no
// Prepare), and the calls, constant and dynamic, go with their requests
// whole and reach the server as counted. Two such plugins: the fake
// protocol built with that SDK itself, frozen in testdata/sdkv2, and the
// current SDK serving version 2 only, which must answer as that one did.
func TestPluginOfWireVersion2(t *testing.T) {
	for _, tc := range []struct {
		name string
		path string
		args []string
	}{
		{"built with the SDK of wire version 2", fakeBinV2, nil},
		{"current SDK serving version 2", fakeBin, []string{"v2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newCountingServer(t)
			p, err := Launch(context.Background(), LaunchSpec{Name: "fake", Path: tc.path, Args: tc.args})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Kill()
			if v := p.ProtocolVersion(); v != 2 {
				t.Fatalf("agreed on wire version %d, want 2", v)
			}
			d := Describe(p)
			if d.ProtocolVersion != 2 || d.SDKVersion != "0.1.0" || d.Name != "fake" || len(d.TargetSchema) != 1 || len(d.RequestSchema) != 1 {
				t.Errorf("Describe = %+v, want the fake protocol at wire version 2, SDK 0.1.0", d)
			}
			// A plugin that declares no descriptions and defaults, as one
			// built before them, describes as it did: no such keys in the JSON.
			if b, err := json.Marshal(d); err != nil || strings.Contains(string(b), `"description"`) || strings.Contains(string(b), `"default"`) {
				t.Errorf("describe JSON %s, %v: want no description or default", b, err)
			}
			if attr, err := p.ValidateTarget(cty.ObjectVal(map[string]cty.Value{"address": cty.StringVal("bad")})); attr != "address" || err == nil {
				t.Errorf("ValidateTarget(bad) = %q, %v; want the plugin's refusal of address", attr, err)
			}
			c, err := p.Open(context.Background(), cty.ObjectVal(map[string]cty.Value{"address": cty.StringVal(srv.URL)}))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			constant := message("constant")
			prepared, err := c.(protocols.Preparer).Prepare(constant)
			if err == nil || !strings.Contains(err.Error(), "wire version 2") {
				t.Errorf("Prepare = %v, %v; want an error naming wire version 2", prepared, err)
			}
			const vus, calls = 10, 40
			got := runCalls(t, c, vus, calls, constant, prepared)
			checkCounts(t, srv, nil, got, "constant", 200, vus, calls)
		})
	}
}

// TestSteadyVersions: go-plugin lists hload's versions from a map, in any
// order; the refusal lists them sorted, so it reads the same every time.
func TestSteadyVersions(t *testing.T) {
	base := errors.New("Incompatible API version with plugin. Plugin version: 4, Client versions: [3 2]")
	err := steadyVersions(base)
	if want := "Incompatible API version with plugin. Plugin version: 4, Client versions: [2 3]"; err.Error() != want {
		t.Errorf("got %q, want %q", err, want)
	}
	if !errors.Is(err, base) {
		t.Error("the sorted error does not wrap go-plugin's")
	}
	other := errors.New("plugin exited before we could connect")
	if steadyVersions(other) != other {
		t.Error("an error without versions changed")
	}
}

// TestPluginTemplates: through a plugin process, a request evaluated per
// call goes as a template with its holes' values when both ends speak
// wire version 4 (the fake client answers 206 to such a call, with the
// hole's message), and whole to a plugin of version 3, which is never
// asked for a template: the host says why. From many VUs at once, the
// server counts every message as many times as hload does.
func TestPluginTemplates(t *testing.T) {
	for _, tc := range []struct {
		mode    string
		version int
		status  int // of the dynamic calls
	}{
		{"serve", ProtocolVersion, 206},
		{"v3", 3, 200},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			srv := newCountingServer(t)
			p, err := Launch(context.Background(), LaunchSpec{Name: "fake", Path: fakeBin, Args: []string{tc.mode}})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Kill()
			if v := p.ProtocolVersion(); v != tc.version {
				t.Fatalf("agreed on wire version %d, want %d", v, tc.version)
			}
			c, err := p.Open(context.Background(), cty.ObjectVal(map[string]cty.Value{"address": cty.StringVal(srv.URL)}))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			shape := cty.ObjectVal(map[string]cty.Value{"message": cty.DynamicVal})
			tmpl, err := c.(protocols.Templater).Template(shape, 1)
			if tc.version >= 4 && err != nil {
				t.Fatalf("Template: %v", err)
			}
			if tc.version < 4 && (err == nil || !strings.Contains(err.Error(), "wire version before 4")) {
				t.Fatalf("Template = %v, %v; want an error naming the wire version", tmpl, err)
			}
			const vus, calls = 10, 40
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			var mu sync.Mutex
			got := make(map[string][]int)
			var wg sync.WaitGroup
			for vu := 1; vu <= vus; vu++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for it := range calls {
						msg := fmt.Sprintf("t-%d-%d", vu, it)
						call := protocols.Call{VU: uint64(vu), Iteration: uint64(it), KeepBody: true}
						if tmpl != nil {
							call.Prepared, call.Holes = tmpl, []cty.Value{cty.StringVal(msg)}
						} else {
							call.Request = message(msg) // as the core sends it when Template failed
						}
						c.Do(ctx, call, func(s protocols.Sample) {
							mu.Lock()
							got[string(s.Body)] = append(got[string(s.Body)], s.Status)
							mu.Unlock()
						})
					}
				}()
			}
			wg.Wait()
			counts, total := srv.snapshot()
			if total != vus*calls {
				t.Errorf("the server counted %d requests for %d calls", total, vus*calls)
			}
			for vu := 1; vu <= vus; vu++ {
				for it := range calls {
					msg := fmt.Sprintf("t-%d-%d", vu, it)
					if s := got[msg]; len(s) != 1 || s[0] != tc.status || counts["/"+msg] != 1 {
						t.Fatalf("message %q: statuses %v, the server counted %d; want one %d", msg, s, counts["/"+msg], tc.status)
					}
				}
			}
		})
	}
}
