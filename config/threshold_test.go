package config

import (
	"strings"
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
		{text: "p50 >= 10ms", metric: "latency", want: Condition{Aggregation: "p50", Percentile: 50, Op: ">=", Value: 10, IsDuration: true}},
		{text: "count > 3", metric: "flow_duration", want: Condition{Aggregation: "count", Op: ">", Value: 3}},
		{text: "count < 7", metric: "ttfb", want: Condition{Aggregation: "count", Op: "<", Value: 7}},
		{text: "rate < 0.5", metric: "sse_events", want: Condition{Aggregation: "rate", Op: "<", Value: 0.5}},
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

// TestConditionBareNumber: a duration compared with a number of no unit
// is refused with both readings written out, where a number is what the
// metric counts it is taken as it is.
func TestConditionBareNumber(t *testing.T) {
	tests := []struct {
		text, metric string
		want         string // in the error; "" for no error
	}{
		{"p95 < 1", "latency", `"p95 < 1" compares a duration with 1, which has no unit; write "p95 < 1s" for seconds or "p95 < 1ms" for milliseconds`},
		{"mean <= 0.25", "latency", `write "mean <= 0.25s" for seconds or "mean <= 0.25ms" for milliseconds`},
		{"max < 200", "flow_duration", `write "max < 200s" for seconds or "max < 200ms" for milliseconds`},
		{"p99 < 50", "ttfb", `write "p99 < 50s" for seconds or "p99 < 50ms" for milliseconds`},
		{"p95 < 1s", "latency", ""},
		{"count > 10", "flow_duration", ""},
		{"count < 5", "errors", ""},
		{"rate < 0.01", "errors", ""},
		{"mean > 100", "rps", ""},
	}
	for _, tt := range tests {
		t.Run(tt.metric+" "+tt.text, func(t *testing.T) {
			c, kind, err := parseCondition(tt.text)
			if err != nil {
				t.Fatal(err)
			}
			err = checkCondition(tt.metric, c, kind)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tt.want != "" && err == nil:
				t.Fatalf("no error, got %+v", c)
			case tt.want != "" && !strings.Contains(err.Error(), tt.want):
				t.Errorf("error %q\nwant it to contain %q", err, tt.want)
			}
		})
	}
}

// TestDurationTooLong: a duration beyond what hload can count is refused
// with the limit, whether written as a string or as seconds, and a
// malformed one is still called malformed.
func TestDurationTooLong(t *testing.T) {
	if got := time.Duration(1<<63 - 1).Truncate(time.Hour).String(); got != maxDuration+"0m0s" {
		t.Fatalf("maxDuration is %s, but the longest duration is %s", maxDuration, got)
	}
	tests := []struct {
		v    cty.Value
		want string
	}{
		{cty.StringVal("99999999999h"), `"99999999999h" is longer than the longest duration hload can count, 2562047h`},
		{cty.StringVal("2562048h"), `is longer than the longest duration hload can count`},
		{cty.NumberFloatVal(1e12), `1e+12 seconds is longer than the longest duration hload can count, 2562047h`},
		{cty.StringVal("99999999999hours"), `"99999999999hours" is not a duration`},
		{cty.StringVal("1h1"), `"1h1" is not a duration`},
	}
	for _, tt := range tests {
		t.Run(tt.v.GoString(), func(t *testing.T) {
			_, err := durationFromValue(tt.v)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want it to contain %q", err, tt.want)
			}
		})
	}
	if d, err := durationFromValue(cty.StringVal("2562047h")); err != nil || d != 2562047*time.Hour {
		t.Errorf("2562047h: %v, %v", d, err)
	}
}
