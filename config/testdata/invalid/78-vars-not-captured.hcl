# vu.vars.tokn is captured by no request: a typo of token.
target "shop" {
  base_url = "http://127.0.0.1:8080"
}

scenario "shop" {
  executor = "constant-vus"
  vus      = 2
  duration = "10s"

  setup {
    request "login" {
      method = "POST"
      path   = "/api/login"
      capture {
        token = json("token")
      }
    }
  }

  flow "order" {
    request "list" {
      path    = "/api/products"
      headers = { Authorization = "Bearer ${vu.vars.tokn}" }
    }
  }
}
