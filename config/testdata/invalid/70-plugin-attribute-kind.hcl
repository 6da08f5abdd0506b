# A plugin checks its attributes at load through the same validator its
# Open uses: here it wants a duration, and true becomes the string "true".
plugin "kv" {
  source = "./bin/hload-plugin-kv"
}

target "store" {
  protocol = "kv"
  address  = "127.0.0.1:6379"
  timeout  = true
}

scenario "cache" {
  executor = "constant-vus"
  vus      = 1
  duration = "1s"

  request "get" {
    key = "a"
  }
}
