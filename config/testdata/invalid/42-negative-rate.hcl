target "shop" {
  base_url = "http://127.0.0.1:8080"
}

scenario "orders" {
  executor = "constant-arrival-rate"
  rate     = -10
  duration = "1m"

  request "home" {
    path = "/"
  }
}
