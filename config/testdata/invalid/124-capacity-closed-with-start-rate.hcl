target "shop" {
  base_url = "http://127.0.0.1:8080"
}

scenario "search" {
  executor = "capacity-search"
  model         = "closed"
  step_duration = "30s"
  start_vus     = 10
  max_vus       = 100
  start_rate    = 10

  request "home" {
    path = "/"
  }
}
