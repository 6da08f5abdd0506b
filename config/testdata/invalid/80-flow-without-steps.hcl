# A flow with no steps would send nothing.
target "shop" {
  base_url = "http://127.0.0.1:8080"
}

scenario "shop" {
  executor = "constant-vus"
  vus      = 2
  duration = "10s"

  request "home" {
    path = "/"
  }

  flow "order" {
    weight = 2
  }
}
