target "shop" {
  base_url = "http://127.0.0.1:8080"
}

scenario "search" {
  executor = "capacity-search"
  step_duration = "30s"
  steps         = [50, 100, 100, 200]

  request "home" {
    path = "/"
  }
}
