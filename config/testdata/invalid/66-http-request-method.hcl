# A misspelled method is refused at load.
target "shop" {
  base_url = "http://127.0.0.1:8080"
}

scenario "browse" {
  executor = "constant-vus"
  vus      = 1
  duration = "1s"

  request "home" {
    method = "GTE"
    path   = "/"
  }
}
