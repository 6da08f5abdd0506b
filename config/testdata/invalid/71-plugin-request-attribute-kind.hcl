# A plugin's request attributes go through its validator at load too.
plugin "kv" {
  source = "./bin/hload-plugin-kv"
}

target "store" {
  protocol = "kv"
  address  = "127.0.0.1:6379"
}

scenario "cache" {
  executor = "constant-vus"
  vus      = 1
  duration = "1s"

  request "get" {
    key     = "a"
    timeout = false
  }
}
