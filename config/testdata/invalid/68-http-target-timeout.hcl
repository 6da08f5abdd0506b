# A target is checked at load by the decoder Open uses.
target "shop" {
  base_url = "http://127.0.0.1:8080"
  timeout  = "fast"
}

scenario "browse" {
  executor = "constant-vus"
  vus      = 1
  duration = "1s"

  request "home" {
    path = "/"
  }
}
