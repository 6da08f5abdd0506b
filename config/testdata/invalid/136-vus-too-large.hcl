target "shop" {
  base_url = "http://127.0.0.1:8080"
}

scenario "browse" {
  executor = "constant-vus"
  vus      = 1e18
  duration = "1m"

  request "home" {
    path = "/"
  }
}
