# buy reads vu.vars.product, which only the step after it captures.
target "shop" {
  base_url = "http://127.0.0.1:8080"
}

scenario "shop" {
  executor = "constant-vus"
  vus      = 2
  duration = "10s"

  flow "order" {
    request "buy" {
      method = "POST"
      path   = "/api/orders"
      json   = { product_id = vu.vars.product }
    }
    request "list" {
      path = "/api/products"
      capture {
        product = json("items.0.id")
      }
    }
  }
}
