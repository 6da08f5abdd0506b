# hload quickstart: the shop mix that nGrinder users load-test (main page 60 %,
# login 5 %, product list 20 %, product detail 10 %, order 5 %), with a stage
# ramp, against hload's embedded demo shop. demo_url() starts the demo on a free
# loopback port, so nothing else has to run.
#
#   go run ./cmd/hload apply examples/quickstart.hcl

variable "peak_vus" {
  default = 20
}

target "shop" {
  protocol = "http"
  base_url = demo_url()
  headers  = { Accept = "application/json" }
  timeout  = "5s"
}

scenario "shop" {
  executor = "ramping-vus"
  stages = [
    { duration = "5s", target = var.peak_vus },  # ramp up
    { duration = "15s", target = var.peak_vus }, # hold
    { duration = "5s", target = 0 },             # ramp down
  ]
  think_time = uniform("50ms", "150ms")

  request "main" {
    weight = 60
    path   = "/"
    check {
      status = [200]
    }
  }

  request "login" {
    weight = 5
    method = "POST"
    path   = "/login"
    json = {
      email    = "user${random_int(1, 1000)}@example.com"
      password = "secret"
    }
    check {
      status = [200]
    }
  }

  request "list" {
    weight = 20
    path   = "/products"
    query  = { page = "${random_int(1, 50)}" }
    check {
      status = [200]
    }
  }

  request "detail" {
    weight = 10
    path   = "/products/${random_int(1, 2000)}"
    check {
      status = [200]
    }
  }

  request "order" {
    weight = 5
    method = "POST"
    path   = "/orders"
    json   = { product_id = random_int(1, 2000), quantity = random_int(1, 3) }
    check {
      status = [201]
    }
  }
}

threshold {
  metric    = "latency"
  condition = "p95 < 500ms"
}

threshold {
  metric    = "errors"
  condition = "rate < 1%"
}

threshold {
  metric    = "checks"
  condition = "rate > 99%"
}

sink "csv" {
  path = "quickstart-results.csv"
}
