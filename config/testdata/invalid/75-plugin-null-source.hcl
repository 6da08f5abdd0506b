# A source that evaluates to null is a mistake: leaving the attribute out
# is how a plugin is searched for.
variable "kv_binary" {
  default = null
}

plugin "kv" {
  source = var.kv_binary
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
    key = "a"
  }
}
