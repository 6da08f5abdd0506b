variable "slo" {
  sensitive = true
  default   = "200ms"
}

target "shop" {
  base_url = "http://127.0.0.1:8080"
}

scenario "browse" {
  executor = "constant-vus"
  vus      = 1
  duration = "1m"

  request "home" {
    path = "/"
  }
}

threshold {
  metric    = "latency"
  condition = "p95 < ${var.slo}"
}
