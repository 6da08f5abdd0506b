# A base_url without its scheme is refused at load, at the attribute.
target "shop" {
  base_url = "127.0.0.1:8080"
}

scenario "browse" {
  executor = "constant-vus"
  vus      = 1
  duration = "1s"

  request "home" {
    path = "/"
  }
}
