target "shop" {
  base_url = "http://127.0.0.1:8080"
}

scenario "smoke" {
  executor   = "iterations"
  vus        = 0
  iterations = 10

  request "home" {
    path = "/"
  }
}
