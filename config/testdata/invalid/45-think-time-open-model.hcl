target "shop" {
  base_url = "http://127.0.0.1:8080"
}

scenario "orders" {
  executor   = "constant-arrival-rate"
  rate       = 100
  duration   = "1m"
  think_time = "1s"

  request "home" {
    path = "/"
  }
}
