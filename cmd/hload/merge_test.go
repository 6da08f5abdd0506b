package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	hdr "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/hload/hload/metrics"
)

// rowCounter is a loopback server that counts requests per path and per
// feeder row (the row query parameter), and answers 500 to the rows fail
// says.
type rowCounter struct {
	*pathCounter
	mu   sync.Mutex
	rows map[string]int
}

func newRowCounter(t *testing.T, fail func(row int) bool) *rowCounter {
	rc := &rowCounter{rows: map[string]int{}}
	rc.pathCounter = newPathCounter(t, func(w http.ResponseWriter, r *http.Request) {
		row := r.URL.Query().Get("row")
		n, _ := strconv.Atoi(row)
		if row != "" {
			rc.mu.Lock()
			rc.rows[row]++
			rc.mu.Unlock()
		}
		// Latencies spread over a few ms, so percentiles mean something.
		time.Sleep(time.Duration(500+(n%7)*400) * time.Microsecond)
		if row != "" && fail != nil && fail(n) {
			w.WriteHeader(http.StatusInternalServerError)
		}
		w.Write([]byte("ok"))
	})
	return rc
}

// usersCSV writes a feeder file of n rows, ids 0 to n-1.
func usersCSV(t *testing.T, dir string, n int) {
	var b strings.Builder
	b.WriteString("id\n")
	for i := range n {
		fmt.Fprintf(&b, "%d\n", i)
	}
	writeFile(t, dir, "users.csv", b.String())
}

// runSegments runs file as n segment processes, each in its own folder
// (for its sinks' files) with --segment i/n and one --start-at, as n
// machines or n pods would, and returns each one's result and export.
func runSegments(t *testing.T, dir, file string, n int, args ...string) ([]result, []string) {
	t.Helper()
	start := time.Now().Add(2 * time.Second).UTC().Format(time.RFC3339Nano)
	cmds := make([]*exec.Cmd, n)
	outs := make([][2]*bytes.Buffer, n)
	exports := make([]string, n)
	for i := range n {
		seg := filepath.Join(dir, fmt.Sprintf("segment%d", i+1))
		if err := os.MkdirAll(seg, 0o755); err != nil {
			t.Fatal(err)
		}
		exports[i] = filepath.Join(seg, "result.json")
		cmd := exec.Command(hloadBin, append([]string{"apply", "--quiet", file,
			"--segment", fmt.Sprintf("%d/%d", i+1, n), "--start-at", start, "--summary-export", exports[i]}, args...)...)
		cmd.Dir = seg
		outs[i] = [2]*bytes.Buffer{{}, {}}
		cmd.Stdout, cmd.Stderr = outs[i][0], outs[i][1]
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds[i] = cmd
		timer := time.AfterFunc(time.Minute, func() { cmd.Process.Kill() })
		defer timer.Stop()
	}
	results := make([]result, n)
	for i, cmd := range cmds {
		results[i] = wait(t, cmd, outs[i][0], outs[i][1])
	}
	return results, exports
}

const mergeTest = `
variable "base_url" {}
data "csv" "users" {
  path = "users.csv"
  mode = "unique"
}
target "t" {
  base_url = var.base_url
}
scenario "closed" {
  executor   = "iterations"
  vus        = 6
  iterations = 20
  request "a" {
    path = "/closed?row=${data.users.id}"
  }
}
scenario "open" {
  executor          = "constant-arrival-rate"
  rate              = 50
  duration          = "2s"
  pre_allocated_vus = 4
  max_vus           = 20
  request "b" {
    path = "/open"
  }
}
sink "csv" {
  path = "intervals.csv"
  raw  = true
}
`

// rawLatencies reads the latency_us of every call of request in the raw
// CSV files into one histogram of the summary's geometry.
func rawLatencies(t *testing.T, files []string, request string) *hdr.Histogram {
	t.Helper()
	h := hdr.New(1, int64(time.Hour/time.Microsecond), 3)
	for _, f := range files {
		for _, row := range csvRows(t, f) {
			if row["request"] != request {
				continue
			}
			us, err := strconv.ParseInt(row["latency_us"], 10, 64)
			if err != nil {
				t.Fatalf("%s: latency_us %q", f, row["latency_us"])
			}
			h.RecordValue(max(us, 1))
		}
	}
	return h
}

// TestMergeFourSegments (issue 17, Must show 1): a test with a closed
// scenario, an open one and a unique feeder, run as four segment
// processes and merged, sends exactly what one run plans, as the server
// counted it; no unique row is used twice; and the merged percentiles are
// those of one histogram of every raw sample the four CSV sinks wrote.
// Merging the four results out of a stream of logs gives the same.
func TestMergeFourSegments(t *testing.T) {
	dir := t.TempDir()
	srv := newRowCounter(t, nil)
	usersCSV(t, dir, 200)
	file := writeFile(t, dir, "test.hcl", mergeTest)
	results, exports := runSegments(t, dir, file, 4, "--var", "base_url="+srv.URL)
	for i, r := range results {
		if r.code != 0 {
			t.Fatalf("segment %d/4: exit %d\n%s%s", i+1, r.code, r.stdout, r.stderr)
		}
	}
	merged := filepath.Join(dir, "merged.json")
	r := hload(t, dir, append([]string{"merge", "--summary-export", merged, "--html", filepath.Join(dir, "merged.html")}, exports...)...)
	if r.code != 0 {
		t.Fatalf("merge: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	sum := exportedSummary(t, merged)

	// The plan: 6 VUs x 20 iterations, and 50/s for 2 s.
	const closedPlan, openPlan = 6 * 20, 50 * 2
	a, b := sum.Scenarios["closed"].Requests["a"], sum.Scenarios["open"].Requests["b"]
	if a == nil || b == nil {
		t.Fatalf("merged summary lacks a request: %+v", sum.Scenarios)
	}
	if a.Count != closedPlan || srv.count("/closed") != closedPlan || sum.Scenarios["closed"].Iterations != closedPlan {
		t.Errorf("closed: merged count %d, iterations %d, server %d; the plan is %d",
			a.Count, sum.Scenarios["closed"].Iterations, srv.count("/closed"), closedPlan)
	}
	if b.Count != openPlan || srv.count("/open") != openPlan || sum.Scenarios["open"].Iterations != openPlan {
		t.Errorf("open: merged count %d, iterations %d, server %d; the plan is %d",
			b.Count, sum.Scenarios["open"].Iterations, srv.count("/open"), openPlan)
	}
	srv.mu.Lock()
	for row, n := range srv.rows {
		if n != 1 {
			t.Errorf("unique row %s used %d times", row, n)
		}
	}
	if len(srv.rows) != closedPlan {
		t.Errorf("%d distinct rows used; want %d, one per call", len(srv.rows), closedPlan)
	}
	srv.mu.Unlock()

	var raws []string
	for i := range 4 {
		raws = append(raws, filepath.Join(dir, fmt.Sprintf("segment%d", i+1), "intervals.raw.csv"))
	}
	for _, c := range []struct {
		name string
		got  *metrics.RequestFigures
	}{{"a", a}, {"b", b}} {
		h := rawLatencies(t, raws, c.name)
		if h.TotalCount() != c.got.Count {
			t.Errorf("request %s: %d raw samples, merged count %d", c.name, h.TotalCount(), c.got.Count)
		}
		for _, p := range []struct {
			q   float64
			got float64
		}{{50, c.got.Latency.P50}, {95, c.got.Latency.P95}, {99, c.got.Latency.P99}} {
			want := float64(h.ValueAtQuantile(p.q)) / 1000
			// Within the histogram's precision: 3 significant figures.
			if math.Abs(p.got-want) > want*0.001+0.001 {
				t.Errorf("request %s: merged p%v %v ms; one histogram of the raw samples says %v ms", c.name, p.q, p.got, want)
			}
		}
		t.Logf("request %s: %d calls, merged p50/p95/p99 %v/%v/%v ms", c.name, c.got.Count, c.got.Latency.P50, c.got.Latency.P95, c.got.Latency.P99)
	}

	// kubectl logs: other lines around each result, one result per line,
	// with --prefix on one of them.
	var logs strings.Builder
	for i, e := range exports {
		data, err := os.ReadFile(e)
		if err != nil {
			t.Fatal(err)
		}
		var line bytes.Buffer
		if err := json.Compact(&line, data); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&logs, "hload: waiting for --start-at\n%s\n", results[i].stdout)
		if i == 2 {
			logs.WriteString("[pod/run-2-abcde/hload] ")
		}
		logs.Write(line.Bytes())
		logs.WriteString("\n")
	}
	cmd := exec.Command(hloadBin, "merge", "-", "--summary-export", filepath.Join(dir, "stdin.json"))
	cmd.Stdin = strings.NewReader(logs.String())
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("merge -: %v\n%s", err, stderr.String())
	}
	fromLogs := exportedSummary(t, filepath.Join(dir, "stdin.json"))
	if got := fromLogs.Scenarios["closed"].Requests["a"]; got.Count != a.Count || got.Latency != a.Latency {
		t.Errorf("merge - read other figures than merge of the files: %+v, want %+v", got, a)
	}
}

const thresholdTest = `
variable "base_url" {}
data "csv" "users" {
  path = "users.csv"
  mode = "unique"
}
target "t" {
  base_url = var.base_url
}
scenario "s" {
  executor   = "iterations"
  vus        = 2
  iterations = 100
  request "r" {
    path = "/r?row=${data.users.id}"
  }
}
threshold {
  metric    = "%s"
  condition = "%s"
}
`

// TestMergeJudgesThresholds (issue 17, Must show 2): merge judges the
// test's thresholds on the merged run, not per segment, and exits
// accordingly: a count each segment keeps under its limit fails over the
// run (99), and an error rate that the one segment where the errors fell
// breaks holds over the run (0).
func TestMergeJudgesThresholds(t *testing.T) {
	tests := []struct {
		name      string
		metric    string
		condition string
		fail      func(row int) bool
		segments  [2]int // each segment's exit code
		merged    int
		value     float64
	}{
		{"count over the run", "rps", "count < 150", nil, [2]int{0, 0}, exitThreshold, 200},
		// Segment 1/2 has rows 0-99: 15 of its 100 calls fail.
		{"errors in one segment", "errors", "rate < 10%", func(row int) bool { return row < 15 }, [2]int{exitThreshold, 0}, 0, 0.075},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			srv := newRowCounter(t, tt.fail)
			usersCSV(t, dir, 200)
			file := writeFile(t, dir, "test.hcl", fmt.Sprintf(thresholdTest, tt.metric, tt.condition))
			results, exports := runSegments(t, dir, file, 2, "--var", "base_url="+srv.URL)
			for i, r := range results {
				if r.code != tt.segments[i] {
					t.Fatalf("segment %d/2: exit %d, want %d\n%s%s", i+1, r.code, tt.segments[i], r.stdout, r.stderr)
				}
			}
			if n := srv.count("/r"); n != 200 {
				t.Fatalf("the server saw %d calls; want 200", n)
			}
			out := filepath.Join(dir, "merged.json")
			r := hload(t, dir, append([]string{"merge", "--summary-export", out}, exports...)...)
			if r.code != tt.merged {
				t.Fatalf("merge: exit %d, want %d\n%s%s", r.code, tt.merged, r.stdout, r.stderr)
			}
			th := exportedSummary(t, out).Thresholds
			if len(th) != 1 || th[0].Value != tt.value || th[0].Passed != (tt.merged == 0) {
				t.Errorf("merged thresholds %+v; want value %v", th, tt.value)
			}
			verdict := "PASS"
			if tt.merged != 0 {
				verdict = "FAIL"
			}
			if !strings.Contains(r.stdout, verdict+"  "+tt.metric+"  "+tt.condition) {
				t.Errorf("the merged table does not show %s %s:\n%s", verdict, tt.condition, r.stdout)
			}
		})
	}
}

// TestMergeInterrupted: a segment that was interrupted (a pod evicted, a
// process stopped by SIGTERM) makes the merged run interrupted: merge
// prints and exports it, says which segment, and exits 130 as hload apply
// does for an interrupted run, though its threshold holds.
func TestMergeInterrupted(t *testing.T) {
	dir := t.TempDir()
	srv := newRowCounter(t, nil)
	usersCSV(t, dir, 200)
	file := writeFile(t, dir, "test.hcl", fmt.Sprintf(thresholdTest, "rps", "count < 1000"))
	results, exports := runSegments(t, dir, file, 2, "--var", "base_url="+srv.URL)
	for i, r := range results {
		if r.code != 0 {
			t.Fatalf("segment %d/2: exit %d\n%s%s", i+1, r.code, r.stdout, r.stderr)
		}
	}
	// The second segment as a SIGTERM would have left it.
	data, err := os.ReadFile(exports[1])
	if err != nil {
		t.Fatal(err)
	}
	spoilt := regexp.MustCompile(`"interrupted":\s*false`).ReplaceAll(data, []byte(`"interrupted": true`))
	if bytes.Equal(spoilt, data) {
		t.Fatalf("%s has no \"interrupted\":false", exports[1])
	}
	writeFile(t, filepath.Dir(exports[1]), "result.json", string(spoilt))
	out := filepath.Join(dir, "merged.json")
	r := hload(t, dir, append([]string{"merge", "--summary-export", out}, exports...)...)
	if r.code != exitInterrupted {
		t.Fatalf("merge: exit %d, want %d\n%s%s", r.code, exitInterrupted, r.stdout, r.stderr)
	}
	sum := exportedSummary(t, out)
	if !sum.Interrupted || len(sum.Thresholds) != 1 || !sum.Thresholds[0].Passed {
		t.Errorf("merged: interrupted %v, thresholds %+v; want interrupted, the threshold held", sum.Interrupted, sum.Thresholds)
	}
	if !strings.Contains(r.stdout+r.stderr, "segment 2/2") || !strings.Contains(r.stdout+r.stderr, "interrupted") {
		t.Errorf("merge does not say segment 2/2 was interrupted:\n%s%s", r.stdout, r.stderr)
	}
}

// TestMergeRefusals (issue 17, Must show 4): merge refuses, with exit 2
// and a message that names the files, what is not the segments of one
// run.
func TestMergeRefusals(t *testing.T) {
	dir := t.TempDir()
	srv, _ := okServer(t)
	const small = `
variable "base_url" {}
target "t" {
  base_url = var.base_url
}
scenario "s" {
  executor   = "iterations"
  vus        = 4
  iterations = 2
  request "r" {
    path = "/"
  }
}
`
	file := writeFile(t, dir, "test.hcl", small)
	_, quarter := runSegments(t, filepath.Join(dir, "a"), file, 4, "--var", "base_url="+srv.URL)
	_, half := runSegments(t, filepath.Join(dir, "h"), file, 2, "--var", "base_url="+srv.URL)
	other := writeFile(t, dir, "other.hcl", small+"# another test\n")
	_, others := runSegments(t, filepath.Join(dir, "b"), other, 4, "--var", "base_url="+srv.URL)
	for _, f := range append(append(slicesOf(quarter), half...), others...) {
		if _, err := os.Stat(f); err != nil {
			t.Fatalf("a segment wrote no export: %v", err)
		}
	}
	copyOf := filepath.Join(dir, "copy.json")
	data, err := os.ReadFile(quarter[1])
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "copy.json", string(data))
	notExport := writeFile(t, dir, "intervals.csv", "time,count\n1,2\n")

	tests := []struct {
		name  string
		args  []string
		stdin string
		want  []string
	}{
		{"a segment missing", []string{quarter[0], quarter[1], quarter[3]},
			"", []string{"segments 1/4, 2/4 and 4/4 given", quarter[0], quarter[1], quarter[3], "3/4 is missing"}},
		{"a segment twice", []string{quarter[0], quarter[1], copyOf, quarter[2], quarter[3]},
			"", []string{"segment 2/4 given twice", quarter[1], copyOf}},
		{"two different tests", []string{quarter[0], quarter[1], others[2], quarter[3]},
			"", []string{"results of 2 different tests", others[2], quarter[0]}},
		{"overlapping segments", []string{half[0], quarter[0], quarter[1]},
			"", []string{"overlapping segments: 1/2 (" + half[0] + ") and 1/4 (" + quarter[0] + ")"}},
		{"not a summary export", []string{quarter[0], notExport},
			"", []string{notExport + ": not a summary export"}},
		{"no result on standard input", []string{"-"},
			"hload: waiting\nsome other log line\n", []string{"standard input: no result found"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := exec.Command(hloadBin, append([]string{"merge"}, tt.args...)...)
			cmd.Stdin = strings.NewReader(tt.stdin)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			cmd.Start()
			r := wait(t, cmd, &stdout, &stderr)
			if r.code != exitUsage {
				t.Errorf("exit %d, want %d\n%s%s", r.code, exitUsage, r.stdout, r.stderr)
			}
			for _, w := range tt.want {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("the refusal does not say %q:\n%s", w, r.stderr)
				}
			}
			if r.stdout != "" {
				t.Errorf("a refused merge printed a summary:\n%s", r.stdout)
			}
		})
	}
	// The four segments of each test merge.
	for _, set := range [][]string{quarter, others, half} {
		if r := hload(t, dir, append([]string{"merge"}, set...)...); r.code != 0 {
			t.Errorf("merge %v: exit %d\n%s", set, r.code, r.stderr)
		}
	}
}

func slicesOf(s []string) []string { return append([]string(nil), s...) }
