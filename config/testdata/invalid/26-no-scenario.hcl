target "shop" {
  base_url = "http://127.0.0.1:8080"
}
