target "shop" {
  base_url = "http://127.0.0.1:8080"
}

scenario "ramp" {
  executor = "ramping-arrival-rate"
  stages   = [{ duration = "1m", target = 1e12 }]

  request "home" {
    path = "/"
  }
}
