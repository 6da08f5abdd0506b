package main

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hload/hload/core/metrics"
)

// hloadBin is the hload binary built once for the end-to-end tests, which
// run it as a user would: exit codes and signals are process-level.
var hloadBin string

func TestMain(m *testing.M) {
	if os.Getenv(benchServerEnv) == "1" {
		serveBench()
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
		{"sink cannot start", []string{"apply", "--quiet", "test.hcl", base, "--var", "duration=1s"}, 1, "sink"},
		{"influxdb unreachable", []string{"apply", "--quiet", "influx.hcl", base}, 1, "does not answer"},
		{"validate bad sink setting", []string{"validate", "badsink.hcl", base}, 2, `"buffer" must be a positive whole number`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := dir
			if tc.name == "sink cannot start" {
				// out.csv is a directory here, so the CSV sink cannot open it.
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

// csvCount adds up the count column of an interval CSV.
func csvCount(t *testing.T, path string) int64 {
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
	col := -1
	for i, h := range rows[0] {
		if h == "count" {
			col = i
		}
	}
	if col < 0 {
		t.Fatalf("no count column in %v", rows[0])
	}
	var total int64
	for _, row := range rows[1:] {
		n, err := strconv.ParseInt(row[col], 10, 64)
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
