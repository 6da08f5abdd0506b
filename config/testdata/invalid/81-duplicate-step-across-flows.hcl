# Two flows each have a step named list: each needs figures of its own.
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
    }
  }

  flow "order" {
    request "list" {
      path = "/api/products?sort=price"
    }
    request "buy" {
      method = "POST"
      path   = "/api/orders"
    }
  }
}
