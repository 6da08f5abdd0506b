# A plugin checks its attributes at load through the same validator its
# Open uses: here it wants a duration, and 2 becomes the string "2".
plugin "kv" {
  source = "./bin/hload-plugin-kv"
}

target "store" {
  protocol = "kv"
  address  = "127.0.0.1:6379"
  timeout  = 2
}

scenario "cache" {
  executor = "constant-vus"
  vus      = 1
  duration = "1s"

  request "get" {
    key = "a"
  }
}
