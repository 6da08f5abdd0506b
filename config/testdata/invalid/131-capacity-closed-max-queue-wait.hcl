target "shop" {
  base_url = "http://127.0.0.1:8080"
}

scenario "search" {
  executor = "capacity-search"
  model          = "closed"
  step_duration  = "30s"
  steps          = [1, 2, 4, 8]
  max_queue_wait = "1s"

  request "home" {
    path = "/"
  }
}
