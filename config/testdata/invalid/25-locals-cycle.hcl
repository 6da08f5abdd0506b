locals {
  host = local.url
  url  = "http://${local.host}:8080"
}

target "shop" {
  base_url = local.url
}

scenario "browse" {
  executor = "constant-vus"
  vus      = 10
  duration = "1m"

  request "home" {
    path = "/"
  }
}
