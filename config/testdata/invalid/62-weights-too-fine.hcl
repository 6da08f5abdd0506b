target "shop" {
  base_url = "http://127.0.0.1:8080"
}

scenario "browse" {
  executor = "constant-vus"
  vus      = 10
  duration = "1m"

  request "home" {
    weight = 999999
    path   = "/"
  }
  request "search" {
    weight = 70001
    path   = "/search"
  }
}
