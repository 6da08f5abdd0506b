# The flow filter names a flow that does not exist: a typo of order.
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
  metric    = "flow_failures"
  flow      = "ordr"
  condition = "rate < 10%"
}
