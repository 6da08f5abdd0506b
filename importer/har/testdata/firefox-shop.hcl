# Imported by `hload import har` from firefox-shop.har, recorded by Firefox 140.0.
# 6 of its 8 requests, in the order they were recorded; the HAR entry of each is named above it.
# The login is the setup, which each virtual user runs once; the other requests are the flow.
# Values a response gave and a later request sent are captures (vu.vars.NAME); cookies are
# left to each virtual user's cookie jar, and the browser's own headers are left out.
#
#   hload apply FILE --var base_url=https://staging.example.com --var vus=10 --var duration=1m

variable "base_url" {
  description = "The origin recorded; --var base_url=URL sends the test elsewhere"
  default     = "https://shop.example.com"
}

variable "base_url_api" {
  description = "The origin recorded; --var base_url_api=URL sends the test elsewhere"
  default     = "https://api.example.com"
}

variable "vus" {
  description = "Virtual users, each a user who walks the recording; the recording is one"
  default     = 1
}

variable "duration" {
  description = "How long the test runs; the recording took 6s"
  default     = "6s"
}

variable "password" {
  description = "Typed into the recording (POST /login, form field password); pass it with --var password=... or HLOAD_VAR_password"
  sensitive   = true
}

variable "api_key" {
  description = "Typed into the recording (POST /v1/carts, query parameter api_key); pass it with --var api_key=... or HLOAD_VAR_api_key"
  sensitive   = true
}

variable "token" {
  description = "Typed into the recording (GET /v1/carts/9f8e7d6c5b4a, header authorization); pass it with --var token=... or HLOAD_VAR_token"
  sensitive   = true
}

target "site" {
  protocol = "http"
  base_url = var.base_url
  # Each redirect the browser followed is a request of its own below.
  follow_redirects = false
}

target "api" {
  protocol = "http"
  base_url = var.base_url_api
  headers  = { Accept = "application/json" }
}

scenario "recorded" {
  executor = "constant-vus"
  vus      = var.vus
  duration = var.duration
  target   = "site"
  # After each walk through the flow, as long as the user paused between two of its requests.
  think_time = uniform("10ms", "1.44s")

  # The login: once per virtual user, before its first walk through the flow.
  setup {
    # HAR entry 3, line 134: POST https://shop.example.com/login, 302 in 30ms, 1.96s after the previous request
    request "login" {
      method = "POST"
      path   = "/login"
      form   = { email = "ann@example.com", password = var.password }
      check {
        status = 302
      }
    }
  }

  flow "journey" {
    # Between two requests: the pauses recorded, from the shortest to the longest.
    think_time = uniform("10ms", "1.44s")
    # HAR entry 1, line 14: GET https://shop.example.com/, 200 in 40ms
    request "home" {
      path = "/"
      check {
        status = 200
      }
    }

    # HAR entry 4, line 226: GET https://shop.example.com/account, 200 in 25ms, 10ms after the previous request
    request "account" {
      path    = "/account"
      headers = { Accept = "application/json" }
      check {
        status = 200
      }
      capture {
        csrf    = json("csrf")
        user_id = json("user.id")
      }
    }

    # HAR entry 6, line 350: POST https://api.example.com/v1/carts, 201 in 50ms, 945ms after the previous request
    request "post_carts" {
      target  = "api"
      method  = "POST"
      path    = "/v1/carts?api_key=${var.api_key}"
      headers = { X-Csrf-Token = vu.vars.csrf }
      json = {
        user_id  = vu.vars.user_id
        sku      = "AB-1"
        quantity = 1
        note     = "gift $${wrap}"
      }
      check {
        status = 201
      }
      capture {
        cart_id = json("cart_id")
      }
    }

    # HAR entry 7, line 422: GET https://api.example.com/v1/carts/{cart_id}, 200 in 15ms, 1.44s after the previous request
    request "cart" {
      target  = "api"
      path    = "/v1/carts/${vu.vars.cart_id}?api_key=${var.api_key}"
      headers = { Authorization = "Bearer ${var.token}" }
      check {
        status = 200
      }
    }

    # HAR entry 8, line 486: GET https://shop.example.com/missing, 404 in 5ms, 485ms after the previous request
    request "missing" {
      path    = "/missing"
      headers = { Accept = "application/json" }
      # The recording got 404: a call that gets it again succeeds.
      expected_status = [404]
      check {
        status = 404
      }
    }
  }
}
