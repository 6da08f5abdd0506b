variable "base_url" {
  description = "Where the shop runs"
}

target "shop" {
  base_url = var.base_url
}

scenario "browse" {
  executor = "constant-vus"
  vus      = 10
  duration = "1m"

  request "home" {
    path = "/"
  }
}
