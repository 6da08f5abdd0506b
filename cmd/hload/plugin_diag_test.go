package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// The noisy test plugin, built once per test binary.
var noisyPlugin struct {
	once sync.Once
	bin  string
	err  error
}

// noisyCopy builds the noisy plugin once and copies it into a folder of
// the test; it returns the copy's path and sha256.
func noisyCopy(t *testing.T) (string, string) {
	t.Helper()
	noisyPlugin.once.Do(func() {
		noisyPlugin.bin = filepath.Join(filepath.Dir(hloadBin), "noisy")
		if out, err := exec.Command("go", "build", "-o", noisyPlugin.bin, "./testdata/plugins/noisy").CombinedOutput(); err != nil {
			noisyPlugin.err = fmt.Errorf("building the noisy plugin: %v\n%s", err, out)
		}
	})
	if noisyPlugin.err != nil {
		t.Fatal(noisyPlugin.err)
	}
	data, err := os.ReadFile(noisyPlugin.bin)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "hload-plugin-noisy")
	if err := os.WriteFile(path, data, 0o755); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	t.Cleanup(func() { killLeftovers(t, path) })
	return path, hex.EncodeToString(sum[:])
}

// noisyTest is a test file of the noisy plugin: 2 VUs for duration.
func noisyTest(bin, sum, target, duration string) string {
	return noisyTestStop(bin, sum, target, duration, "")
}

// noisyTestStop is noisyTest with extra scenario attributes.
func noisyTestStop(bin, sum, target, duration, extra string) string {
	return fmt.Sprintf(`
plugin "noisy" {
  source = %q
  sha256 = %q
}
target "t" {
  protocol = "noisy"
  %s
}
scenario "s" {
  executor = "constant-vus"
  vus      = 2
  duration = %q
  %s
  request "r" {
    payload = "x"
  }
}
sink "csv" {
  path = "out.csv"
}
`, bin, sum, target, duration, extra)
}

// hloadEnv runs hload in dir with extra environment, bounded by pluginLimit.
func hloadEnv(t *testing.T, dir string, env []string, args ...string) result {
	t.Helper()
	cmd := exec.Command(hloadBin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	timer := time.AfterFunc(pluginLimit, func() { cmd.Process.Kill() })
	defer timer.Stop()
	return wait(t, cmd, &stdout, &stderr)
}

// pluginCalls is the count of calls the noisy plugin itself wrote.
func pluginCalls(t *testing.T, bin string) int64 {
	t.Helper()
	b, err := os.ReadFile(bin + ".calls")
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestPluginDiagnostics (Must show 2 of issue 16): what a plugin writes to
// os.Stderr, through log, and the stack of a panic the SDK recovered each
// show on hload's stderr, a line per line, prefixed with the plugin's
// name, and never on stdout; a plugin that crashes fails the run with
// exit 1 and its last stderr lines, the runtime's panic among them; and
// HLOAD_CPUPROFILE profiles the plugin as it does hload.
func TestPluginDiagnostics(t *testing.T) {
	if testing.Short() {
		t.Skip("two 1 to 3 s end-to-end runs; scripts/test.sh runs it without -short")
	}
	bin, sum := noisyCopy(t)

	t.Run("panic in Do", func(t *testing.T) {
		dir := t.TempDir()
		writeFile(t, dir, "test.hcl", noisyTest(bin, sum, "panic_at = 20", "1s"))
		prof := filepath.Join(dir, "cpu")
		r := hloadEnv(t, dir, []string{"HLOAD_CPUPROFILE=" + prof}, "apply", "test.hcl", "--summary-export", "summary.json")
		noLeftovers(t, bin)
		for _, w := range []string{
			"plugin noisy: noisy: opened, pid ",
			"plugin noisy: hload plugin: Do panicked: noisy: panic on purpose in call 20",
			"plugin noisy: goroutine ",
		} {
			if !strings.Contains(r.stderr, w) {
				t.Errorf("hload's stderr lacks %q\nstderr:\n%s", w, r.stderr)
			}
		}
		// log's lines carry its date and time.
		if !regexp.MustCompile(`(?m)^plugin noisy: \d{4}/\d\d/\d\d [0-9:]+ noisy: a line through the log package$`).MatchString(r.stderr) {
			t.Errorf("hload's stderr lacks the plugin's log line\nstderr:\n%s", r.stderr)
		}
		if strings.Contains(r.stdout, "plugin noisy:") || strings.Contains(r.stdout, "goroutine ") {
			t.Errorf("the plugin's stderr reached hload's stdout:\n%s", r.stdout)
		}
		s := readSummary(t, filepath.Join(dir, "summary.json"))
		req := s.Scenarios["s"].Requests["r"]
		if req == nil {
			t.Fatalf("no request r in the summary: %+v", s.Scenarios["s"])
		}
		calls := pluginCalls(t, bin)
		if req.Count != calls || req.ErrorsByKind["panic"] != 1 || req.Errors != 1 {
			t.Errorf("summary: %d requests, errors %v; the plugin counted %d calls, one of which panicked", req.Count, req.ErrorsByKind, calls)
		}

		// The panic is a warning: live, in the console's summary and in
		// the JSON summary, naming the plugin, the request and where.
		warning := `scenario "s", request "r": 1 calls panicked in protocol "noisy" (target "t"), counted as failed: Do panicked: noisy: panic on purpose in call 20 at main.(*client).Do (main.go:`
		if !slices.ContainsFunc(s.Warnings, func(w string) bool { return strings.HasPrefix(w, warning) }) {
			t.Errorf("the summary's warnings lack %q: %q", warning, s.Warnings)
		}
		live := regexp.MustCompile(`(?m)^\[ *\d+s\] WARNING: scenario "s", request "r": 1 calls so far panicked in protocol "noisy" \(target "t"\), counted as failed: Do panicked: noisy: panic on purpose in call 20 at main\.\(\*client\)\.Do \(main\.go:\d+\), called by `)
		if !live.MatchString(r.stdout) {
			t.Errorf("the live output lacks the panic's warning\nstdout:\n%s", r.stdout)
		}
		if _, after, ok := strings.Cut(r.stdout, "\nwarnings\n"); !ok || !strings.Contains(after, warning) {
			t.Errorf("the console summary's warnings lack %q\nstdout:\n%s", warning, r.stdout)
		}

		// The plugin's pid, as it wrote it, names its profile.
		m := regexp.MustCompile(`noisy: opened, pid (\d+)`).FindStringSubmatch(r.stderr)
		if m == nil {
			t.Fatal("no pid line")
		}
		st, err := os.Stat(prof + "." + m[1])
		if err != nil || st.Size() == 0 {
			t.Errorf("no CPU profile of the plugin (pid %s) with HLOAD_CPUPROFILE: %v", m[1], err)
		}
		t.Logf("exit %d; %d calls by the plugin's count, %d in the summary, errors %v; profile %s.%s\nwarnings: %q\nstdout:\n%s\nstderr:\n%s", r.code, calls, req.Count, req.ErrorsByKind, prof, m[1], s.Warnings, r.stdout, r.stderr)
	})

	t.Run("panic in Do after its sample", func(t *testing.T) {
		dir := t.TempDir()
		writeFile(t, dir, "test.hcl", noisyTest(bin, sum, "late_panic_at = 20", "1s"))
		r := hloadEnv(t, dir, nil, "apply", "test.hcl", "--summary-export", "summary.json")
		noLeftovers(t, bin)
		s := readSummary(t, filepath.Join(dir, "summary.json"))
		req := s.Scenarios["s"].Requests["r"]
		if req == nil {
			t.Fatalf("no request r in the summary: %+v", s.Scenarios["s"])
		}
		// The call had emitted a success; it counts once, as a panic.
		calls := pluginCalls(t, bin)
		if req.Count != calls || req.ErrorsByKind["panic"] != 1 || req.Errors != 1 {
			t.Errorf("summary: %d requests, errors %v; the plugin counted %d calls, one of which panicked after its sample", req.Count, req.ErrorsByKind, calls)
		}
		warning := `scenario "s", request "r": 1 calls panicked in protocol "noisy" (target "t"), counted as failed: Do panicked: noisy: panic after its sample in call 20 at main.(*client).Do (main.go:`
		if !slices.ContainsFunc(s.Warnings, func(w string) bool { return strings.HasPrefix(w, warning) }) {
			t.Errorf("the summary's warnings lack %q: %q\nstdout:\n%s\nstderr:\n%s", warning, s.Warnings, r.stdout, r.stderr)
		}
		if !strings.Contains(r.stdout, "WARNING: "+strings.Replace(warning, "1 calls", "1 calls so far", 1)) {
			t.Errorf("the live output lacks the panic's warning\nstdout:\n%s", r.stdout)
		}
		t.Logf("exit %d; %d calls by the plugin's count, %d in the summary, errors %v\nwarnings: %q", r.code, calls, req.Count, req.ErrorsByKind, s.Warnings)
	})

	t.Run("crash", func(t *testing.T) {
		dir := t.TempDir()
		writeFile(t, dir, "test.hcl", noisyTest(bin, sum, "panic_at = 20\n  crash_at = 60", "30s"))
		r := hloadEnv(t, dir, nil, "apply", "test.hcl", "--summary-export", "summary.json")
		noLeftovers(t, bin)
		if r.code != exitRuntime {
			t.Errorf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, exitRuntime, r.stdout, r.stderr)
		}
		// Each line once as it came, and the crash's in the failure message.
		for _, w := range []string{
			"plugin noisy: noisy: opened, pid ",
			"plugin noisy: noisy: crashing in call 60",
			"plugin noisy: panic: noisy: crash outside the SDK in call 60",
		} {
			if !strings.Contains(r.stderr, w) {
				t.Errorf("hload's stderr lacks %q\nstderr:\n%s", w, r.stderr)
			}
		}
		_, msg, ok := strings.Cut(r.stderr, "last stderr lines:")
		if !ok || !strings.Contains(msg, "\n  panic: noisy: crash outside the SDK in call 60") || !strings.Contains(msg, "\n  goroutine ") {
			t.Errorf("the failure message lacks the crash's last stderr lines\nstderr:\n%s", r.stderr)
		}
		req := checkPartial(t, dir)
		if calls := pluginCalls(t, bin); req.Count < calls-2 {
			t.Errorf("summary: %d requests; the plugin counted %d calls before its crash", req.Count, calls)
		}
		t.Logf("exit %d; summary %d requests, errors %v; the plugin counted %d calls\nstderr:\n%s", r.code, req.Count, req.ErrorsByKind, pluginCalls(t, bin), r.stderr)
	})

	t.Run("ignored cancellation", func(t *testing.T) {
		dir := t.TempDir()
		writeFile(t, dir, "test.hcl", noisyTestStop(bin, sum, "stuck_at = 30", "1s", `graceful_stop = "0s"`))
		started := time.Now()
		r := hloadEnv(t, dir, nil, "apply", "test.hcl", "--summary-export", "summary.json")
		took := time.Since(started)
		noLeftovers(t, bin)
		s := readSummary(t, filepath.Join(dir, "summary.json"))
		// core's warning of calls that ignore cancellation covers a
		// plugin's: the plugin's client waits for the plugin to confirm
		// longer than the core waits for the call.
		warning := `scenario "s": 1 calls ignored cancellation (1 of request "r" (target "t", protocol "noisy")): still running 1s after the graceful stop ran out`
		if !slices.ContainsFunc(s.Warnings, func(w string) bool { return strings.HasPrefix(w, warning) }) {
			t.Errorf("the summary's warnings lack %q: %q", warning, s.Warnings)
		}
		if _, after, ok := strings.Cut(r.stdout, "\nwarnings\n"); !ok || !strings.Contains(after, warning) {
			t.Errorf("the console summary's warnings lack %q\nstdout:\n%s", warning, r.stdout)
		}
		if !regexp.MustCompile(`(?m)^\[ *\d+s\] WARNING: ` + regexp.QuoteMeta(warning)).MatchString(r.stdout) {
			t.Errorf("the live output lacks %q\nstdout:\n%s", warning, r.stdout)
		}
		if !strings.Contains(r.stdout, "Read the 1 warning(s) above") {
			t.Errorf("the verdict does not point at the warning\nstdout:\n%s", r.stdout)
		}
		req := s.Scenarios["s"].Requests["r"]
		// The stuck call is not in the figures; the plugin counted it.
		if calls := pluginCalls(t, bin); req == nil || req.Count != calls-1 {
			t.Errorf("summary: %+v; the plugin counted %d calls, one of them stuck", req, calls)
		}
		t.Logf("exit %d after %v; %d requests in the summary, %d calls by the plugin's count; warnings %q", r.code, took.Round(time.Millisecond), req.Count, pluginCalls(t, bin), s.Warnings)
	})
}
