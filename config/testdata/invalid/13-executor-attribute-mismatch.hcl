target "shop" {
  base_url = "http://127.0.0.1:8080"
}

scenario "browse" {
  executor = "ramping-vus"
  vus      = 10
  stages   = [{ duration = "1m", target = 10 }]

  request "home" {
    path = "/"
  }
}
