package metrics

import (
	"encoding/json"
	"testing"
	"time"
)

// TestSentNothingOutOfLatency: a call that sent nothing (its expressions
// failed, or the protocol refused its values before sending) counts in
// the count and the errors, but not in the latency figures, of the
// interval, the run and the percentiles thresholds read; a call that
// failed on the wire keeps its latency.
func TestSentNothingOutOfLatency(t *testing.T) {
	sent := req(20*time.Millisecond, 200, "", 100, 200)
	tests := []struct {
		name   string
		sample Sample
		timed  bool
	}{
		{"eval error", req(0, 0, ErrEval, 0, 0), false},
		{"eval error in the open model (its lateness)", req(5*time.Millisecond, 0, ErrEval, 0, 0), false},
		{"protocol error before sending", req(5*time.Millisecond, 0, ErrProtocol, 0, 0), false},
		{"protocol error on a malformed answer", req(5*time.Millisecond, 0, ErrProtocol, 80, 12), true},
		{"protocol error with a status", req(5*time.Millisecond, 200, ErrProtocol, 0, 0), true},
		{"timeout while connecting", req(5*time.Millisecond, 0, ErrTimeout, 0, 0), true},
		{"connection refused", req(5*time.Millisecond, 0, ErrConnectionRefused, 0, 0), true},
		{"a 500", req(5*time.Millisecond, 500, "http_5xx", 100, 200), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := NewAggregator()
			s := a.Series("sc", "rq")
			s.Record(sent)
			s.Record(tt.sample)
			interval := a.Flush(t0, t0.Add(time.Second))[0]
			total, _ := a.Totals("", "", time.Second)
			wantMin := 20.0
			if tt.timed {
				wantMin = 5
			}
			for _, f := range []RequestFigures{interval.RequestFigures, total} {
				if f.Count != 2 || f.Errors != 1 {
					t.Errorf("count %d, errors %d; want 2 and 1", f.Count, f.Errors)
				}
				if !near(f.Latency.Min, wantMin, 0.001) {
					t.Errorf("latency min %v ms, want %v", f.Latency.Min, wantMin)
				}
			}
			if p := a.Quantile("", "", "latency", 1); !near(p, wantMin, 0.001) {
				t.Errorf("p1 %v ms, want %v", p, wantMin)
			}
		})
	}
}

// TestCountOnlyMetric: a metric whose samples carry no time, such as
// sse_events, is a count: its figures hold its count and its rate, its
// time figures are 0 (not 1 us), and its JSON has no percentiles; a timed
// metric keeps them.
func TestCountOnlyMetric(t *testing.T) {
	a := NewAggregator()
	s := a.Series("sc", "rq")
	for range 40 {
		s.Record(Sample{Metric: "sse_events"})
	}
	s.Record(Sample{Metric: MetricTTFB, Value: 3 * time.Millisecond})
	interval := a.Flush(t0, t0.Add(2*time.Second))[0].Metrics
	_, total := a.Totals("", "", 4*time.Second)
	perRequest := a.Requests(4 * time.Second)["sc"]["rq"].Metrics
	for _, c := range []struct {
		name string
		m    map[string]MetricFigures
		rate float64
	}{{"interval", interval, 20}, {"run", total, 10}, {"request", perRequest, 10}} {
		events := c.m["sse_events"]
		if !events.CountOnly() || events.Count != 40 || events.Rate != c.rate || events.LatencyFigures != (LatencyFigures{}) {
			t.Errorf("%s: sse_events = %+v, want a count of 40 at %v/s and no time", c.name, events, c.rate)
		}
		if ttfb := c.m[MetricTTFB]; ttfb.CountOnly() || !near(ttfb.P50, 3, 0.001) {
			t.Errorf("%s: ttfb = %+v, want a time of 3 ms", c.name, ttfb)
		}
	}
	data, err := json.Marshal(total)
	if err != nil {
		t.Fatal(err)
	}
	var back map[string]map[string]float64
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	if got := back["sse_events"]; len(got) != 2 || got["count"] != 40 || got["rate"] != 10 {
		t.Errorf("sse_events in JSON = %v, want only count 40 and rate 10", got)
	}
	if got := back[MetricTTFB]; got["count"] != 1 || got["rate"] != 0.25 || !near(got["p50"], 3, 0.001) || len(got) != 11 {
		t.Errorf("ttfb in JSON = %v, want count, rate and the 9 time figures", got)
	}
	var read map[string]MetricFigures
	if err := json.Unmarshal(data, &read); err != nil {
		t.Fatal(err)
	}
	if !read["sse_events"].CountOnly() || read["sse_events"].Count != 40 {
		t.Errorf("read back, sse_events = %+v, want a count of 40", read["sse_events"])
	}
}
