# A request sends one body: body or json, not both.
target "shop" {
  base_url = "http://127.0.0.1:8080"
}

scenario "browse" {
  executor = "constant-vus"
  vus      = 1
  duration = "1s"

  request "order" {
    method = "POST"
    path   = "/orders"
    body   = "sku=1"
    json   = { sku = 1 }
  }
}
