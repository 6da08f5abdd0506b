# The 60/5/20/10/5 mix of the shop example.
variable "base_url" {
  default = "http://127.0.0.1:8080"
}

variable "vus" {
  type    = number
  default = 20
}

locals {
  headers = { Accept = "application/json", "X-Run" = local.run }
  run     = "shop-${var.vus}"
}

target "shop" {
  protocol = "http"
  base_url = var.base_url
  headers  = local.headers
  timeout  = "10s"
}

scenario "browse" {
  executor   = "ramping-vus"
  start_vus  = 1
  stages     = [{ duration = "1m", target = var.vus }, { duration = "3m", target = var.vus }, { duration = 30, target = 0 }]
  think_time = uniform("0.5s", "1.5s")

  request "main" {
    weight = 60
    path   = "/"
  }
  request "search" {
    weight = 5
    path   = "/search"
    query  = { q = random_choice(["shoes", "hats", "socks"]) }
  }
  request "detail" {
    weight = 20
    path   = "/posts/${random_int(1, 170000)}"
    check {
      status = [200]
    }
  }
  request "profile" {
    weight  = 10
    path    = "/users/${vu.id}"
    headers = { "X-Iteration" = tostring(vu.iteration) }
  }
  request "login" {
    weight = 5
    method = "POST"
    path   = "/login"
    json   = { email = "user${vu.id}@example.com", password = "secret" }
    check {
      status        = [200, 201]
      body_contains = "token"
    }
  }
}

threshold {
  metric    = "latency"
  request   = "detail"
  condition = "p95 < 200ms"
}

threshold {
  metric    = "errors"
  scenario  = "browse"
  condition = "rate < 1%"
  abort     = true
}

sink "csv" {
  path = "results.csv"
}
