target "shop" {
  base_url = "http://127.0.0.1:8080"
}

scenario "orders" {
  executor = "ramping-arrival-rate"
  stages = [
    { duration = "30s", target = 50 },
    { duration = "1m", target = -0.5 },
  ]

  request "home" {
    path = "/"
  }
}
