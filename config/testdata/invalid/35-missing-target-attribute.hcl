target "shop" {
  headers = { Accept = "application/json" }
}

scenario "browse" {
  executor = "constant-vus"
  vus      = 10
  duration = "1m"

  request "home" {
    path = "/"
  }
}
