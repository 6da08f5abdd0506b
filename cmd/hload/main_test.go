package main

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
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

	"github.com/hload/hload/config"
	"github.com/hload/hload/metrics"
)

// hloadBin is the hload binary built once for the end-to-end tests, which
// run it as a user would: exit codes and signals are process-level.
var hloadBin string

func TestMain(m *testing.M) {
	if os.Getenv(benchServerEnv) == "1" {
		serveBench()
		return
	}
	if spec := os.Getenv(viewersEnv); spec != "" {
		playViewers(spec)
		return
	}
	dir, err := os.MkdirTemp("", "hload-bin")
	if err != nil {
		panic(err)
	}
	hloadBin = filepath.Join(dir, "hload")
	if out, err := exec.Command("go", "build", "-o", hloadBin, ".").CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		panic("building hload: " + err.Error() + "\n" + string(out))
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

type result struct {
	code           int
	stdout, stderr string
}

// hload runs the binary in dir with a bound on its time.
func hload(t *testing.T, dir string, args ...string) result {
	t.Helper()
	cmd := exec.Command(hloadBin, args...)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	timer := time.AfterFunc(2*time.Minute, func() { cmd.Process.Kill() })
	defer timer.Stop()
	return wait(t, cmd, &stdout, &stderr)
}

func wait(t *testing.T, cmd *exec.Cmd, stdout, stderr *bytes.Buffer) result {
	t.Helper()
	err := cmd.Wait()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return result{code: code, stdout: stdout.String(), stderr: stderr.String()}
}

func okServer(t *testing.T) (*httptest.Server, *atomic.Int64) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		time.Sleep(2 * time.Millisecond)
		w.Write([]byte("ok"))
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

const smallTest = `
variable "base_url" {}
variable "duration" {
  default = "1s"
}
variable "limit" {
  default = "5s"
}
target "t" {
  base_url = var.base_url
}
scenario "s" {
  executor = "constant-vus"
  vus      = 3
  duration = var.duration
  request "r" {
    path = "/r"
    check {
      status = [200]
    }
  }
}
threshold {
  metric    = "latency"
  condition = "p95 < ${var.limit}"
}
sink "csv" {
  path = "out.csv"
}
`

func TestExitCodes(t *testing.T) {
	srv, _ := okServer(t)
	dir := t.TempDir()
	writeFile(t, dir, "test.hcl", smallTest)
	writeFile(t, dir, "broken.hcl", "scenario \"s\" {\n  executor = \"nope\"\n}\n")
	writeFile(t, dir, "badsink.hcl", strings.Replace(smallTest, "sink \"csv\" {\n  path = \"out.csv\"\n}",
		"sink \"influxdb\" {\n  url = \"http://127.0.0.1:1\"\n  bucket = \"hload\"\n  buffer = -5\n}", 1))
	// Port 1 on loopback: nothing listens there.
	writeFile(t, dir, "influx.hcl", strings.Replace(smallTest, "sink \"csv\" {\n  path = \"out.csv\"\n}",
		"sink \"influxdb\" {\n  url = \"http://127.0.0.1:1\"\n  bucket = \"hload\"\n}", 1))
	base := "--var=base_url=" + srv.URL
	cases := []struct {
		name string
		args []string
		code int
		out  string // expected in stdout or stderr
	}{
		{"passing run", []string{"apply", "--quiet", "test.hcl", base}, 0, "PASS"},
		{"failing threshold", []string{"apply", "--quiet", "test.hcl", base, "--var", "limit=1us"}, 99, "FAIL"},
		{"bad config", []string{"apply", "broken.hcl"}, 2, "on broken.hcl line 2"},
		{"missing file", []string{"apply", "nope.hcl"}, 2, "nope.hcl"},
		{"unknown flag", []string{"apply", "--bogus", "test.hcl"}, 2, "bogus"},
		{"bad segment", []string{"apply", "--segment", "4/3", "test.hcl", base}, 2, "--segment"},
		{"unknown var", []string{"validate", "test.hcl", base, "--var", "nope=1"}, 2, "nope"},
		{"validate ok", []string{"validate", "test.hcl", base}, 0, "valid"},
		{"validate broken", []string{"validate", "broken.hcl"}, 2, "executor"},
		{"plan", []string{"plan", "test.hcl", base}, 0, "constant-vus"},
		{"unknown command", []string{"launch"}, 2, "unknown command"},
		{"sink path is a folder", []string{"apply", "--quiet", "test.hcl", base, "--var", "duration=1s"}, 2, `test.hcl:27,1-11: sink "csv": out.csv is a folder, not a file`},
		{"influxdb unreachable", []string{"apply", "--quiet", "influx.hcl", base}, 1, "does not answer"},
		{"validate bad sink setting", []string{"validate", "badsink.hcl", base}, 2, `"buffer" must be a positive whole number`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := dir
			if tc.name == "sink path is a folder" {
				// out.csv is a directory here, found before any load.
				d = t.TempDir()
				writeFile(t, d, "test.hcl", smallTest)
				os.Mkdir(filepath.Join(d, "out.csv"), 0o755)
			}
			r := hload(t, d, tc.args...)
			if r.code != tc.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, tc.code, r.stdout, r.stderr)
			}
			if !strings.Contains(r.stdout+r.stderr, tc.out) {
				t.Fatalf("output lacks %q\nstdout:\n%s\nstderr:\n%s", tc.out, r.stdout, r.stderr)
			}
			if strings.Contains(r.stderr, "panic") {
				t.Fatalf("panic:\n%s", r.stderr)
			}
		})
	}
}

// TestExamples keeps every example valid, and shows the open model's plan.
func TestExamples(t *testing.T) {
	examples, err := filepath.Glob("../../examples/*.hcl")
	if err != nil || len(examples) == 0 {
		t.Fatalf("no examples: %v", err)
	}
	for _, ex := range examples {
		t.Run(filepath.Base(ex), func(t *testing.T) {
			if r := hload(t, ".", "validate", ex); r.code != 0 {
				t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
			}
		})
	}
	r := hload(t, ".", "plan", "../../examples/open-model.hcl", "--latency", "50ms")
	for _, want := range []string{"open model", "2550 planned", "20/s", "200/s", "at 50ms", "10 VUs", "Little's law"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("plan lacks %q:\n%s", want, r.stdout)
		}
	}
}

// TestInterruptIsGraceful sends SIGINT in the middle of a 60 s run: exit
// 130, the summary is printed, and the CSV's counts equal the summary's.
func TestInterruptIsGraceful(t *testing.T) {
	srv, served := okServer(t)
	dir := t.TempDir()
	writeFile(t, dir, "test.hcl", smallTest)
	cmd := exec.Command(hloadBin, "apply", "test.hcl", "--var", "base_url="+srv.URL,
		"--var", "duration=60s", "--summary-export", "summary.json")
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	kill := time.AfterFunc(time.Minute, func() { cmd.Process.Kill() })
	defer kill.Stop()
	time.Sleep(2500 * time.Millisecond)
	cmd.Process.Signal(syscall.SIGINT)
	start := time.Now()
	r := wait(t, cmd, &stdout, &stderr)
	if r.code != 130 {
		t.Fatalf("exit %d, want 130\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Fatalf("stopping took %v", took)
	}
	if !strings.Contains(r.stdout, "INTERRUPTED") {
		t.Fatalf("summary does not say it was interrupted:\n%s", r.stdout)
	}

	var sum metrics.Summary
	data, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &sum); err != nil {
		t.Fatal(err)
	}
	want := sum.Scenarios["s"].Requests["r"].Count
	if want == 0 || want != served.Load() {
		t.Fatalf("summary count %d, server count %d", want, served.Load())
	}
	if got := csvCount(t, filepath.Join(dir, "out.csv")); got != want {
		t.Fatalf("CSV rows add up to %d, summary says %d", got, want)
	}
	t.Logf("interrupted after ~2.5s: %d requests in summary, CSV and server alike", want)
}

// csvCount adds up the count column of an interval CSV's request rows:
// flow rows (kind "flow") count flows, not requests.
func csvCount(t *testing.T, path string) int64 {
	t.Helper()
	var total int64
	for _, row := range csvRows(t, path) {
		if row["kind"] != "request" {
			continue
		}
		n, err := strconv.ParseInt(row["count"], 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		total += n
	}
	return total
}

// TestQuickstart runs the README's first command end to end against the
// embedded demo shop.
func TestQuickstart(t *testing.T) {
	if testing.Short() {
		t.Skip("25 s end-to-end run; scripts/test.sh runs it without -short")
	}
	dir := t.TempDir()
	examples, err := filepath.Abs("../../examples")
	if err != nil {
		t.Fatal(err)
	}
	r := hload(t, dir, "apply", filepath.Join(examples, "quickstart.hcl"), "--summary-export", "summary.json")
	if r.code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	for _, name := range []string{"main", "login", "list", "detail", "order"} {
		if !strings.Contains(r.stdout, name) {
			t.Errorf("summary lacks request %q", name)
		}
	}
	var sum metrics.Summary
	data, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &sum); err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, req := range sum.Scenarios["shop"].Requests {
		total += req.Count
	}
	if got := csvCount(t, filepath.Join(dir, "quickstart-results.csv")); got != total || total == 0 {
		t.Fatalf("CSV adds up to %d, summary %d", got, total)
	}
	// Every pick of the deterministic picker is one call, so the first
	// total picks of its cycle give each request's count exactly.
	names := []string{"main", "login", "list", "detail", "order"}
	for i, want := range smoothCounts([]int{60, 5, 20, 10, 5}, total) {
		if got := sum.Scenarios["shop"].Requests[names[i]].Count; got != want {
			t.Errorf("%s: %d calls of %d, want exactly %d from the picker's cycle", names[i], got, total, want)
		}
	}
	t.Logf("quickstart: %d requests\n%s", total, r.stdout)
}

// TestReadmeExample keeps the README's test file valid: the first hcl
// block after "## A test file".
func TestReadmeExample(t *testing.T) {
	data, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(data), "## A test file")
	_, rest, ok2 := strings.Cut(rest, "```hcl\n")
	block, _, ok3 := strings.Cut(rest, "```")
	if !ok || !ok2 || !ok3 {
		t.Fatal("README.md has no hcl block under \"## A test file\"")
	}
	dir := t.TempDir()
	writeFile(t, dir, "readme.hcl", block)
	if r := hload(t, dir, "validate", "readme.hcl"); r.code != 0 {
		t.Fatalf("the README's example does not validate (exit %d):\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// exportedSummary reads a --summary-export file.
func exportedSummary(t testing.TB, path string) *metrics.Summary {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var sum metrics.Summary
	if err := json.Unmarshal(data, &sum); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return &sum
}

// pathCounter is a loopback server that counts requests per path.
type pathCounter struct {
	*httptest.Server
	mu     sync.Mutex
	counts map[string]int64
}

func newPathCounter(t *testing.T, handler http.HandlerFunc) *pathCounter {
	pc := &pathCounter{counts: map[string]int64{}}
	pc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		pc.mu.Lock()
		pc.counts[r.URL.Path]++
		pc.mu.Unlock()
		if handler != nil {
			handler(w, r)
		}
	}))
	t.Cleanup(pc.Close)
	return pc
}

func (pc *pathCounter) count(path string) int64 {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	return pc.counts[path]
}

// TestMixExact runs the 60/5/20/10/5 mix through the binary: 1,000
// iterations are 10 whole cycles of the deterministic picker, so the
// server receives each request exactly 10 times its reduced weight, and
// the summary counts the same. A weighted-random picker would be off.
func TestMixExact(t *testing.T) {
	srv := newPathCounter(t, nil)
	dir := t.TempDir()
	writeFile(t, dir, "mix.hcl", `
variable "base_url" {}
target "t" {
  base_url = var.base_url
}
scenario "mix" {
  executor   = "iterations"
  vus        = 4
  iterations = 250
  request "main" {
    weight = 60
    path   = "/main"
  }
  request "login" {
    weight = 5
    path   = "/login"
  }
  request "list" {
    weight = 20
    path   = "/list"
  }
  request "detail" {
    weight = 10
    path   = "/detail"
  }
  request "order" {
    weight = 5
    path   = "/order"
  }
}
`)
	r := hload(t, dir, "apply", "--quiet", "mix.hcl", "--var", "base_url="+srv.URL, "--summary-export", "summary.json")
	if r.code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	sum := exportedSummary(t, filepath.Join(dir, "summary.json"))
	for name, want := range map[string]int64{"main": 600, "login": 50, "list": 200, "detail": 100, "order": 50} {
		got := sum.Scenarios["mix"].Requests[name]
		if got == nil {
			t.Fatalf("summary lacks %q", name)
		}
		if server := srv.count("/" + name); got.Count != want || server != want {
			t.Errorf("%s: summary %d, server %d, want exactly %d", name, got.Count, server, want)
		}
	}
}

// TestSinkFailureInSummaryJSON: a CSV sink on a full disk (/dev/full)
// fails; hload exits 1, and the exported summary and the console say the
// run did not pass, and why.
func TestSinkFailureInSummaryJSON(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full on this system")
	}
	srv, served := okServer(t)
	dir := t.TempDir()
	writeFile(t, dir, "test.hcl", strings.Replace(smallTest, `path = "out.csv"`, `path = "/dev/full"`, 1))
	r := hload(t, dir, "apply", "test.hcl", "--var", "base_url="+srv.URL, "--summary-export", "summary.json")
	if r.code != 1 {
		t.Fatalf("exit %d, want 1\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	sum := exportedSummary(t, filepath.Join(dir, "summary.json"))
	if sum.Passed || len(sum.SinkErrors) == 0 || !strings.Contains(sum.SinkErrors[0], "no space left on device") {
		t.Errorf("summary JSON: passed %v, sink_errors %q; want false and the CSV sink's error", sum.Passed, sum.SinkErrors)
	}
	if !strings.Contains(r.stdout, "FAIL: a sink failed") || strings.Contains(r.stdout, "PASS:") {
		t.Errorf("the console's verdict does not name the failed sink:\n%s", r.stdout)
	}
	if n := sum.Scenarios["s"].Requests["r"].Count; n != served.Load() || n == 0 {
		t.Errorf("summary %d requests, server %d", n, served.Load())
	}
}

// TestEveryCallFailedDoesNotPass: against a port where nothing listens,
// every call fails; hload does not print PASS, and exits 99.
func TestEveryCallFailedDoesNotPass(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String()
	ln.Close() // nothing listens there now: every call is refused
	dir := t.TempDir()
	writeFile(t, dir, "test.hcl", strings.Replace(smallTest, "sink \"csv\" {\n  path = \"out.csv\"\n}", "", 1))
	r := hload(t, dir, "apply", "test.hcl", "--var", "base_url="+url, "--summary-export", "summary.json")
	if r.code != exitThreshold {
		t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, exitThreshold, r.stdout, r.stderr)
	}
	sum := exportedSummary(t, filepath.Join(dir, "summary.json"))
	req := sum.Scenarios["s"].Requests["r"]
	if sum.Passed || req.Count == 0 || req.Errors != req.Count {
		t.Errorf("passed %v, %d errors of %d calls", sum.Passed, req.Errors, req.Count)
	}
	if strings.Contains(r.stdout, "PASS:") || !strings.Contains(r.stdout, "calls failed; see the errors by kind above") {
		t.Errorf("the console's verdict:\n%s", r.stdout)
	}
}

// TestLastIntervalRateEndToEnd: a server holds every request until just
// after the scenario's planned end, so all the run's calls end within
// milliseconds after the last tick. The last progress line and the last
// CSV row give them a rate over a real length (about 20/s), not over
// those milliseconds (about 1,000/s); the CSV's counts still add up to
// the server's.
func TestLastIntervalRateEndToEnd(t *testing.T) {
	var once sync.Once
	release := make(chan struct{})
	srv := newPathCounter(t, func(w http.ResponseWriter, r *http.Request) {
		once.Do(func() { time.AfterFunc(1020*time.Millisecond, func() { close(release) }) })
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	dir := t.TempDir()
	writeFile(t, dir, "test.hcl", `
variable "base_url" {}
target "t" {
  base_url = var.base_url
}
scenario "s" {
  executor = "constant-vus"
  vus      = 20
  duration = "1s"
  request "r" {
    path = "/held"
  }
}
sink "csv" {
  path = "out.csv"
}
`)
	r := hload(t, dir, "apply", "test.hcl", "--var", "base_url="+srv.URL)
	if r.code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if got, want := csvCount(t, filepath.Join(dir, "out.csv")), srv.count("/held"); got != want || want != 20 {
		t.Fatalf("CSV adds up to %d, server %d, want 20", got, want)
	}
	rows := csvRows(t, filepath.Join(dir, "out.csv"))
	last := rows[len(rows)-1]
	rps, err := strconv.ParseFloat(last["rps"], 64)
	if err != nil {
		t.Fatal(err)
	}
	var progress []string
	for _, line := range strings.Split(r.stdout, "\n") {
		if strings.HasPrefix(line, "[") {
			progress = append(progress, line)
		}
	}
	t.Logf("last CSV row: count %s, rps %s; last progress line %q", last["count"], last["rps"], progress[len(progress)-1])
	if rps > 50 {
		t.Errorf("the last CSV row has %s calls at %.0f/s", last["count"], rps)
	}
	_, after, _ := strings.Cut(progress[len(progress)-1], " rps ")
	lineRPS, _, _ := strings.Cut(after, " ")
	if n, err := strconv.Atoi(lineRPS); err != nil || n > 50 {
		t.Errorf("the last progress line reads %q", progress[len(progress)-1])
	}
}

// csvRows reads an interval CSV as maps from column to value.
func csvRows(t *testing.T, path string) []map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]string
	for _, row := range rows[1:] {
		m := map[string]string{}
		for i, h := range rows[0] {
			m[h] = row[i]
		}
		out = append(out, m)
	}
	return out
}

// smoothCounts counts the requests of the first n picks of smooth weighted
// round-robin (nginx's), as core's picker makes them, written again here so
// that a change to the picker shows: the weights reduced as config reduces
// them, and at each pick every request gains its weight and the one with
// the most (the first on a tie) is picked and loses the total.
func smoothCounts(weights []int, n int64) []int64 {
	reduced, total := config.ReduceWeights(weights)
	current := make([]int, len(reduced))
	counts := make([]int64, len(reduced))
	for range n {
		best := 0
		for i, w := range reduced {
			current[i] += w
			if current[i] > current[best] {
				best = i
			}
		}
		current[best] -= total
		counts[best]++
	}
	return counts
}
