package main

import (
	"strings"
	"testing"
)

const capacityPlan = `
target "web" {
  base_url = "http://127.0.0.1:1"
}
scenario "search" {
  executor       = "capacity-search"
  start_rate     = 100
  max_rate       = 200
  step_duration  = "30s"
  max_error_rate = 0.01
  request "home" {
    path = "/"
  }
}
`

// TestPlanCapacitySteps: plan lists every step a capacity search may take
// and what stops it; a sharded plan or run of it is refused as a usage
// error, since each machine would judge the steps alone.
func TestPlanCapacitySteps(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "test.hcl", capacityPlan)
	r := hload(t, dir, "plan", "test.hcl")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	want := `  duration     at most 2m30s (+ up to 30s graceful stop)
  VU pool      2 pre-allocated, up to 200 (max_vus); it grows only while iterations wait, 8 VUs at a time
  connections  2 opened before the first iteration, up to 200 at max_vus (1 per VU)
  steps        up to 5 of 30s each; the search stops at the first that does not hold:
      step 1     from 0s     100 iterations/s
      step 2    from 30s     125 iterations/s
      step 3   from 1m0s  156.25 iterations/s
      step 4  from 1m30s  195.31 iterations/s
      step 5   from 2m0s     200 iterations/s
  saturation   a step whose successful calls/s grew by less than 50 % of its load's gain while its p95 grew
  stops        at an error rate above 1 %
`
	if !strings.Contains(r.stdout, want) {
		t.Errorf("plan:\n%s\nwant it to hold:\n%s", r.stdout, want)
	}
	for _, cmd := range []string{"plan", "apply"} {
		r = hload(t, dir, cmd, "--segment", "1/2", "test.hcl")
		if r.code != exitUsage || !strings.Contains(r.stderr, "cannot be sharded") {
			t.Errorf("%s --segment 1/2: exit %d, stderr %q; want %d and a refusal", cmd, r.code, r.stderr, exitUsage)
		}
	}
}
