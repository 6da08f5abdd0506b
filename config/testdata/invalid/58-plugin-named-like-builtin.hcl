# A plugin may not take a built-in protocol's name.
plugin "http" {
  source = "./bin/my-http"
}

target "shop" {
  base_url = "http://127.0.0.1:8080"
}

scenario "browse" {
  executor = "constant-vus"
  vus      = 1
  duration = "1s"

  request "home" {
    path = "/"
  }
}
