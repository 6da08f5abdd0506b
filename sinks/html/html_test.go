package html

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zclconf/go-cty/cty"

	"github.com/hload/hload/core"
	"github.com/hload/hload/metrics"
	"github.com/hload/hload/sinks/html/browsertest"
	"github.com/hload/hload/sinks/series"
)

// hourRun synthesises the summary of a 1-hour run with 50 requests (five
// scenarios of ten, one with SSE metrics and one with AMQP metrics), its series
// collected by the sink's own collector from 3,600 one-second snapshots.
func hourRun(t testing.TB) *metrics.Summary {
	const scenarios, perScenario, seconds = 5, 10, 3600
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var plans []core.ScenarioPlan
	info := metrics.RunInfo{Started: start, Version: "test", Files: []string{"hour.hcl"}}
	sum := &metrics.Summary{HloadVersion: "test", RunID: "hour", Started: start, Ended: start.Add(seconds * time.Second),
		DurationS: seconds, Passed: true, Files: info.Files, Scenarios: map[string]*metrics.ScenarioSummary{},
		Metrics: map[string]metrics.MetricFigures{}}
	for s := range scenarios {
		name := fmt.Sprintf("scenario%d", s)
		plans = append(plans, core.ScenarioPlan{Name: name, Model: "closed", Executor: "ramping-vus",
			Points: []core.PlanPoint{{At: 0, VUs: 0}, {At: 600 * time.Second, VUs: 50}, {At: seconds * time.Second, VUs: 50}}})
		info.Scenarios = append(info.Scenarios, metrics.ScenarioInfo{Name: name, Executor: "ramping-vus", Model: "closed"})
		sc := &metrics.ScenarioSummary{Executor: "ramping-vus", Model: "closed", Requests: map[string]*metrics.RequestFigures{}}
		for r := range perScenario {
			sc.Requests[fmt.Sprintf("request%02d", r)] = &metrics.RequestFigures{Count: 36000 + int64(r), Errors: int64(r), RPS: 10.000277,
				ErrorRate: float64(r) / 36000, Latency: metrics.LatencyFigures{Mean: 12.345, P50: 10.001, P90: 20.002, P95: 25.003, P99: 40.004, Max: 99.999},
				Status: map[string]int64{"200": 36000}, ErrorsByKind: map[string]int64{"timeout": int64(r)}}
		}
		sum.Scenarios[name] = sc
	}
	sum.Metrics["sse_delivery_latency"] = metrics.MetricFigures{Count: 100, LatencyFigures: metrics.LatencyFigures{P50: 1, P95: 2, P99: 3, Max: 4}}

	sink := &Sink{path: filepath.Join(t.TempDir(), "unused.html"), collector: series.New(plans)}
	if err := sink.Start(context.Background(), info); err != nil {
		t.Fatal(err)
	}
	for i := range seconds {
		from, to := start.Add(time.Duration(i)*time.Second), start.Add(time.Duration(i+1)*time.Second)
		snap := metrics.Snapshot{Start: from, End: to, RateStart: from, Elapsed: to.Sub(start),
			VUs: map[string]int{}, Iterations: map[string]int64{}, Dropped: map[string]int64{}}
		for s := range scenarios {
			name := fmt.Sprintf("scenario%d", s)
			snap.VUs[name] = min(50, i/12)
			snap.Iterations[name] = 100
			for r := range perScenario {
				f := metrics.SeriesFigures{Scenario: name, Request: fmt.Sprintf("request%02d", r), RequestFigures: metrics.RequestFigures{
					Count: int64(10 + r), Errors: int64(i % 2), RPS: float64(10 + r), Latency: metrics.LatencyFigures{
						P50: 10 + float64(i%97)/7, P95: 20 + float64(i%89)/3, P99: 30 + float64(i%83)}}}
				switch s {
				case 0:
					f.Metrics = map[string]metrics.MetricFigures{
						"sse_delivery_latency": {Count: 10, LatencyFigures: metrics.LatencyFigures{P50: 1.5, P95: 2.25, P99: 3.125, Max: 4}},
						"sse_events_missed":    {Count: int64(i % 3)},
					}
				case 1:
					f.Metrics = map[string]metrics.MetricFigures{
						"amqp_confirmed": {Count: 10, LatencyFigures: metrics.LatencyFigures{P50: 0.5, P95: 0.75, P99: 1, Max: 2}},
						"amqp_consumed":  {Count: 10, LatencyFigures: metrics.LatencyFigures{P50: 2, P95: 3, P99: 4 + float64(i%5), Max: 9}},
					}
				}
				snap.Series = append(snap.Series, f)
			}
		}
		snap.Gauges = map[string]int64{"sse_open_streams": int64(i % 10)}
		if i == 1800 {
			snap.Warnings = []string{saturatedWarning}
		}
		if err := sink.Write(snap); err != nil {
			t.Fatal(err)
		}
	}
	sum.Series = sink.collector.Series()
	sum.Generator = &metrics.GeneratorFigures{Saturated: true, Reason: "used 97% of its 2 cores in 12 of 3600 intervals",
		CPUCoresAvailable: 2, Intervals: 3600, SaturatedIntervals: 12}
	return sum
}

// saturatedWarning is the generator self-check's live warning, as core
// says it.
const saturatedWarning = "hload is saturated: used 97% of its 2 cores; from here the figures measure hload as much as the server"

// TestHourRunReport (issue 15, must show 4): the report of a 1-hour run
// with 50 requests, rendered from its summary export as `hload report`
// does, stays under 5 MB. The render time is logged beside the time to
// decode the export, measured in the same run; no absolute time is
// asserted.
func TestHourRunReport(t *testing.T) {
	export, err := json.Marshal(hourRun(t))
	if err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	var sum metrics.Summary
	if err := json.Unmarshal(export, &sum); err != nil {
		t.Fatal(err)
	}
	decode := time.Since(began)
	var out bytes.Buffer
	began = time.Now()
	if err := Render(&out, &sum); err != nil {
		t.Fatal(err)
	}
	render := time.Since(began)
	const limit = 5 << 20
	t.Logf("export %d bytes, report %d bytes, %d points of %d intervals; decoding the export took %v, rendering %v (%.2fx)",
		len(export), out.Len(), len(sum.Series.TimeS), sum.Series.Merged, decode, render, render.Seconds()/decode.Seconds())
	if out.Len() >= limit {
		t.Fatalf("the report is %d bytes, over 5 MB", out.Len())
	}
	if n := len(sum.Series.TimeS); n < series.MaxPoints/2 || sum.Series.Merged != 4 {
		t.Fatalf("%d points of %d intervals: the hour is not all there", n, sum.Series.Merged)
	}
	rows := strings.Count(out.String(), `<tr data-request="`)
	if rows != 50 {
		t.Fatalf("the report's tables have %d request rows, want 50", rows)
	}
}

// TestNamesCannotBreakOutOfThePage: a request named like markup stays
// text in the tables and data in the embedded JSON.
func TestNamesCannotBreakOutOfThePage(t *testing.T) {
	evil := `</script><script>alert(1)</script>`
	sum := &metrics.Summary{Scenarios: map[string]*metrics.ScenarioSummary{
		"s": {Requests: map[string]*metrics.RequestFigures{evil: {Count: 1}}}},
		Series: &metrics.IntervalSeries{TimeS: metrics.Column{1}, Scenarios: []metrics.ScenarioSeries{{Name: "s",
			Requests: []metrics.RequestSeries{{Name: evil, RPS: metrics.Column{1}}}}}}}
	var out bytes.Buffer
	if err := Render(&out, sum); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "<script>alert(1)") {
		t.Fatalf("a request's name was written as markup")
	}
}

// TestSinkWritesTheReport: Close writes the file at the block's path;
// Start refuses a folder that does not exist, before any load; New
// refuses an empty path.
func TestSinkWritesTheReport(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "r.html")
	s, err := New(cty.ObjectVal(map[string]cty.Value{"path": cty.StringVal(path)}), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background(), metrics.RunInfo{Started: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(metrics.Summary{RunID: "abc"}); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil || !bytes.Contains(data, []byte("abc")) {
		t.Fatalf("the report was not written: %v", err)
	}
	missing, _ := New(cty.ObjectVal(map[string]cty.Value{"path": cty.StringVal(filepath.Join(dir, "no", "r.html"))}), nil)
	if err := missing.Start(context.Background(), metrics.RunInfo{}); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("Start in a missing folder: %v", err)
	}
	if _, err := New(cty.ObjectVal(map[string]cty.Value{"path": cty.StringVal("")}), nil); err == nil || !strings.Contains(err.Error(), "must not be empty") {
		t.Fatalf("an empty path: %v", err)
	}
}

// TestHourRunReportInBrowser: the 1-hour report opens in headless
// Chromium from file://, offline, and draws every chart. The time from
// the navigation to the charts drawn is logged beside the time to render
// the file in Go; no absolute time is asserted.
func TestHourRunReportInBrowser(t *testing.T) {
	browsertest.RequireChromium(t)
	sum := hourRun(t)
	var out bytes.Buffer
	began := time.Now()
	if err := Render(&out, sum); err != nil {
		t.Fatal(err)
	}
	render := time.Since(began)
	path := filepath.Join(t.TempDir(), "hour.html")
	if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	browser := browsertest.NewBrowser(t)
	// A reference from the same run and browser: a report with no series,
	// tables only.
	empty := filepath.Join(t.TempDir(), "empty.html")
	var small bytes.Buffer
	if err := Render(&small, &metrics.Summary{RunID: "empty"}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(empty, small.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	reference := browsertest.Open(t, browser, empty).Drawn
	page := browsertest.Open(t, browser, path)
	// Three charts per scenario, one per protocol metric (SSE's two,
	// AMQP's two), one of gauges.
	if want := 3*5 + 4 + 1; len(page.Charts) != want {
		t.Fatalf("%d charts, want %d", len(page.Charts), want)
	}
	for _, c := range page.Charts {
		if c.Coloured < 40 {
			t.Errorf("chart %q is blank: %d coloured pixels", c.Title, c.Coloured)
		}
		// The self-check fired at 1,800 s: a red line across the plot.
		if c.GeneratorMark < c.Height/2 {
			t.Errorf("chart %q has %d pixels of the generator's mark, want a line across it", c.Title, c.GeneratorMark)
		}
	}
	if !strings.Contains(page.Generator, "hload was saturated: used 97% of its 2 cores") {
		t.Errorf("the generator self-check is not shown: %q", page.Generator)
	}
	if len(page.Rows) != 50 {
		t.Errorf("%d request rows, want 50", len(page.Rows))
	}
	t.Logf("report %d bytes: rendered in Go in %v; Chromium opened it and drew its %d charts in %v (a report without charts: %v)",
		out.Len(), render, len(page.Charts), page.Drawn, reference)
	browsertest.SaveArtifact(t, "report-hour.png", page.Screenshot)
}
