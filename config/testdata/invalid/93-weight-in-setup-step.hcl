# Setup steps run in order, once per VU: none has a weight.
target "shop" {
  base_url = "http://127.0.0.1:8080"
}

scenario "shop" {
  executor = "constant-vus"
  vus      = 2
  duration = "10s"

  setup {
    request "login" {
      weight = 2
      path   = "/api/login"
    }
  }

  request "home" {
    path = "/"
  }
}
