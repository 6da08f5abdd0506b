# Another flow captures product, but flows do not run before one another.
target "shop" {
  base_url = "http://127.0.0.1:8080"
}

scenario "shop" {
  executor = "constant-vus"
  vus      = 2
  duration = "10s"

  flow "browse" {
    request "list" {
      path = "/api/products"
      capture {
        product = json("items.0.id")
      }
    }
  }

  flow "order" {
    request "buy" {
      method = "POST"
      path   = "/api/orders"
      json   = { product_id = vu.vars.product }
    }
  }
}
