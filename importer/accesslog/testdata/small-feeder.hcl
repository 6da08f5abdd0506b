# Imported by `hload import access-log` from small.log (combined format): 8 requests logged
# from 2026-12-07T00:12:26Z to 2026-12-07T00:12:29Z (4s).
# Each request below is a template of the log's requests: ids in paths and
# queries became random draws from the values seen. Its weight is its count in
# the log (docs/import.md). This is a test like any other: edit it.

variable "base_url" {
  description = "The site to load: a log names no origin, so set it with --var base_url=URL."
  default     = "http://127.0.0.1:8080"
}

target "site" {
  base_url = var.base_url
}

# The values GET /products/{id} had in the log, each combination once.
data "csv" "products_id" {
  path = "small-feeder-products_id.csv"
  mode = "random"
}

# The values GET /products?page had in the log, each combination once.
data "csv" "products" {
  path = "small-feeder-products.csv"
  mode = "random"
}

# The values GET /orders/{uuid} had in the log, each combination once.
data "csv" "orders_id" {
  path = "small-feeder-orders_id.csv"
  mode = "random"
}

scenario "logged" {
  # The log's requests per second, 1s at a time: each stage ramps
  # to the rate its window of the log had.
  executor   = "ramping-arrival-rate"
  start_rate = 2
  stages = [
    { duration = "1s", target = 2 }, # 2 requests from 00:12:26
    { duration = "1s", target = 2 }, # 2 requests from 00:12:27
    { duration = "1s", target = 2 }, # 2 requests from 00:12:28
    { duration = "1s", target = 2 }, # 2 requests from 00:12:29
  ]

  # GET /: 2 requests, 25.0 % of the log.
  request "root" {
    weight = 2
    method = "GET"
    path   = "/"
    check {
      # The statuses the log had: 200 x2.
      status = [200]
    }
  }

  # GET /products/{id}: 2 requests, 25.0 % of the log.
  request "products_id" {
    weight = 2
    method = "GET"
    # {id}: 2 distinct values seen, from the feeder.
    path = "/products/${data.products_id.products_id}"
    check {
      # The statuses the log had: 200 x2.
      status = [200]
    }
  }

  # GET /products?page: 2 requests, 25.0 % of the log.
  request "products" {
    weight = 2
    method = "GET"
    path   = "/products"
    query = {
      page = "${data.products.page}" # page: 2 distinct values seen, from the feeder.
    }
    check {
      # The statuses the log had: 200 x2.
      status = [200]
    }
  }

  # POST /login: 1 request, 12.5 % of the log.
  request "post_login" {
    weight = 1
    method = "POST"
    path   = "/login"
    # A log holds no request bodies: add the one the server expects
    # (json = {...}, form or body), or its check fails.
    check {
      # The statuses the log had: 200 x1.
      status = [200]
    }
  }

  # GET /orders/{uuid}: 1 request, 12.5 % of the log.
  request "orders_id" {
    weight = 1
    method = "GET"
    # {uuid}: 1 distinct values seen, from the feeder.
    path = "/orders/${data.orders_id.orders_id}"
    check {
      # The statuses the log had: 404 x1.
      status = [404]
    }
  }
}
