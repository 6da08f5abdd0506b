target "shop" {
  base_url = "http://127.0.0.1:8080"
}

scenario "browse" {
  executor = "ramping-vus"
  stages = [
    { duration = "30s", target = 10 },
    { duration = "1m", target = -5 },
  ]

  request "home" {
    path = "/"
  }
}
