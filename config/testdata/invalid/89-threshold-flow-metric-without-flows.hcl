# No flow and no setup: flow_duration would never see a sample.
target "shop" {
  base_url = "http://127.0.0.1:8080"
}

scenario "shop" {
  executor = "constant-vus"
  vus      = 2
  duration = "10s"

  request "home" {
    path = "/"
  }
}

threshold {
  metric    = "flow_duration"
  condition = "p95 < 2s"
}
