target "shop" {
  base_url = "http://127.0.0.1:8080"
}

target "api" {
  base_url = "http://127.0.0.1:8081"
}

scenario "browse" {
  executor = "constant-vus"
  vus      = 10
  duration = "1m"

  request "home" {
    target = "shoop"
    path   = "/"
  }
}
