package config

import (
	"reflect"
	"testing"
	"time"
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
