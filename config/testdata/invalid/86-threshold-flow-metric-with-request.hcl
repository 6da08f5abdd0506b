# flow_duration is per flow: a request filter makes no sense.
target "shop" {
  base_url = "http://127.0.0.1:8080"
}

scenario "shop" {
  executor = "constant-vus"
  vus      = 2
  duration = "10s"

  flow "order" {
    request "list" {
      path = "/api/products"
    }
  }
}

threshold {
  metric    = "flow_duration"
  request   = "list"
  condition = "p95 < 2s"
}
