# A JMeter-style thread group against two targets.
target "web" {
  base_url = "http://127.0.0.1:8080"
}

target "api" {
  base_url             = "https://127.0.0.1:8443"
  insecure_skip_verify = true
}

scenario "smoke" {
  executor      = "iterations"
  vus           = 5
  iterations    = 10
  ramp_up       = "10s"
  max_duration  = "5m"
  think_time    = 0.5
  graceful_stop = "5s"
  target        = "api"

  request "health" {
    path = "/health"
  }
  request "home" {
    target = "web"
    path   = "/"
  }
}

scenario "steady" {
  executor = "constant-vus"
  vus      = 3
  duration = duration("1m30s")
  target   = "web"

  request "home" {
    path = "/"
  }
}

threshold {
  metric    = "ttfb"
  scenario  = "steady"
  request   = "home"
  condition = "p99.9 <= 1.5s"
}
