variable "base_url" {
  default = "http://127.0.0.1:8080"
}
variable "token" {
  default = "t"
}

target "shop" {
  base_url = var.base_ur
}

scenario "browse" {
  executor = "constant-vus"
  vus      = 1
  duration = "1m"

  request "home" {
    path = "/"
  }
}
