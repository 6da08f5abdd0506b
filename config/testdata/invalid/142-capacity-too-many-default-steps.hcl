target "shop" {
  base_url = "http://127.0.0.1:8080"
}

scenario "search" {
  executor      = "capacity-search"
  step_duration = "30s"
  start_rate    = 0.01
  max_rate      = 1000000

  request "home" {
    path = "/"
  }
}
