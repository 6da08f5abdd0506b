target "shop" {
  base_url = "http://127.0.0.1:8080"
}

scenario "browse" {
  executor = "constant-vus"
  vus      = 1
  duration = "1s"

  request "home" {
    path = "/"
  }
}

# A threshold on a metric nothing produces would pass on a value of 0.
threshold {
  metric    = "latncy"
  condition = "p95 < 200ms"
}
