package merge

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hload/hload/metrics"
	"github.com/hload/hload/protocols"
)

var t0 = time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC)

// segment builds the export of one segment whose request "s"/"r" made
// calls of the given latencies, errors failing among the first ones, over
// intervals of one second each holding perInterval calls, and that ran
// vus VUs.
func segment(t *testing.T, seg, test string, latencies []time.Duration, errors, perInterval, vus int, ths ...metrics.ThresholdSpec) *metrics.Summary {
	t.Helper()
	return segmentOfPoints(t, metrics.MergePoints, seg, test, latencies, errors, perInterval, vus, ths...)
}

// segmentOfPoints is segment with at most points points.
func segmentOfPoints(t *testing.T, most int, seg, test string, latencies []time.Duration, errors, perInterval, vus int, ths ...metrics.ThresholdSpec) *metrics.Summary {
	t.Helper()
	agg := metrics.NewAggregator()
	agg.KeepPoints(most)
	s := agg.Series("s", "r")
	at := t0
	n := 0
	for i, d := range latencies {
		kind := protocols.ErrorKind("")
		if i < errors {
			kind = protocols.ErrTimeout
		}
		s.Record(protocols.Sample{Metric: protocols.MetricRequest, Value: d, Status: 200, Error: kind, BytesSent: 10})
		n++
		if n == perInterval || i == len(latencies)-1 {
			agg.Flush(at, at.Add(time.Second))
			agg.EndPoint(at, at.Add(time.Second), metrics.PointLevels{VUs: map[string]int{"s": vus},
				Iterations: map[string]int64{"s": int64(n)}}, i == len(latencies)-1)
			at, n = at.Add(time.Second), 0
		}
	}
	reqs, flows, points, merged, err := agg.MergeData(t0)
	if err != nil {
		t.Fatal(err)
	}
	elapsed := at.Sub(t0)
	sum := &metrics.Summary{
		HloadVersion: "test", RunID: "run-" + seg, Started: t0, Ended: at, DurationS: elapsed.Seconds(), Passed: true,
		Scenarios: map[string]*metrics.ScenarioSummary{"s": {Executor: "constant-vus", Model: "closed",
			Iterations: int64(len(latencies)), Requests: agg.Requests(elapsed)["s"]}},
		Mergeable: &metrics.Mergeable{Format: metrics.MergeFormat, Test: test, Segment: seg, Thresholds: ths,
			IntervalS: 1, Merged: merged, Points: points, Requests: reqs, Flows: flows},
	}
	// Through JSON, as the command reads it.
	data, err := json.Marshal(sum)
	if err != nil {
		t.Fatal(err)
	}
	in, err := ReadFile(seg, data)
	if err != nil {
		t.Fatal(err)
	}
	return in.Summary
}

// ms returns n latencies from lo ms, one ms apart.
func ms(lo, n int) []time.Duration {
	var out []time.Duration
	for i := range n {
		out = append(out, time.Duration(lo+i)*time.Millisecond)
	}
	return out
}

func inputs(sums map[string]*metrics.Summary, names ...string) []Input {
	var out []Input
	for _, n := range names {
		out = append(out, Input{Name: n + ".json", Summary: sums[n]})
	}
	return out
}

// TestCheckRefuses: inputs that are not the segments of one run are
// refused, and the message names the files and what is wrong.
func TestCheckRefuses(t *testing.T) {
	sums := map[string]*metrics.Summary{
		"a1": segment(t, "1/4", "sha256:aaa", ms(1, 5), 0, 5, 1),
		"a2": segment(t, "2/4", "sha256:aaa", ms(1, 5), 0, 5, 1),
		"a3": segment(t, "3/4", "sha256:aaa", ms(1, 5), 0, 5, 1),
		"a4": segment(t, "4/4", "sha256:aaa", ms(1, 5), 0, 5, 1),
		"h1": segment(t, "1/2", "sha256:aaa", ms(1, 5), 0, 5, 1),
		"b3": segment(t, "3/4", "sha256:bbb", ms(1, 5), 0, 5, 1),
	}
	old := *sums["a4"]
	old.Mergeable = nil
	sums["old"] = &old
	tests := []struct {
		name  string
		files []string
		want  []string
	}{
		{"missing", []string{"a1", "a2", "a4"}, []string{"segments 1/4, 2/4 and 4/4 given (a1.json, a2.json, a4.json); 3/4 is missing"}},
		{"two missing", []string{"a4", "a2"}, []string{"1/4 and 3/4 are missing", "a2.json", "a4.json"}},
		{"twice", []string{"a1", "a2", "a2", "a3", "a4"}, []string{"segment 2/4 given twice: a2.json and a2.json"}},
		{"different tests", []string{"a1", "a2", "b3", "a4"}, []string{"results of 2 different tests", "a1.json, a2.json and a4.json (test sha256:aaa)", "b3.json (test sha256:bbb)"}},
		{"overlapping", []string{"h1", "a1", "a3", "a4"}, []string{"overlapping segments: 1/2 (h1.json) and 1/4 (a1.json)"}},
		{"no mergeable section", []string{"a1", "a2", "a3", "old"}, []string{"old.json: a summary export without the mergeable section"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Merge(inputs(sums, tt.files...))
			if err == nil {
				t.Fatalf("merged %v; want a refusal", tt.files)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("refusal %q does not say %q", err, w)
				}
			}
		})
	}
	if _, err := Merge(inputs(sums, "a3", "a1", "a4", "a2")); err != nil {
		t.Errorf("the four segments, in any order: %v", err)
	}
}

// TestMergeFigures: the merged summary is that of one run of all the
// calls: counts add up, rates run over the merged span, percentiles come
// from the merged histograms (one segment's calls all fast, the other's
// all slow, so averaging their percentiles would be far off), and the
// series add up point by point.
func TestMergeFigures(t *testing.T) {
	fast := segment(t, "2/2", "sha256:x", ms(1, 100), 0, 25, 3)     // 1..100 ms, 4 points
	slow := segment(t, "1/2", "sha256:x", ms(1001, 100), 10, 50, 2) // 1001..1100 ms, 2 points
	sum, err := Merge([]Input{{Name: "fast", Summary: fast}, {Name: "slow", Summary: slow}})
	if err != nil {
		t.Fatal(err)
	}
	r := sum.Scenarios["s"].Requests["r"]
	if r.Count != 200 || r.Errors != 10 || r.BytesSent != 2000 || r.Status["200"] != 200 || r.ErrorsByKind["timeout"] != 10 {
		t.Errorf("merged counters: %+v", r)
	}
	if sum.DurationS != 4 || r.RPS != 50 {
		t.Errorf("merged run of %vs at %v calls/s; want 4s (the longer segment) and 50/s", sum.DurationS, r.RPS)
	}
	// Calls 1..100 and 1001..1100 ms: the median is the 100th value, 100
	// ms; p95 the 190th, 1090 ms; within the histogram's 0.1 %.
	for _, c := range []struct {
		name      string
		got, want float64
	}{{"p50", r.Latency.P50, 100}, {"p95", r.Latency.P95, 1090}, {"max", r.Latency.Max, 1100}, {"min", r.Latency.Min, 1}} {
		if math.Abs(c.got-c.want) > c.want*0.001 {
			t.Errorf("merged %s %v ms; want %v", c.name, c.got, c.want)
		}
	}
	if sum.Scenarios["s"].Iterations != 200 {
		t.Errorf("iterations %d; want 200", sum.Scenarios["s"].Iterations)
	}
	ser := sum.Series
	if ser == nil || len(ser.TimeS) != 4 || len(ser.Scenarios) != 1 || len(ser.Scenarios[0].Requests) != 1 {
		t.Fatalf("merged series: %+v", ser)
	}
	sc := ser.Scenarios[0]
	// Points 1 and 2 hold 25 fast and 50 slow calls, 3 and 4 only the
	// fast ones; the VUs of both segments until the slow one ended.
	wantRPS := []float64{75, 75, 25, 25}
	wantVUs := []float64{5, 5, 3, 3}
	for j := range 4 {
		if sc.Requests[0].RPS[j] != wantRPS[j] || sc.VUs[j] != wantVUs[j] {
			t.Errorf("point %d: %v calls/s, %v VUs; want %v and %v", j+1, sc.Requests[0].RPS[j], sc.VUs[j], wantRPS[j], wantVUs[j])
		}
	}
	// The first point's p99 is among the slow calls: 1001..1050 ms at 1 %.
	if p99 := sc.Requests[0].P99[0]; p99 < 1040 || p99 > 1061 {
		t.Errorf("point 1 p99 %v ms; want about 1050", p99)
	}
}

// TestMergeRegroupsPoints: a segment whose points hold fewer intervals
// than another's (its run kept fewer points) has its points grouped to
// match: counts add up over the group, and levels (VUs) are its last.
func TestMergeRegroupsPoints(t *testing.T) {
	// 6 intervals of 10 calls: in at most 4 points, 3 of 2 intervals.
	coarse := segmentOfPoints(t, 4, "1/2", "sha256:x", ms(1, 60), 0, 10, 3)
	fine := segmentOfPoints(t, 256, "2/2", "sha256:x", ms(1, 60), 0, 10, 2)
	if coarse.Mergeable.Merged != 2 || len(coarse.Mergeable.Points) != 3 || fine.Mergeable.Merged != 1 {
		t.Fatalf("segments of %d points of %d intervals and %d points of %d", len(coarse.Mergeable.Points),
			coarse.Mergeable.Merged, len(fine.Mergeable.Points), fine.Mergeable.Merged)
	}
	sum, err := Merge([]Input{{Name: "coarse", Summary: coarse}, {Name: "fine", Summary: fine}})
	if err != nil {
		t.Fatal(err)
	}
	ser := sum.Series
	if ser.Merged != 2 || len(ser.TimeS) != 3 {
		t.Fatalf("merged series of %d points of %d intervals; want 3 of 2", len(ser.TimeS), ser.Merged)
	}
	sc := ser.Scenarios[0]
	for j := range 3 {
		if sc.Requests[0].RPS[j] != 20 || sc.VUs[j] != 5 || sc.IterationsPerS[j] != 20 {
			t.Errorf("point %d: %v calls/s, %v VUs, %v iterations/s; want 20, 5 and 20", j+1, sc.Requests[0].RPS[j], sc.VUs[j], sc.IterationsPerS[j])
		}
	}
}

// TestThresholdOnMergedRun: a threshold is judged on the merged figures,
// not per segment: a count that each segment keeps under its limit but
// that the run exceeds fails, and an error rate that one segment breaks
// alone holds over the run.
func TestThresholdOnMergedRun(t *testing.T) {
	count := metrics.ThresholdSpec{Metric: "rps", Condition: "count < 150", Aggregation: "count", Op: "<", Value: 150}
	rate := metrics.ThresholdSpec{Metric: "errors", Condition: "rate < 10%", Aggregation: "rate", Op: "<", Value: 0.1}
	tests := []struct {
		name   string
		th     metrics.ThresholdSpec
		errors [2]int
		passed bool
		value  float64
	}{
		{"count over the run", count, [2]int{0, 0}, false, 200},
		{"errors in one segment", rate, [2]int{15, 0}, true, 0.075},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := segment(t, "1/2", "sha256:x", ms(1, 100), tt.errors[0], 50, 1, tt.th)
			b := segment(t, "2/2", "sha256:x", ms(1, 100), tt.errors[1], 50, 1, tt.th)
			sum, err := Merge([]Input{{Name: "a", Summary: a}, {Name: "b", Summary: b}})
			if err != nil {
				t.Fatal(err)
			}
			if len(sum.Thresholds) != 1 {
				t.Fatalf("thresholds %+v", sum.Thresholds)
			}
			res := sum.Thresholds[0]
			if res.Passed != tt.passed || sum.Passed != tt.passed || math.Abs(res.Value-tt.value) > 1e-9 {
				t.Errorf("%s: value %v, passed %v, run passed %v; want %v and %v", res.Condition, res.Value, res.Passed, sum.Passed, tt.value, tt.passed)
			}
		})
	}
}

// TestReadStream: the results are taken out of a stream of logs, with or
// without kubectl's prefix, and every other line is skipped.
func TestReadStream(t *testing.T) {
	a := segment(t, "1/2", "sha256:x", ms(1, 10), 0, 10, 1)
	b := segment(t, "2/2", "sha256:x", ms(1, 10), 0, 10, 1)
	line := func(s *metrics.Summary) string {
		data, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	logs := strings.Join([]string{
		"hload 0.1.0: 1 scenario",
		`{"level":"info","msg":"a JSON log line that is no result"}`,
		"  PASS  rps  count < 100000",
		line(a),
		"[pod/run-1-xyz/hload] " + line(b),
		"",
	}, "\n")
	in, err := ReadStream("standard input", strings.NewReader(logs))
	if err != nil {
		t.Fatal(err)
	}
	if len(in) != 2 || in[0].Name != "standard input, line 4" || in[1].Name != "standard input, line 5 [pod/run-1-xyz/hload]" {
		t.Fatalf("read %d results: %+v", len(in), names(in))
	}
	if _, err := Merge(in); err != nil {
		t.Error(err)
	}
	_, err = ReadStream("standard input", strings.NewReader("hload: error\nsome log\n"))
	if err == nil || !strings.Contains(err.Error(), "standard input: no result found") {
		t.Errorf("a stream without results: %v; want a refusal naming standard input", err)
	}
}

func names(in []Input) string {
	var out []string
	for _, i := range in {
		out = append(out, fmt.Sprintf("%q", i.Name))
	}
	return strings.Join(out, ", ")
}

// TestSegmentFailureFailsTheMergedRun: a segment that a threshold
// aborted, that a runtime failure ended or whose sink failed does not pass,
// so neither does the merged run, though every threshold holds on the
// merged figures; an interrupted segment is said, and alone does not fail
// it. Dropped iterations add up over the segments.
func TestSegmentFailureFailsTheMergedRun(t *testing.T) {
	holds := metrics.ThresholdSpec{Metric: "errors", Condition: "rate < 10%", Aggregation: "rate", Op: "<", Value: 0.1}
	cases := []struct {
		name   string
		spoil  func(*metrics.Summary)
		passed bool
		says   string
	}{
		{"aborted", func(s *metrics.Summary) { s.Aborted = "latency p95 < 1ms"; s.Passed = false }, false, `segment 2/2 (b) was aborted by threshold "latency p95 < 1ms"`},
		{"failed", func(s *metrics.Summary) { s.Failed = "plugin echo stopped responding"; s.Passed = false }, false, "segment 2/2: plugin echo stopped responding"},
		{"a sink failed", func(s *metrics.Summary) { s.SinkErrors = []string{"csv: disk full"}; s.Passed = false }, false, "segment 2/2: csv: disk full"},
		{"interrupted", func(s *metrics.Summary) { s.Interrupted = true }, true, "segment 2/2 (b) was interrupted"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := segment(t, "1/2", "sha256:x", ms(1, 100), 0, 50, 1, holds)
			b := segment(t, "2/2", "sha256:x", ms(1, 100), 0, 50, 1, holds)
			a.Scenarios["s"].DroppedIterations = 3
			b.Scenarios["s"].DroppedIterations = 4
			tc.spoil(b)
			sum, err := Merge([]Input{{Name: "a", Summary: a}, {Name: "b", Summary: b}})
			if err != nil {
				t.Fatal(err)
			}
			if len(sum.Thresholds) != 1 || !sum.Thresholds[0].Passed {
				t.Fatalf("the threshold on the merged figures: %+v; want it held", sum.Thresholds)
			}
			if sum.Passed != tc.passed {
				t.Errorf("merged run passed %v; want %v", sum.Passed, tc.passed)
			}
			all := strings.Join(slices.Concat([]string{sum.Failed}, sum.SinkErrors, sum.Warnings), "\n")
			if !strings.Contains(all, tc.says) {
				t.Errorf("the merged run does not say %q:\n%s", tc.says, all)
			}
			if d := sum.Scenarios["s"].DroppedIterations; d != 7 {
				t.Errorf("dropped iterations %d; want 3 + 4", d)
			}
		})
	}
}
