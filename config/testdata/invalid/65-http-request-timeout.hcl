# http's own decoder refuses a request timeout that is not a duration,
# at load, where every call would have failed.
target "shop" {
  base_url = "http://127.0.0.1:8080"
}

scenario "browse" {
  executor = "constant-vus"
  vus      = 1
  duration = "1s"

  request "home" {
    path    = "/"
    timeout = "fast"
  }
}
