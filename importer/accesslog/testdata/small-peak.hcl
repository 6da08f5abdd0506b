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

scenario "logged" {
  # The log's busiest minute (all 4s of it), from 2026-12-07T00:12:26Z:
  # 2 requests/s, times 2 (--scale), held for the log's length (--peak).
  executor = "constant-arrival-rate"
  rate     = 4
  duration = "4s"

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
    # {id}: 2 distinct values from 5 to 1999; any in that range.
    path = "/products/${random_int(5, 1999)}"
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
      page = "${random_int(3, 7)}" # page: 2 distinct values from 3 to 7; any in that range.
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
    # {uuid}: one value seen; that one.
    path = "/orders/${"0b6f2c1e-8a55-4d5e-9d5b-6a4f0c1e2d3f"}"
    check {
      # The statuses the log had: 404 x1.
      status = [404]
    }
  }
}
