# A capacity search against hload's embedded demo: GET /capacity is served by
# 4 workers of 20 ms each, so it answers at most 200 requests/s, with a queue
# of 64 in front of them and 503 beyond it. The search steps the arrival rate
# up from 50/s by 1.25 each step, holds each step 2 s, and stops at the first
# step whose throughput no longer follows the load while its latency grows:
# it names the step before it, near 190/s, as the saturation point.
#
#   go run ./cmd/hload plan examples/capacity.hcl
#   go run ./cmd/hload apply examples/capacity.hcl --summary-export capacity.json
#
# See docs/capacity.md.

target "demo" {
  base_url = demo_url()
  timeout  = "5s"
}

scenario "search" {
  executor       = "capacity-search"
  start_rate     = 50
  step_factor    = 1.25
  max_rate       = 400
  step_duration  = "2s"
  min_gain       = 50
  max_error_rate = 0.05
  max_p95        = "1s"
  graceful_stop  = "5s"

  request "capacity" {
    path = "/capacity"
  }
}
