# A setup alone sends nothing per iteration.
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
}
