# A setup with no steps would do nothing.
target "shop" {
  base_url = "http://127.0.0.1:8080"
}

scenario "shop" {
  executor = "constant-vus"
  vus      = 2
  duration = "10s"

  setup {
    think_time = "1s"
  }

  request "home" {
    path = "/"
  }
}
