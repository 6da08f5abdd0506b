package console

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hload/hload/metrics"
)

// The contract of core.Sink, restated so that this test does not depend on
// core.
var _ interface {
	Start(context.Context, metrics.RunInfo) error
	Write(metrics.Snapshot) error
	Close(metrics.Summary) error
} = (*Sink)(nil)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

var t0 = time.Date(2025, 5, 1, 10, 0, 0, 0, time.UTC)

// sampleSummary is a failing run with two scenarios, one per load model,
// and every optional section filled.
func sampleSummary() metrics.Summary {
	empty := map[string]int64{}
	return metrics.Summary{
		HloadVersion: "0.1.0",
		RunID:        "run-7f3a",
		Started:      t0,
		Ended:        t0.Add(5 * time.Minute),
		DurationS:    300,
		Passed:       false,
		Scenarios: map[string]*metrics.ScenarioSummary{
			"browse": {
				Executor: "ramping-vus", Model: "closed", Iterations: 1_156_200,
				Requests: map[string]*metrics.RequestFigures{
					"main": {
						Count: 693_720, Errors: 14, ErrorRate: 14.0 / 693_720, RPS: 2312.4,
						Latency:   metrics.LatencyFigures{Min: 0.412, Mean: 7.03, Stdev: 4.2, P50: 5.9, P90: 11.6, P95: 16.25, P99: 117.3, P999: 310, Max: 2139.7},
						BytesSent: 69_372_000, BytesReceived: 1_776_000_000,
						Status:       map[string]int64{"200": 693_706, "503": 14},
						ErrorsByKind: map[string]int64{"http_5xx": 14},
					},
					"product detail": {
						Count: 115_620, Errors: 0, RPS: 385.4,
						Latency:   metrics.LatencyFigures{Min: 1.1, Mean: 12.2, Stdev: 6.5, P50: 10.4, P90: 19.9, P95: 25, P99: 48.1, Max: 529},
						BytesSent: 11_562_000, BytesReceived: 591_974_400,
						Status:       map[string]int64{"200": 115_620},
						ErrorsByKind: empty,
						Checks:       metrics.ChecksFigures{Passed: 115_600, Failed: 20},
					},
				},
			},
			"notify": {
				Executor: "constant-arrival-rate", Model: "open", Iterations: 29_950, DroppedIterations: 50,
				Requests: map[string]*metrics.RequestFigures{
					"send": {
						Count: 29_950, Errors: 1_203, ErrorRate: 1203.0 / 29_950, RPS: 99.8,
						Latency:   metrics.LatencyFigures{Min: 0.9, Mean: 9, Stdev: 30.2, P50: 3, P90: 14, P95: 35, P99: 119, Max: 30000},
						BytesSent: 5_990_000, BytesReceived: 1_497_500,
						Status:       map[string]int64{"200": 28_747, "429": 1_000, "500": 200},
						ErrorsByKind: map[string]int64{"http_4xx": 1_000, "http_5xx": 200, "timeout": 3},
						ErrorMessages: map[string][]string{
							"http_4xx": {"429 Too Many Requests"},
							"timeout":  {"no response within 5s", "no response\nwithin 5s (a message on two lines)"},
						},
					},
				},
			},
		},
		Metrics: map[string]metrics.MetricFigures{
			"sse_delivery": {Count: 29_747, Rate: 99.2, LatencyFigures: metrics.LatencyFigures{Min: 0.3, Mean: 1.2, P50: 0.9, P90: 2.1, P95: 3, P99: 14, Max: 115}},
			// A count: its samples carry no time, so it has no time figures.
			"sse_events": {Count: 59_494, Rate: 198.3},
		},
		GaugesMax: map[string]int64{"sse_open_streams": 200},
		Warnings:  []string{`scenario "browse", request "main": path failed to evaluate in 3 iterations`},
		Thresholds: []metrics.ThresholdResult{
			{Metric: "latency", Request: "product detail", Condition: "p95 < 200ms", Value: 25, Passed: true},
			{Metric: "errors", Scenario: "notify", Condition: "rate < 0.01", Value: 1203.0 / 29_950, Passed: false, Abort: false},
		},
	}
}

// flowSummary is sampleSummary with a setup and two flows in its closed
// scenario, one of them failing, and thresholds on flows.
func flowSummary() metrics.Summary {
	sum := sampleSummary()
	sum.Scenarios["browse"].Flows = map[string]*metrics.FlowFigures{
		"setup": {
			Count: 42, Completed: 40, Failed: 2, FailureRate: 2.0 / 42, Rate: 0.14,
			Duration:     metrics.LatencyFigures{Mean: 31, P50: 30.5, P90: 44, P95: 47.25, P99: 60.1, Max: 61},
			FailedByKind: map[string]int64{"http_5xx": 2},
		},
		"order": {
			Count: 11_562, Completed: 10_980, Failed: 582, FailureRate: 582.0 / 11_562, Rate: 38.5,
			Duration:     metrics.LatencyFigures{Mean: 140, P50: 120.4, P90: 230, P95: 310.5, P99: 902, Max: 2841.3},
			FailedByKind: map[string]int64{"capture": 578, "timeout": 4},
		},
		"browse catalogue": {
			Count: 115_620, Completed: 115_620, Rate: 385.4,
			Duration:     metrics.LatencyFigures{Mean: 22, P50: 20.1, P90: 30, P95: 35, P99: 51.6, Max: 529},
			FailedByKind: map[string]int64{},
		},
	}
	sum.Thresholds = append(sum.Thresholds,
		metrics.ThresholdResult{Metric: "flow_duration", Scenario: "browse", Flow: "order", Condition: "p95 < 2s", Value: 310.5, Passed: true},
		metrics.ThresholdResult{Metric: "flow_failures", Flow: "order", Condition: "rate < 1%", Value: 582.0 / 11_562, Passed: false},
		metrics.ThresholdResult{Metric: "flow_failures", Flow: "setup", Condition: "count < 5", Value: 2, Passed: true},
	)
	return sum
}

// TestSummaryGolden: a summary without flows reads exactly as before
// flows existed (summary.golden predates them), and one with flows adds a
// flows table per scenario, setup first, and the flow in thresholds.
func TestSummaryGolden(t *testing.T) {
	t.Run("without flows", func(t *testing.T) { checkGolden(t, sampleSummary(), "summary.golden") })
	t.Run("with flows", func(t *testing.T) { checkGolden(t, flowSummary(), "summary_flows.golden") })
}

func checkGolden(t *testing.T, sum metrics.Summary, name string) {
	var buf bytes.Buffer
	if err := WriteSummary(&buf, sum, true); err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if got := buf.String(); got != string(want) {
		t.Errorf("summary differs from %s (run with -update if intended)\n got:\n%s\nwant:\n%s", golden, got, want)
	}
	if strings.Contains(buf.String(), "\x1b[") {
		t.Error("colour codes with noColor")
	}
}

func TestSummaryStates(t *testing.T) {
	tests := []struct {
		name string
		edit func(*metrics.Summary)
		want []string
	}{
		{
			name: "passed",
			edit: func(s *metrics.Summary) { s.Passed = true; s.Thresholds = s.Thresholds[:1] },
			want: []string{"PASS: all 1 thresholds held. Read the 1 warning(s) above."},
		},
		{
			name: "no thresholds",
			edit: func(s *metrics.Summary) { s.Passed = true; s.Thresholds = nil },
			want: []string{"PASS: the run completed; no thresholds were set."},
		},
		{
			name: "interrupted",
			edit: func(s *metrics.Summary) { s.Interrupted = true; s.DurationS = 42 },
			want: []string{
				"INTERRUPTED: the run was stopped before its planned end; the figures cover the 42.0s it ran.",
				"INTERRUPTED: the run was stopped early; 1 of 2 thresholds failed on the part that ran.",
			},
		},
		{
			name: "aborted",
			edit: func(s *metrics.Summary) {
				s.Aborted = "errors rate < 0.01"
				s.Thresholds[1].Abort = true
			},
			want: []string{
				`ABORTED: threshold "errors rate < 0.01" was crossed and stopped the run early.`,
				`FAIL: aborted by threshold "errors rate < 0.01"; 1 of 2 thresholds failed.`,
				"abort",
			},
		},
		{
			name: "sink failed",
			edit: func(s *metrics.Summary) {
				s.Passed = false
				s.Thresholds = s.Thresholds[:1]
				s.SinkErrors = []string{"csv sink: write out.csv: no space left on device"}
			},
			want: []string{
				"sink errors\n  - csv sink: write out.csv: no space left on device",
				"FAIL: a sink failed, and the results it holds are incomplete: csv sink: write out.csv: no space left on device",
			},
		},
		{
			name: "every call failed",
			edit: func(s *metrics.Summary) {
				s.Passed = false
				s.Thresholds = nil
				for _, sc := range s.Scenarios {
					for _, r := range sc.Requests {
						r.Errors = r.Count
					}
				}
			},
			want: []string{"FAIL: every one of the 839290 calls failed; see the errors by kind above."},
		},
		{
			name: "failed without threshold",
			edit: func(s *metrics.Summary) { s.Thresholds = nil },
			want: []string{"FAIL: the run failed."},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sum := sampleSummary()
			tt.edit(&sum)
			var buf bytes.Buffer
			if err := WriteSummary(&buf, sum, true); err != nil {
				t.Fatal(err)
			}
			for _, w := range tt.want {
				if !strings.Contains(buf.String(), w) {
					t.Errorf("summary lacks %q:\n%s", w, buf.String())
				}
			}
		})
	}
}

func TestSummaryColour(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteSummary(&buf, sampleSummary(), false); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, w := range []string{ansiGreen + "PASS" + ansiReset, ansiRed + "FAIL" + ansiReset} {
		if !strings.Contains(out, w) {
			t.Errorf("coloured summary lacks %q", w)
		}
	}
}

func TestSummaryEmpty(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteSummary(&buf, metrics.Summary{Passed: true}, true); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "PASS") {
		t.Errorf("empty summary:\n%s", buf.String())
	}
}

var runInfo = metrics.RunInfo{
	RunID: "run-7f3a", Version: "0.1.0", Started: t0,
	Scenarios: []metrics.ScenarioInfo{
		{Name: "browse", Executor: "ramping-vus", Model: "closed"},
		{Name: "notify", Executor: "constant-arrival-rate", Model: "open"},
	},
}

func snapshot(elapsed time.Duration, count, errs int64, p95s ...float64) metrics.Snapshot {
	s := metrics.Snapshot{
		Start: t0.Add(elapsed - time.Second), End: t0.Add(elapsed), Elapsed: elapsed,
		VUs:     map[string]int{"browse": 30, "notify": 10},
		Dropped: map[string]int64{"notify": 1},
	}
	for _, p := range p95s {
		s.Series = append(s.Series, metrics.SeriesFigures{Scenario: "browse", Request: "main",
			RequestFigures: metrics.RequestFigures{Count: count, Errors: errs, Latency: metrics.LatencyFigures{P95: p}}})
	}
	return s
}

func TestProgress(t *testing.T) {
	var buf bytes.Buffer
	s := New(&buf, Options{NoColor: true})
	if err := s.Start(context.Background(), runInfo); err != nil {
		t.Fatal(err)
	}
	if err := s.Write(snapshot(12*time.Second, 406, 1, 23.4, 12)); err != nil {
		t.Fatal(err)
	}
	withGauges := snapshot(13*time.Second, 400, 0, 5)
	withGauges.Gauges = map[string]int64{"sse_open_streams": 200, "amqp_channels": 4}
	if err := s.Write(withGauges); err != nil {
		t.Fatal(err)
	}
	want := "hload 0.1.0 run run-7f3a: scenario browse (ramping-vus, closed model); scenario notify (constant-arrival-rate, open model)\n" +
		"[  12s] vus 40  rps 812  err 0.25%  p95 23.4ms  dropped 1\n" +
		"[  13s] vus 40  rps 400  err 0%  p95 5.00ms  dropped 1  amqp_channels 4  sse_open_streams 200\n"
	if buf.String() != want {
		t.Errorf("got\n%q\nwant\n%q", buf.String(), want)
	}
}

// TestProgressWarningsAndFinalRate: a warning is printed at once, even
// between two progress lines; the run's last snapshot, a few milliseconds
// long, shows the rate the core spread over a real length, not its count
// over those milliseconds.
func TestProgressWarningsAndFinalRate(t *testing.T) {
	var buf bytes.Buffer
	s := New(&buf, Options{NoColor: true, Interval: 2 * time.Second})
	first := snapshot(time.Second, 90, 0, 10)
	first.Warnings = []string{`scenario "signup": data feeder "users" (mode unique) ran out of rows`}
	if err := s.Write(first); err != nil {
		t.Fatal(err)
	}
	if err := s.Write(snapshot(2*time.Second, 90, 0, 10)); err != nil {
		t.Fatal(err)
	}
	// 94 calls that ended 4 ms after the last tick, with the rate the core
	// put over the last interval and them: (90 + 94) / 1.004 s.
	last := snapshot(2*time.Second+4*time.Millisecond, 94, 0, 10)
	last.Start = t0.Add(2 * time.Second)
	last.RateStart = t0.Add(time.Second)
	last.Final = true
	last.Series[0].RPS = 184 / 1.004
	if err := s.Write(last); err != nil {
		t.Fatal(err)
	}
	want := "[   1s] WARNING: scenario \"signup\": data feeder \"users\" (mode unique) ran out of rows\n" +
		"[   2s] vus 40  rps 90  err 0%  p95 10.0ms  dropped 2\n" +
		"[   2s] vus 40  rps 183  err 0%  p95 10.0ms  dropped 1\n"
	if buf.String() != want {
		t.Errorf("got\n%s\nwant\n%s", buf.String(), want)
	}
}

func TestProgressInterval(t *testing.T) {
	var buf bytes.Buffer
	s := New(&buf, Options{NoColor: true, Interval: 5 * time.Second})
	for i := 1; i <= 10; i++ {
		p95 := 10.0
		if i == 3 {
			p95 = 99 // a spike between two lines must still show
		}
		if err := s.Write(snapshot(time.Duration(i)*time.Second, 100, 0, p95)); err != nil {
			t.Fatal(err)
		}
	}
	want := "[   5s] vus 40  rps 100  err 0%  p95 99.0ms  dropped 5\n" +
		"[  10s] vus 40  rps 100  err 0%  p95 10.0ms  dropped 5\n"
	if buf.String() != want {
		t.Errorf("got\n%q\nwant\n%q", buf.String(), want)
	}
}

func TestQuietKeepsHeaderAndSummary(t *testing.T) {
	var buf bytes.Buffer
	s := New(&buf, Options{Quiet: true, NoColor: true})
	if err := s.Start(context.Background(), runInfo); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 3; i++ {
		if err := s.Write(snapshot(time.Duration(i)*time.Second, 100, 0, 10)); err != nil {
			t.Fatal(err)
		}
	}
	sum := sampleSummary()
	if err := s.Close(sum); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	if strings.Contains(out, "[   1s]") || strings.Contains(out, "rps 100") {
		t.Errorf("quiet printed progress:\n%s", out)
	}
	if !strings.Contains(out, "closed model") {
		t.Error("quiet dropped the header naming the load model")
	}
	var want bytes.Buffer
	WriteSummary(&want, sum, true)
	if !strings.HasSuffix(out, want.String()) {
		t.Errorf("quiet did not print the summary:\n%s", out)
	}

	// A second Close prints nothing more.
	n := buf.Len()
	if err := s.Close(sum); err != nil || buf.Len() != n {
		t.Errorf("second Close: err %v, printed %d more bytes", err, buf.Len()-n)
	}
}

type failingWriter struct{}

var errBrokenPipe = errors.New("broken pipe")

func (failingWriter) Write([]byte) (int, error) { return 0, errBrokenPipe }

func TestWriteErrors(t *testing.T) {
	s := New(failingWriter{}, Options{})
	if err := s.Start(context.Background(), runInfo); !errors.Is(err, errBrokenPipe) {
		t.Errorf("Start = %v", err)
	}
	if err := s.Write(snapshot(time.Second, 1, 0, 1)); !errors.Is(err, errBrokenPipe) {
		t.Errorf("Write = %v", err)
	}
	if err := s.Close(sampleSummary()); !errors.Is(err, errBrokenPipe) {
		t.Errorf("Close = %v", err)
	}
}

func TestSummaryShowsRuntimeFailure(t *testing.T) {
	var buf bytes.Buffer
	sum := metrics.Summary{DurationS: 1.5, Failed: "plugin \"lines\" exited: rpc error\nlast stderr lines:\n  boom"}
	if err := WriteSummary(&buf, sum, true); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{`FAILED: plugin "lines" exited: rpc error; the figures cover the 1.5s before it.`, `FAIL: the run failed: plugin "lines" exited: rpc error`} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
}

// withFlows adds to a snapshot the flows of a shop: its setup and the
// flows "browse" and "order", with the counts given.
func withFlows(s metrics.Snapshot, setupFailed, browse, order, orderFailed int64) metrics.Snapshot {
	length := s.End.Sub(s.Start).Seconds()
	s.Flows = []metrics.FlowSeriesFigures{
		{Scenario: "browse", Flow: "browse", FlowFigures: metrics.FlowFigures{Count: browse, Completed: browse, Rate: float64(browse) / length}},
		{Scenario: "browse", Flow: "order", FlowFigures: metrics.FlowFigures{Count: order, Completed: order - orderFailed, Failed: orderFailed, Rate: float64(order) / length}},
		{Scenario: "browse", Flow: "setup", FlowFigures: metrics.FlowFigures{Count: setupFailed, Failed: setupFailed}},
	}
	return s
}

// TestProgressFlows: with flows, the line adds the flows per second and
// the failed flows, folded over the interval like the requests; setups
// are not journeys and stay out of the rate, but their failures show;
// a test with only a setup that never fails prints the line of old.
func TestProgressFlows(t *testing.T) {
	var buf bytes.Buffer
	s := New(&buf, Options{NoColor: true, Interval: 2 * time.Second})
	writes := []metrics.Snapshot{
		withFlows(snapshot(time.Second, 100, 0, 10), 3, 200, 50, 4),
		withFlows(snapshot(2*time.Second, 100, 0, 10), 0, 100, 30, 1), // folded with the first: (350 + 130) / 2 s
		withFlows(snapshot(4*time.Second, 100, 0, 10), 0, 90, 10, 0),
	}
	// The run's last snapshot, 5 ms long: its rate is the one the core
	// spread over a real length, not 3 flows over 5 ms.
	last := withFlows(snapshot(4*time.Second+5*time.Millisecond, 3, 0, 10), 0, 2, 1, 1)
	last.Start, last.RateStart, last.Final = t0.Add(4*time.Second), t0.Add(3*time.Second), true
	last.Flows[0].Rate, last.Flows[1].Rate = 92/1.005, 11/1.005
	last.Series[0].RPS = 103 / 1.005
	writes = append(writes, last)

	onlySetup := snapshot(7*time.Second, 100, 0, 10)
	onlySetup.Flows = []metrics.FlowSeriesFigures{{Scenario: "browse", Flow: "setup", FlowFigures: metrics.FlowFigures{Count: 40, Completed: 40, Rate: 40}}}
	writes = append(writes, onlySetup)
	for _, snap := range writes {
		if err := s.Write(snap); err != nil {
			t.Fatal(err)
		}
	}
	want := "[   2s] vus 40  rps 100  err 0%  p95 10.0ms  dropped 2  flows/s 190  flows failed 5  setup failed 3\n" +
		"[   4s] vus 40  rps 100  err 0%  p95 10.0ms  dropped 1  flows/s 100  flows failed 0\n" +
		"[   4s] vus 40  rps 102  err 0%  p95 10.0ms  dropped 1  flows/s 102  flows failed 1\n" +
		"[   7s] vus 40  rps 100  err 0%  p95 10.0ms  dropped 1\n"
	if buf.String() != want {
		t.Errorf("got\n%s\nwant\n%s", buf.String(), want)
	}
}

// TestProgressEmptyLastInterval: the run's last snapshot, a few
// milliseconds after the last tick, prints no line when nothing ended in
// it (the core put the rate of the interval before over it), and prints
// one when something did: a call, or a dropped iteration.
func TestProgressEmptyLastInterval(t *testing.T) {
	tail := func(count int64, dropped int64) metrics.Snapshot {
		s := snapshot(2*time.Second+4*time.Millisecond, count, 0, 0)
		s.Start, s.RateStart, s.Final = t0.Add(2*time.Second), t0.Add(time.Second), true
		s.Series[0].RPS = 90 / 1.004
		s.Dropped = map[string]int64{"notify": dropped}
		return s
	}
	cases := []struct {
		name string
		last metrics.Snapshot
		want string
	}{
		{"nothing ended", tail(0, 0), ""},
		{"a call ended", tail(1, 0), "[   2s] vus 40  rps 90  err 0%  p95 0ms  dropped 0\n"},
		{"an iteration dropped", tail(0, 3), "[   2s] vus 40  rps 90  err 0%  p95 0ms  dropped 3\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			s := New(&buf, Options{NoColor: true})
			for _, snap := range []metrics.Snapshot{snapshot(time.Second, 90, 0, 10), snapshot(2*time.Second, 90, 0, 10), tc.last} {
				if err := s.Write(snap); err != nil {
					t.Fatal(err)
				}
			}
			want := "[   1s] vus 40  rps 90  err 0%  p95 10.0ms  dropped 1\n" +
				"[   2s] vus 40  rps 90  err 0%  p95 10.0ms  dropped 1\n" + tc.want
			if buf.String() != want {
				t.Errorf("got\n%s\nwant\n%s", buf.String(), want)
			}
		})
	}
}

// TestServerTextEscaped: a server's words, wherever the console shows
// them (a live warning, the errors by kind and their kinds, the
// warnings, the sink errors, the runtime failure and the verdict), have
// their control characters escaped: they cannot clear the screen or
// retitle the terminal.
func TestServerTextEscaped(t *testing.T) {
	const hostile = "\x1b[2J\x1b]0;owned\x07"
	const shown = `\x1b[2J\x1b]0;owned\x07`
	var buf bytes.Buffer
	s := New(&buf, Options{NoColor: true})
	snap := snapshot(time.Second, 10, 10, 5)
	snap.Warnings = []string{"live " + hostile}
	if err := s.Write(snap); err != nil {
		t.Fatal(err)
	}
	sum := sampleSummary()
	send := sum.Scenarios["notify"].Requests["send"]
	send.ErrorsByKind["kind"+hostile] = 1
	send.ErrorMessages["http_4xx"] = []string{"429 " + hostile}
	sum.Warnings = []string{"warning " + hostile}
	sum.SinkErrors = []string{"sink " + hostile}
	sum.Failed = "failed " + hostile + "\nplugin stderr " + hostile
	if err := s.Close(sum); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	if i := strings.IndexAny(out, "\x1b\x07"); i >= 0 {
		t.Errorf("a control character at %d: %q", i, out[max(0, i-40):min(len(out), i+40)])
	}
	for _, want := range []string{
		"WARNING: live " + shown + "\n",
		"http_4xx: 429 " + shown + "\n",
		"kind" + shown + " 1",
		"  - warning " + shown + "\n",
		"  - sink " + shown + "\n",
		"FAILED: failed " + shown + ";",
		"FAIL: the run failed: failed " + shown + "\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the console lacks %q:\n%s", want, out)
		}
	}
}
