# The regex of a capture is compiled at load: this one has an unclosed group.
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
      capture {
        product = regex("id=(\\d+")
      }
    }
  }
}
