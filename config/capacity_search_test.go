package config

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2"
)

func TestCapacitySearchExecutor(t *testing.T) {
	tests := []struct {
		name  string
		attrs string
		want  Executor
	}{
		{"open by factor, defaults", `
  executor      = "capacity-search"
  step_duration = "30s"
  start_rate    = 100
  max_rate      = 300`,
			// 100 x 1.25 each step, rounded to 0.01, then max_rate itself;
			// the pool is sized for 300/s as an arrival-rate executor's.
			CapacitySearch{Model: ModelOpen, Steps: []float64{100, 125, 156.25, 195.31, 244.14, 300},
				StepDuration: 30 * time.Second, MinGain: 50, TimeUnit: time.Second, PreAllocatedVUs: 3, MaxVUs: 300, MaxVUsDefault: true}},
		{"open by list, bounds", `
  executor          = "capacity-search"
  step_duration     = "2s"
  steps             = [10, 20, 40]
  time_unit         = "100ms"
  min_gain          = 30
  max_error_rate    = 0.05
  max_p95           = "250ms"
  pre_allocated_vus = 4
  max_vus           = 50
  max_queue_wait    = "1s"`,
			CapacitySearch{Model: ModelOpen, Steps: []float64{10, 20, 40}, StepDuration: 2 * time.Second, MinGain: 30,
				MaxErrorRate: 0.05, MaxP95: 250 * time.Millisecond, TimeUnit: 100 * time.Millisecond,
				PreAllocatedVUs: 4, MaxVUs: 50, MaxQueueWait: time.Second}},
		{"closed by factor rounds VUs up", `
  executor      = "capacity-search"
  model         = "closed"
  step_duration = "1m"
  start_vus     = 2
  max_vus       = 10
  step_factor   = 1.5
  think_time    = "1s"`,
			// 2, 3, ceil(4.5)=5, ceil(7.5)=8, then max_vus.
			CapacitySearch{Model: ModelClosed, Steps: []float64{2, 3, 5, 8, 10}, StepDuration: time.Minute, MinGain: 50, TimeUnit: time.Second}},
		{"closed factor never repeats a step", `
  executor      = "capacity-search"
  model         = "closed"
  step_duration = "1m"
  start_vus     = 1
  max_vus       = 4
  step_factor   = 1.1`,
			CapacitySearch{Model: ModelClosed, Steps: []float64{1, 2, 3, 4}, StepDuration: time.Minute, MinGain: 50, TimeUnit: time.Second}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			test := mustParse(t, openScenario(tt.attrs), testOptions())
			if got := test.Scenarios[0].Executor; !reflect.DeepEqual(got, tt.want) {
				t.Errorf("executor = %#v\nwant       %#v", got, tt.want)
			}
		})
	}
}

// TestCapacitySearchBounds checks min_gain and max_error_rate at the
// edges of their ranges: min_gain is above 0 and at most 100,
// max_error_rate above 0 and below 1.
func TestCapacitySearchBounds(t *testing.T) {
	tests := []struct {
		attr string
		err  string // "" when it loads
	}{
		{"min_gain = 100", ""},
		{"min_gain = 0.5", ""},
		{"min_gain = 0", "Invalid min_gain"},
		{"min_gain = 100.5", "Invalid min_gain"},
		{"max_error_rate = 0.99", ""},
		{"max_error_rate = 1", "Invalid max_error_rate"},
		{"max_error_rate = 0", "Invalid max_error_rate"},
	}
	for _, tt := range tests {
		t.Run(tt.attr, func(t *testing.T) {
			test, diags := parseString(t, openScenario(`
  executor      = "capacity-search"
  step_duration = "30s"
  steps         = [10, 20]
  `+tt.attr), testOptions())
			if tt.err == "" {
				if diags.HasErrors() {
					t.Fatal(render(t, test, diags))
				}
				return
			}
			errs := diags.Errs()
			if len(errs) != 1 || !strings.Contains(errs[0].Error(), tt.err) {
				t.Fatalf("want one error %q, got:\n%s", tt.err, render(t, test, diags))
			}
			// The subject is the value, on the attribute's line (line 8 of
			// openScenario's test, indented by two spaces).
			col := len("  ") + strings.Index(tt.attr, "= ") + len("= ") + 1
			if d := errs[0].(*hcl.Diagnostic); d.Subject == nil || d.Subject.Start.Line != 8 || d.Subject.Start.Column != col {
				t.Errorf("error at %v, want the value at 8:%d", d.Subject, col)
			}
		})
	}
}
