target "shop" {
  base_url = "http://127.0.0.1:8080"
}

scenario "search" {
  executor      = "capacity-search"
  step_duration = "30s"
  start_rate    = 100
  max_rate      = 1000
  step_factor   = 1.01

  request "home" {
    path = "/"
  }
}
