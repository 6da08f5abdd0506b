# start_lateness is recorded by open-model scenarios only.
target "shop" {
  base_url = "http://127.0.0.1:8080"
}

scenario "browse" {
  executor = "constant-vus"
  vus      = 1
  duration = "1s"

  request "home" {
    path = "/"
  }
}

threshold {
  metric    = "start_lateness"
  condition = "p99 < 10ms"
}
