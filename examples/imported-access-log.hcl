# Imported by `hload import access-log` from access.log (combined format): 561 requests logged
# from 2026-12-07T00:19:09Z to 2026-12-07T00:19:32Z (24s).
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

scenario "logged" {
  # The log's requests per second, 2s at a time: each stage ramps
  # to the rate its window of the log had.
  executor   = "ramping-arrival-rate"
  start_rate = 11
  stages = [
    { duration = "2s", target = 11 },   # 22 requests from 00:19:09
    { duration = "2s", target = 23.5 }, # 47 requests from 00:19:11
    { duration = "2s", target = 27.5 }, # 55 requests from 00:19:13
    { duration = "2s", target = 29 },   # 58 requests from 00:19:15
    { duration = "2s", target = 29 },   # 58 requests from 00:19:17
    { duration = "2s", target = 27 },   # 54 requests from 00:19:19
    { duration = "2s", target = 27.5 }, # 55 requests from 00:19:21
    { duration = "2s", target = 30.5 }, # 61 requests from 00:19:23
    { duration = "2s", target = 25 },   # 50 requests from 00:19:25
    { duration = "2s", target = 26 },   # 52 requests from 00:19:27
    { duration = "2s", target = 18.5 }, # 37 requests from 00:19:29
    { duration = "2s", target = 6 },    # 12 requests from 00:19:31
  ]

  # GET /: 337 requests, 60.1 % of the log.
  request "root" {
    weight = 337
    method = "GET"
    path   = "/"
    check {
      # The statuses the log had: 200 x337.
      status = [200]
    }
  }

  # GET /products?page: 112 requests, 20.0 % of the log.
  request "products" {
    weight = 112
    method = "GET"
    path   = "/products"
    query = {
      page = "${random_int(1, 50)}" # page: 46 distinct values from 1 to 50; any in that range.
    }
    check {
      # The statuses the log had: 200 x112.
      status = [200]
    }
  }

  # GET /products/{id}: 56 requests, 10.0 % of the log.
  request "products_id" {
    weight = 56
    method = "GET"
    # {id}: 52 distinct values from 17 to 1941; any in that range.
    path = "/products/${random_int(17, 1941)}"
    check {
      # The statuses the log had: 200 x56.
      status = [200]
    }
  }

  # POST /login: 28 requests, 5.0 % of the log.
  request "post_login" {
    weight = 28
    method = "POST"
    path   = "/login"
    # A log holds no request bodies: add the one the server expects
    # (json = {...}, form or body), or its check fails.
    check {
      # The statuses the log had: 200 x28.
      status = [200]
    }
  }

  # POST /orders: 28 requests, 5.0 % of the log.
  request "post_orders" {
    weight = 28
    method = "POST"
    path   = "/orders"
    # A log holds no request bodies: add the one the server expects
    # (json = {...}, form or body), or its check fails.
    check {
      # The statuses the log had: 201 x28.
      status = [201]
    }
  }
}
