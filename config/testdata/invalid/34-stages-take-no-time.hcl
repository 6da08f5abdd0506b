target "shop" {
  base_url = "http://127.0.0.1:8080"
}

scenario "browse" {
  executor = "ramping-vus"
  stages   = [{ duration = "0s", target = 10 }]

  request "home" {
    path = "/"
  }
}
