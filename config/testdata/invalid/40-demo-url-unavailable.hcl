target "demo" {
  base_url = demo_url()
}

scenario "browse" {
  executor = "constant-vus"
  vus      = 10
  duration = "1m"

  request "home" {
    path = "/"
  }
}
