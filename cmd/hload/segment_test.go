package main

import (
	"encoding/json"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hload/hload/core"
	"github.com/hload/hload/metrics"
)

// TestSegmentFromEnvironment: --segment-count reads the index from the
// job engine's variable, 0- or 1-based, and names the flag and the
// variable when the index is missing, not a number or out of range.
func TestSegmentFromEnvironment(t *testing.T) {
	for _, tc := range []struct {
		name    string
		args    []string
		env     map[string]string
		want    core.Segment
		wantErr []string
	}{
		{name: "default is the whole run", want: core.Segment{Index: 0, Count: 1}},
		{name: "segment i/n", args: []string{"--segment", "3/4"}, want: core.Segment{Index: 2, Count: 4}},
		{name: "Kubernetes index", args: []string{"--segment-count", "4"}, env: map[string]string{"JOB_COMPLETION_INDEX": "3"}, want: core.Segment{Index: 3, Count: 4}},
		{name: "Kubernetes index 0", args: []string{"--segment-count=4"}, env: map[string]string{"JOB_COMPLETION_INDEX": "0"}, want: core.Segment{Index: 0, Count: 4}},
		{name: "count from the environment", env: map[string]string{"HLOAD_SEGMENT_COUNT": "3", "JOB_COMPLETION_INDEX": "2"}, want: core.Segment{Index: 2, Count: 3}},
		{name: "Slurm 1-based", args: []string{"--segment-count", "4", "--segment-index-env", "SLURM_ARRAY_TASK_ID", "--segment-index-base", "1"},
			env: map[string]string{"SLURM_ARRAY_TASK_ID": "4"}, want: core.Segment{Index: 3, Count: 4}},
		{name: "AWS Batch from the environment", env: map[string]string{"HLOAD_SEGMENT_COUNT": "2", "HLOAD_SEGMENT_INDEX_ENV": "AWS_BATCH_JOB_ARRAY_INDEX", "AWS_BATCH_JOB_ARRAY_INDEX": "1"},
			want: core.Segment{Index: 1, Count: 2}},
		{name: "flag wins over the environment", args: []string{"--segment-count", "2"}, env: map[string]string{"HLOAD_SEGMENT_COUNT": "8", "JOB_COMPLETION_INDEX": "1"},
			want: core.Segment{Index: 1, Count: 2}},
		{name: "missing index", args: []string{"--segment-count", "4"},
			wantErr: []string{`--segment-count "4"`, "JOB_COMPLETION_INDEX is not set", "--segment-index-env"}},
		{name: "missing custom index", env: map[string]string{"HLOAD_SEGMENT_COUNT": "4", "HLOAD_SEGMENT_INDEX_ENV": "TASK"},
			wantErr: []string{`HLOAD_SEGMENT_COUNT="4" (--segment-count)`, "TASK is not set", `HLOAD_SEGMENT_INDEX_ENV="TASK" (--segment-index-env)`}},
		{name: "index not a number", args: []string{"--segment-count", "4"}, env: map[string]string{"JOB_COMPLETION_INDEX": "two"},
			wantErr: []string{`--segment-count "4"`, `JOB_COMPLETION_INDEX="two" is not a whole number`}},
		{name: "index too high", args: []string{"--segment-count", "4"}, env: map[string]string{"JOB_COMPLETION_INDEX": "4"},
			wantErr: []string{`--segment-count "4"`, "JOB_COMPLETION_INDEX=4 is out of range", "from 0 to 3"}},
		{name: "1-based index 0", args: []string{"--segment-count", "4", "--segment-index-base", "1"}, env: map[string]string{"JOB_COMPLETION_INDEX": "0"},
			wantErr: []string{"JOB_COMPLETION_INDEX=0 is out of range", "from 1 to 4", `--segment-index-base "1"`}},
		{name: "bad count", args: []string{"--segment-count", "0"}, env: map[string]string{"JOB_COMPLETION_INDEX": "0"},
			wantErr: []string{`--segment-count "0": want a whole number of segments`}},
		{name: "bad base", args: []string{"--segment-count", "2", "--segment-index-base", "2"}, env: map[string]string{"JOB_COMPLETION_INDEX": "0"},
			wantErr: []string{`--segment-index-base "2": want 0 or 1`}},
		{name: "both ways", args: []string{"--segment", "1/2", "--segment-count", "2"}, env: map[string]string{"JOB_COMPLETION_INDEX": "0"},
			wantErr: []string{"--segment 1/2", `--segment-count "2"`, "one or the other"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := flag.NewFlagSet("test", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			s := segmentFlags{getenv: func(k string) string { return tc.env[k] }}
			s.register(fs)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			got, err := s.resolve()
			if len(tc.wantErr) > 0 {
				if err == nil {
					t.Fatalf("got segment %+v, want an error", got)
				}
				for _, w := range tc.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q lacks %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("segment %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestStartBarrier: a process that reaches --start-at within the slack
// starts; later than that it refuses, naming the flag, the barrier and
// how late it is.
func TestStartBarrier(t *testing.T) {
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name    string
		args    []string
		env     map[string]string
		now     time.Time
		wantErr []string
	}{
		{name: "no barrier", now: at},
		{name: "early", args: []string{"--start-at", at.Format(time.RFC3339)}, now: at.Add(-time.Minute)},
		{name: "within the default slack", args: []string{"--start-at", at.Format(time.RFC3339)}, now: at.Add(4 * time.Second)},
		{name: "past the default slack", args: []string{"--start-at", at.Format(time.RFC3339)}, now: at.Add(5*time.Second + time.Millisecond),
			wantErr: []string{`--start-at "2026-12-01T10:00:00Z"`, "5.001s late", `--start-slack "5s"`, "refusing to start"}},
		{name: "from the environment", env: map[string]string{"HLOAD_START_AT": "2026-12-01T10:00:00Z", "HLOAD_START_SLACK": "1s"}, now: at.Add(2 * time.Second),
			wantErr: []string{`HLOAD_START_AT="2026-12-01T10:00:00Z" (--start-at)`, "2s late", `HLOAD_START_SLACK="1s" (--start-slack)`}},
		{name: "a larger slack", args: []string{"--start-at", at.Format(time.RFC3339), "--start-slack", "1m"}, now: at.Add(30 * time.Second)},
		{name: "bad time", args: []string{"--start-at", "10:00"}, wantErr: []string{`--start-at "10:00": want an RFC3339 time`}},
		{name: "bad slack", args: []string{"--start-slack", "soon"}, wantErr: []string{`--start-slack "soon": want a duration`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := flag.NewFlagSet("test", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			s := startFlags{getenv: func(k string) string { return tc.env[k] }}
			s.register(fs)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			b, err := s.resolve()
			if err == nil {
				err = b.late(tc.now)
			}
			if len(tc.wantErr) == 0 {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil {
				t.Fatal("want an error")
			}
			for _, w := range tc.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

// TestPlanSegmentFromEnvironment: plan takes the same segment options,
// and --segment-count with the index variable plans what --segment i/n
// plans.
func TestPlanSegmentFromEnvironment(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "test.hcl", smallTest)
	for i := range 3 {
		want := hload(t, dir, "plan", "test.hcl", "--var", "base_url=http://127.0.0.1:1", "--segment", []string{"1/3", "2/3", "3/3"}[i])
		got := hloadEnv(t, dir, []string{"JOB_COMPLETION_INDEX=" + []string{"0", "1", "2"}[i]},
			"plan", "test.hcl", "--var", "base_url=http://127.0.0.1:1", "--segment-count", "3")
		if want.code != 0 || got.code != 0 || got.stdout != want.stdout {
			t.Errorf("index %d: --segment-count 3 (exit %d):\n%s%s\n--segment %d/3 (exit %d):\n%s", i, got.code, got.stdout, got.stderr, i+1, want.code, want.stdout)
		}
	}
	r := hloadEnv(t, dir, []string{"JOB_COMPLETION_INDEX=3"}, "plan", "test.hcl", "--var", "base_url=http://127.0.0.1:1", "--segment-count", "3")
	if r.code != exitUsage || !strings.Contains(r.stderr, "JOB_COMPLETION_INDEX=3 is out of range") {
		t.Errorf("index 3 of 3: exit %d, stderr %q; want exit 2 naming the variable", r.code, r.stderr)
	}
}

// TestStartBarrierRefusesLate: apply exits 2 and sends nothing when it
// reaches the barrier later than the slack; within the slack it runs.
func TestStartBarrierRefusesLate(t *testing.T) {
	srv, n := okServer(t)
	dir := t.TempDir()
	writeFile(t, dir, "test.hcl", smallTest)
	barrier := time.Now().Add(-3 * time.Second).UTC().Format(time.RFC3339)
	r := hloadEnv(t, dir, []string{"HLOAD_START_AT=" + barrier, "HLOAD_START_SLACK=1s"},
		"apply", "--quiet", "test.hcl", "--var", "base_url="+srv.URL, "--var", "duration=200ms")
	if r.code != exitUsage || !strings.Contains(r.stderr, "HLOAD_START_AT=") || !strings.Contains(r.stderr, "late, more than HLOAD_START_SLACK=\"1s\" (--start-slack) allows") {
		t.Errorf("late start: exit %d, stderr %q; want exit 2 naming the barrier and the slack", r.code, r.stderr)
	}
	if got := n.Load(); got != 0 {
		t.Errorf("a refused start sent %d requests", got)
	}
	r = hloadEnv(t, dir, []string{"HLOAD_START_AT=" + barrier, "HLOAD_START_SLACK=1m"},
		"apply", "--quiet", "test.hcl", "--var", "base_url="+srv.URL, "--var", "duration=200ms")
	if r.code != 0 || n.Load() == 0 {
		t.Errorf("within the slack: exit %d, %d requests, stderr %q", r.code, n.Load(), r.stderr)
	}
}

// TestSummaryExportStdout: --summary-export - prints the whole summary
// JSON as one line, the last of stdout, after the summary table; its
// counts are the server's.
func TestSummaryExportStdout(t *testing.T) {
	srv, n := okServer(t)
	dir := t.TempDir()
	writeFile(t, dir, "test.hcl", smallTest)
	r := hload(t, dir, "apply", "test.hcl", "--var", "base_url="+srv.URL, "--var", "duration=300ms",
		"--summary-export", "-")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "-")); err == nil {
		t.Error(`--summary-export - wrote a file named "-"`)
	}
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	last := lines[len(lines)-1]
	var sum metrics.Summary
	dec := json.NewDecoder(strings.NewReader(last))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&sum); err != nil {
		t.Fatalf("the last line of stdout is not the summary JSON: %v\n%s", err, last)
	}
	if dec.More() {
		t.Error("the last line holds more than one JSON value")
	}
	if before := strings.Join(lines[:len(lines)-1], "\n"); !strings.Contains(before, "p95") || strings.Contains(before, `"scenarios"`) {
		t.Errorf("stdout before the JSON line should be the summary table only:\n%s", before)
	}
	if got := sum.Scenarios["s"].Requests["r"].Count; got != n.Load() || got == 0 {
		t.Errorf("summary line counts %d requests, the server %d", got, n.Load())
	}
	if sum.Series == nil || len(sum.Series.Scenarios) == 0 {
		t.Error("the summary line lacks the series a file export carries")
	}
}
