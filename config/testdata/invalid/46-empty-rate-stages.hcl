target "shop" {
  base_url = "http://127.0.0.1:8080"
}

scenario "orders" {
  executor   = "ramping-arrival-rate"
  start_rate = 10
  stages     = []

  request "home" {
    path = "/"
  }
}
