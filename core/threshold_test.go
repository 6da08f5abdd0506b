package core

import (
	"strings"
	"testing"
	"time"

	"github.com/hload/hload/config"
	"github.com/hload/hload/core/metrics"
	"github.com/hload/hload/protocols"
)

func TestEvaluateThresholds(t *testing.T) {
	agg := metrics.NewAggregator()
	home := agg.Series("browse", "home")
	login := agg.Series("browse", "login")
	// home: 100 calls of 1..100 ms, 2 of them timeouts; ttfb half of it.
	for i := 1; i <= 100; i++ {
		s := protocols.Sample{Metric: protocols.MetricRequest, Value: time.Duration(i) * time.Millisecond, Status: 200}
		if i > 98 {
			s.Error, s.Status = protocols.ErrTimeout, 0
		}
		home.Record(s)
		home.Record(protocols.Sample{Metric: protocols.MetricTTFB, Value: time.Duration(i) * time.Millisecond / 2})
	}
	home.RecordChecks(90, 10)
	// login: 10 calls of 500 ms.
	for range 10 {
		login.Record(protocols.Sample{Metric: protocols.MetricRequest, Value: 500 * time.Millisecond, Status: 200})
	}
	agg.Flush(time.Unix(0, 0), time.Unix(10, 0))

	cases := []struct {
		name            string
		metric, request string
		agg             string
		percentile      float64
		op              string
		limit           float64
		wantValue       float64
		tolerance       float64
		wantPass        bool
	}{
		{"p95 of one request", "latency", "home", "p95", 95, "<", 200, 95, 1, true},
		{"p75 needs the histogram", "latency", "home", "p75", 75, "<", 70, 75, 1, false},
		{"max of all requests", "latency", "", "max", 0, "<", 600, 500, 1, true},
		{"mean", "latency", "login", "mean", 0, "<=", 501, 500, 1, true},
		{"error rate", "errors", "home", "rate", 0, "<", 0.01, 0.02, 1e-9, false},
		{"error count", "errors", "", "count", 0, "<=", 2, 2, 0, true},
		{"rps over 10s", "rps", "", "rate", 0, ">=", 11, 11, 1e-9, true},
		{"request count", "rps", "login", "count", 0, "==", 10, 10, 0, true},
		{"checks pass rate", "checks", "home", "rate", 0, ">", 0.95, 0.9, 1e-9, false},
		{"checks failed count", "checks", "", "count", 0, "<", 11, 10, 0, true},
		{"protocol metric", "ttfb", "home", "p50", 50, "<", 20, 25, 0.5, false},
		{"protocol metric p75", "ttfb", "", "p75", 75, "<", 40, 37.5, 0.5, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			th := &config.Threshold{Metric: tc.metric, Request: tc.request, Condition: config.Condition{
				Text: tc.name, Aggregation: tc.agg, Percentile: tc.percentile, Op: tc.op, Value: tc.limit,
			}}
			res := evaluate(th, agg, 10*time.Second)
			if d := res.Value - tc.wantValue; d > tc.tolerance || d < -tc.tolerance {
				t.Errorf("value %v, want %v ± %v", res.Value, tc.wantValue, tc.tolerance)
			}
			if res.Passed != tc.wantPass {
				t.Errorf("passed = %v, want %v (value %v %s %v)", res.Passed, tc.wantPass, res.Value, tc.op, tc.limit)
			}
		})
	}
}

func TestGeneratorWarnings(t *testing.T) {
	figures := func(p99 float64) *metrics.RequestFigures {
		return &metrics.RequestFigures{Metrics: map[string]metrics.MetricFigures{
			metrics.MetricStartLateness: {Count: 1, LatencyFigures: metrics.LatencyFigures{P99: p99}},
		}}
	}
	sum := &metrics.Summary{Scenarios: map[string]*metrics.ScenarioSummary{
		"on-time": {Requests: map[string]*metrics.RequestFigures{"r": figures(1.2)}},
		"late":    {Requests: map[string]*metrics.RequestFigures{"a": figures(0.5), "b": figures(12.5)}},
		"closed":  {Requests: map[string]*metrics.RequestFigures{"r": {}}},
	}}
	got := generatorWarnings(sum)
	if len(got) != 1 || !strings.Contains(got[0], `scenario "late"`) || !strings.Contains(got[0], "12.5 ms") {
		t.Fatalf("warnings %q; want one for scenario late at 12.5 ms", got)
	}
}
