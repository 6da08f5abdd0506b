# setup is the name of a scenario's setup, not a flow's.
target "shop" {
  base_url = "http://127.0.0.1:8080"
}

scenario "shop" {
  executor = "constant-vus"
  vus      = 2
  duration = "10s"

  flow "setup" {
    request "login" {
      path = "/api/login"
    }
  }
}
