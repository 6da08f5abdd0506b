target "shop" {
  base_url = "http://127.0.0.1:8080"
}

scenario "browse" {
  executor      = "capacity-search"
  duration      = "1m"
  step_duration = "30s"
  steps         = [10, 20, 40]

  request "home" {
    path = "/"
  }
}
