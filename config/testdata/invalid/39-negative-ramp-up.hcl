target "shop" {
  base_url = "http://127.0.0.1:8080"
}

scenario "smoke" {
  executor   = "iterations"
  vus        = 5
  iterations = 10
  ramp_up    = "-10s"

  request "home" {
    path = "/"
  }
}
