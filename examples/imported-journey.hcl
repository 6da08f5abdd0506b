# Imported by `hload import har` from journey.har, recorded by Chromium Chrome/156.0.8078.129 (WebInspector 537.36).
# 5 of its 6 requests, in the order they were recorded; the HAR entry of each is named above it.
# The login is the setup, which each virtual user runs once; the other requests are the flow.
# Values a response gave and a later request sent are captures (vu.vars.NAME); cookies are
# left to each virtual user's cookie jar, and the browser's own headers are left out.
#
#   hload apply FILE --var base_url=https://staging.example.com --var vus=10 --var duration=1m

variable "base_url" {
  description = "The origin recorded; --var base_url=URL sends the test elsewhere"
  default     = "http://127.0.0.1:8080"
}

variable "vus" {
  description = "Virtual users, each a user who walks the recording; the recording is one"
  default     = 1
}

variable "duration" {
  description = "How long the test runs; the recording took 2s"
  default     = "2s"
}

target "site" {
  protocol = "http"
  base_url = var.base_url
}

scenario "recorded" {
  executor = "constant-vus"
  vus      = var.vus
  duration = var.duration
  # After each walk through the flow, as long as the user paused between two of its requests.
  think_time = uniform("305ms", "509ms")

  # The login: once per virtual user, before its first walk through the flow.
  setup {
    # HAR entry 2, line 118: POST http://127.0.0.1:8080/api/login, 200 in 5ms, 287ms after the previous request
    request "login" {
      method  = "POST"
      path    = "/api/login"
      headers = { Accept = "application/json" }
      json    = { user = "alice" }
      check {
        status = 200
      }
      capture {
        token = json("token")
      }
    }
  }

  flow "journey" {
    # Between two requests: the pauses recorded, from the shortest to the longest.
    think_time = uniform("305ms", "509ms")
    # HAR entry 1, line 12: GET http://127.0.0.1:8080/, 200 in 36ms
    request "home" {
      path = "/"
      check {
        status = 200
      }
    }

    # HAR entry 4, line 346: GET http://127.0.0.1:8080/api/products, 200 in 15ms, 305ms after the previous request
    request "products" {
      path = "/api/products"
      headers = {
        Accept        = "application/json"
        Authorization = "Bearer ${vu.vars.token}"
      }
      check {
        status = 200
      }
      capture {
        product_id = json("items.1.id")
      }
    }

    # HAR entry 5, line 456: GET http://127.0.0.1:8080/api/products/{product_id}, 200 in 8ms, 419ms after the previous request
    request "product" {
      path = "/api/products/${vu.vars.product_id}"
      headers = {
        Accept        = "application/json"
        Authorization = "Bearer ${vu.vars.token}"
      }
      check {
        status = 200
      }
    }

    # HAR entry 6, line 538: POST http://127.0.0.1:8080/api/orders, 201 in 36ms, 509ms after the previous request
    request "post_orders" {
      method = "POST"
      path   = "/api/orders"
      headers = {
        Accept        = "application/json"
        Authorization = "Bearer ${vu.vars.token}"
        X-User        = "alice"
      }
      json = { product_id = vu.vars.product_id, quantity = 1 }
      check {
        status = 201
      }
    }
  }
}
