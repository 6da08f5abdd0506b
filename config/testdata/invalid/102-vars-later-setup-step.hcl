# A setup step reads what the next setup step captures.
target "shop" {
  base_url = "http://127.0.0.1:8080"
}

scenario "shop" {
  executor = "constant-vus"
  vus      = 2
  duration = "10s"

  setup {
    request "profile" {
      path    = "/api/me"
      headers = { Authorization = "Bearer ${vu.vars.token}" }
    }
    request "login" {
      path = "/api/login"
      capture {
        token = json("token")
      }
    }
  }

  request "home" {
    path = "/"
  }
}
