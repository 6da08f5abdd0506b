plugin "mqtt" {
  source = "./bin/hload-plugin-mqtt"
}

plugin "mqtt" {
  source = "./bin/hload-plugin-mqtt-v2"
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
