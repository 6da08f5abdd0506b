package config

import (
	"testing"
	"time"

	"github.com/zclconf/go-cty/cty"
)

func TestParseCondition(t *testing.T) {
	tests := []struct {
		text   string
		metric string
		want   Condition // Text is filled in from text
		bad    bool
	}{
		{text: "p95 < 200ms", metric: "latency", want: Condition{Aggregation: "p95", Percentile: 95, Op: "<", Value: 200, IsDuration: true}},
		{text: "p99.9<=1.5s", metric: "latency", want: Condition{Aggregation: "p99.9", Percentile: 99.9, Op: "<=", Value: 1500, IsDuration: true}},
		{text: "p999 < 2s", metric: "latency", want: Condition{Aggregation: "p999", Percentile: 99.9, Op: "<", Value: 2000, IsDuration: true}},
		{text: "p50 >= 10", metric: "latency", want: Condition{Aggregation: "p50", Percentile: 50, Op: ">=", Value: 10}},
		{text: "max != 3s", metric: "latency", want: Condition{Aggregation: "max", Op: "!=", Value: 3000, IsDuration: true}},
		{text: "mean == 100", metric: "rps", want: Condition{Aggregation: "mean", Op: "==", Value: 100}},
		{text: "rate < 1%", metric: "errors", want: Condition{Aggregation: "rate", Op: "<", Value: 0.01}},
		{text: "rate < 0.05", metric: "checks", want: Condition{Aggregation: "rate", Op: "<", Value: 0.05}},
		{text: "count > 5", metric: "errors", want: Condition{Aggregation: "count", Op: ">", Value: 5}},
		{text: "p90 < 50ms", metric: "ttfb", want: Condition{Aggregation: "p90", Percentile: 90, Op: "<", Value: 50, IsDuration: true}},
		{text: "p95", metric: "latency", bad: true},
		{text: "p95 <", metric: "latency", bad: true},
		{text: "< 2s", metric: "latency", bad: true},
		{text: "p95 => 2s", metric: "latency", bad: true},
		{text: "p95 = 2s", metric: "latency", bad: true},
		{text: "p0 < 2s", metric: "latency", bad: true},
		{text: "p101 < 2s", metric: "latency", bad: true},
		{text: "p9.5.1 < 2s", metric: "latency", bad: true},
		{text: "median < 2s", metric: "latency", bad: true},
		{text: "p95 < fast", metric: "latency", bad: true},
		{text: "p95 < Inf", metric: "latency", bad: true},
		{text: "p95 < 1%", metric: "latency", bad: true},
		{text: "rate < 1%", metric: "latency", bad: true},
		{text: "p95 < 1%", metric: "errors", bad: true},
		{text: "rate < 2s", metric: "errors", bad: true},
		{text: "rate < 5", metric: "errors", bad: true},
		{text: "count < 1%", metric: "checks", bad: true},
		{text: "p95 < 100", metric: "rps", bad: true},
		{text: "rate > 10%", metric: "rps", bad: true},
		{text: "p95 < 10%", metric: "connect", bad: true},
	}
	for _, tt := range tests {
		t.Run(tt.metric+" "+tt.text, func(t *testing.T) {
			c, kind, err := parseCondition(tt.text)
			if err == nil {
				err = checkCondition(tt.metric, c, kind)
			}
			if tt.bad {
				if err == nil {
					t.Fatalf("no error, got %+v", c)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.want.Text = tt.text
			if c != tt.want {
				t.Errorf("got %+v, want %+v", c, tt.want)
			}
		})
	}
}

func TestDurationFromValue(t *testing.T) {
	tests := []struct {
		v    cty.Value
		want time.Duration
		bad  bool
	}{
		{v: cty.StringVal("1m30s"), want: 90 * time.Second},
		{v: cty.StringVal("500ms"), want: 500 * time.Millisecond},
		{v: cty.StringVal("2h"), want: 2 * time.Hour},
		{v: cty.NumberIntVal(30), want: 30 * time.Second},
		{v: cty.NumberFloatVal(0.1), want: 100 * time.Millisecond},
		{v: cty.StringVal("30"), bad: true},
		{v: cty.StringVal("soon"), bad: true},
		{v: cty.NumberFloatVal(1e300), bad: true},
		{v: cty.True, bad: true},
		{v: cty.ListValEmpty(cty.String), bad: true},
	}
	for _, tt := range tests {
		t.Run(tt.v.GoString(), func(t *testing.T) {
			got, err := durationFromValue(tt.v)
			if tt.bad {
				if err == nil {
					t.Fatalf("no error, got %s", got)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("got %s, %v; want %s", got, err, tt.want)
			}
		})
	}
}
