# Two setup blocks in one scenario.
target "shop" {
  base_url = "http://127.0.0.1:8080"
}

scenario "shop" {
  executor = "constant-vus"
  vus      = 2
  duration = "10s"

  setup {
    request "login" {
      path = "/api/login"
    }
  }

  setup {
    request "warm" {
      path = "/api/warm"
    }
  }

  request "home" {
    path = "/"
  }
}
