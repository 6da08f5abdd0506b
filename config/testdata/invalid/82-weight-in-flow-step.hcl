# A step has no weight: its flow has.
target "shop" {
  base_url = "http://127.0.0.1:8080"
}

scenario "shop" {
  executor = "constant-vus"
  vus      = 2
  duration = "10s"

  flow "order" {
    weight = 10
    request "list" {
      path = "/api/products"
    }
    request "buy" {
      weight = 5
      method = "POST"
      path   = "/api/orders"
    }
  }
}
