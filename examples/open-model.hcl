# The open model against the embedded demo shop: iterations arrive at a
# planned rate whatever the shop's latency, as real users do. Latency is
# measured from each iteration's planned start, so a stall shows; the summary
# reports service_time (from the actual send) and start_lateness beside it.
#
#   go run ./cmd/hload plan examples/open-model.hcl
#   go run ./cmd/hload apply examples/open-model.hcl

data "csv" "users" {
  path = "data/users.csv"
  mode = "sequential" # one cursor per scenario, shared by its VUs; wraps around
}

target "shop" {
  base_url = demo_url()
}

scenario "arrivals" {
  executor   = "ramping-arrival-rate"
  start_rate = 20
  stages = [
    { duration = "5s", target = 200 },  # 20/s to 200/s
    { duration = "10s", target = 200 }, # hold
  ]
  max_vus = 100

  request "browse" {
    weight = 9
    path   = "/products"
    query  = { page = "${random_int(1, 50)}" }
  }

  request "login" {
    weight = 1
    method = "POST"
    path   = "/login"
    json   = { email = data.users.email, password = data.users.password }
    check {
      status = [200]
    }
  }
}

threshold {
  metric    = "latency"
  condition = "p99 < 250ms"
}

threshold {
  metric    = "checks"
  condition = "rate == 100%"
}
