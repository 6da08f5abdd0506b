package core

import (
	"strings"
	"testing"
	"time"

	"github.com/hload/hload/config"
	"github.com/hload/hload/metrics"
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

// TestFlowThresholds judges flow_duration and flow_failures, with their
// filters, against figures computed here from the recorded runs; and a
// flow threshold with nothing to judge does not pass.
func TestFlowThresholds(t *testing.T) {
	agg := metrics.NewAggregator()
	// shop/order: 100 completed runs of 1..100 ms, 25 failed.
	shopOrder := agg.Flow("shop", "order")
	for i := 1; i <= 100; i++ {
		shopOrder.RecordFlow(time.Duration(i)*time.Millisecond, protocols.ErrNone)
	}
	for range 25 {
		shopOrder.RecordFlow(time.Millisecond, "capture")
	}
	// shop/browse: 10 completed runs of 500 ms.
	browse := agg.Flow("shop", "browse")
	for range 10 {
		browse.RecordFlow(500*time.Millisecond, protocols.ErrNone)
	}
	// admin/order: 4 completed runs of 1 s, 4 failed.
	adminOrder := agg.Flow("admin", "order")
	for range 4 {
		adminOrder.RecordFlow(time.Second, protocols.ErrNone)
		adminOrder.RecordFlow(time.Second, protocols.ErrTimeout)
	}
	// admin/broken: 3 runs, all failed.
	broken := agg.Flow("admin", "broken")
	for range 3 {
		broken.RecordFlow(time.Second, "capture")
	}
	agg.Flow("admin", "idle") // never ran
	agg.FlushFlows(time.Unix(0, 0), time.Unix(10, 0))

	cases := []struct {
		name, metric, scenario, flow string
		agg                          string
		percentile                   float64
		op                           string
		limit                        float64
		wantValue, tolerance         float64
		wantPass                     bool
		nothing                      string // the reason there is nothing to judge
	}{
		{"p95 of one flow", "flow_duration", "shop", "order", "p95", 95, "<", 100, 95, 0.1, true, ""},
		{"p75 needs the histogram", "flow_duration", "shop", "order", "p75", 75, "<", 70, 75, 0.1, false, ""},
		{"mean of one flow", "flow_duration", "shop", "order", "mean", 0, "<", 60, 50.5, 0.1, true, ""},
		{"mean across scenarios", "flow_duration", "", "order", "mean", 0, "<", 80, (5050 + 4000) / 104.0, 0.1, false, ""},
		{"max across scenarios", "flow_duration", "", "order", "max", 0, "<", 1001, 1000, 1, true, ""},
		{"min of a scenario", "flow_duration", "shop", "", "min", 0, ">", 0.5, 1, 0.01, true, ""},
		{"stdev of a constant flow", "flow_duration", "shop", "browse", "stdev", 0, "==", 0, 0, 0, true, ""},
		{"count is the completed flows", "flow_duration", "shop", "order", "count", 0, "==", 100, 100, 0, true, ""},
		{"failure rate of one flow", "flow_failures", "shop", "order", "rate", 0, "<", 0.1, 0.2, 1e-9, false, ""},
		{"failure count of one flow", "flow_failures", "shop", "order", "count", 0, "<=", 25, 25, 0, true, ""},
		{"failure rate of a scenario", "flow_failures", "admin", "", "rate", 0, "<", 0.6, 7 / 11.0, 1e-9, false, ""},
		{"failure rate of every flow", "flow_failures", "", "", "rate", 0, "<", 0.3, 32 / 146.0, 1e-9, true, ""},
		// A flow whose every run failed has a failure rate, a count of
		// completed flows (0), and no duration.
		{"every run failed: rate", "flow_failures", "admin", "broken", "rate", 0, "<=", 1, 1, 0, true, ""},
		{"every run failed: count", "flow_duration", "admin", "broken", "count", 0, "==", 0, 0, 0, true, ""},
		{"every run failed: no duration", "flow_duration", "admin", "broken", "p95", 95, "<", 1000, 0, 0, false, `no flow "broken" of scenario "admin" completed`},
		{"never ran: no duration", "flow_duration", "admin", "idle", "max", 0, "<", 1000, 0, 0, false, `no flow "idle" of scenario "admin" completed`},
		{"never ran: no count", "flow_duration", "", "idle", "count", 0, ">=", 0, 0, 0, false, `no flow "idle" ended`},
		{"never ran: no failure rate", "flow_failures", "", "idle", "rate", 0, "<", 0.1, 0, 0, false, `no flow "idle" ended`},
		{"never ran: no failure count", "flow_failures", "", "idle", "count", 0, "==", 0, 0, 0, false, `no flow "idle" ended`},
		{"unknown flow", "flow_failures", "shop", "gone", "rate", 0, "<", 0.1, 0, 0, false, `no flow "gone" of scenario "shop" ended`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			th := &config.Threshold{Metric: tc.metric, Scenario: tc.scenario, Flow: tc.flow, Condition: config.Condition{
				Text: tc.name, Aggregation: tc.agg, Percentile: tc.percentile, Op: tc.op, Value: tc.limit,
			}}
			res := evaluate(th, agg, 10*time.Second)
			if d := res.Value - tc.wantValue; d > tc.tolerance || d < -tc.tolerance {
				t.Errorf("value %v, want %v ± %v", res.Value, tc.wantValue, tc.tolerance)
			}
			if res.Passed != tc.wantPass {
				t.Errorf("passed = %v, want %v (value %v %s %v)", res.Passed, tc.wantPass, res.Value, tc.op, tc.limit)
			}
			if res.Flow != tc.flow || res.Scenario != tc.scenario || res.Metric != tc.metric || res.Request != "" {
				t.Errorf("result names metric %q scenario %q flow %q request %q", res.Metric, res.Scenario, res.Flow, res.Request)
			}
			if got := unjudged(th, agg, 10*time.Second); got != tc.nothing {
				t.Errorf("nothing to judge: %q, want %q", got, tc.nothing)
			}
		})
	}
}

// TestRequestThresholdWithNothingToJudge: a request that made no call has
// no latency, no error rate and no checks; its thresholds do not pass on
// the zero they would read, and say why. So does a latency threshold on
// calls that all sent nothing (an expression failed), and a percentile of
// a protocol metric with no sample. A protocol metric's count is judged
// as it stands, as its absence (no nack) is often the point.
func TestRequestThresholdWithNothingToJudge(t *testing.T) {
	agg := metrics.NewAggregator()
	agg.Series("s", "idle")
	unsent := agg.Series("s", "unsent")
	for range 3 {
		unsent.Record(protocols.Sample{Metric: protocols.MetricRequest, Value: time.Millisecond, Error: "eval", Message: "bad expression"})
	}
	busy := agg.Series("s", "busy")
	busy.Record(protocols.Sample{Metric: protocols.MetricRequest, Value: 5 * time.Millisecond, Status: 200})
	busy.RecordChecks(1, 0)
	agg.Flush(time.Unix(0, 0), time.Unix(10, 0))
	cases := []struct {
		metric, request, agg, op string
		limit                    float64
		pass                     bool
		nothing                  string
	}{
		{"latency", "idle", "p95", "<", 100, false, `no call of request "idle" of scenario "s" was made`},
		{"errors", "idle", "rate", "<", 0.01, false, `no call of request "idle" of scenario "s" was made`},
		{"errors", "idle", "count", "==", 0, false, `no call of request "idle" of scenario "s" was made`},
		{"checks", "idle", "rate", ">", 0.99, false, `no check of request "idle" of scenario "s" ran`},
		{"rps", "idle", "rate", "<", 100, true, ""},
		{"amqp_nacked", "idle", "count", "==", 0, true, ""},
		{"ttfb", "idle", "p95", "<", 100, false, `no ttfb sample of request "idle" of scenario "s" was recorded`},
		{"latency", "unsent", "p95", "<", 100, false, `every call of request "unsent" of scenario "s" sent nothing, so none has a latency`},
		{"errors", "unsent", "count", "==", 3, true, ""},
		{"latency", "busy", "p95", "<", 100, true, ""},
		{"errors", "busy", "rate", "<", 0.01, true, ""},
		{"checks", "busy", "rate", ">", 0.99, true, ""},
		{"latency", "", "max", "<", 100, true, ""},
	}
	for _, tc := range cases {
		th := &config.Threshold{Metric: tc.metric, Scenario: "s", Request: tc.request, Condition: config.Condition{
			Text: tc.agg + " " + tc.op, Aggregation: tc.agg, Percentile: 95, Op: tc.op, Value: tc.limit,
		}}
		if res := evaluate(th, agg, 10*time.Second); res.Passed != tc.pass {
			t.Errorf("%s of %q: passed = %v (value %v), want %v", tc.metric, tc.request, res.Passed, res.Value, tc.pass)
		}
		if got := unjudged(th, agg, 10*time.Second); got != tc.nothing {
			t.Errorf("%s of %q: nothing to judge %q, want %q", tc.metric, tc.request, got, tc.nothing)
		}
	}
}
