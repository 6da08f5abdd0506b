# A user journey: log in once per VU, then browse or order with the token
# and a product id seen in the list.
target "shop" {
  base_url = "http://127.0.0.1:8080"
}

scenario "shop" {
  executor   = "constant-vus"
  vus        = 10
  duration   = "30s"
  think_time = "100ms"

  setup {
    think_time = "0s"
    request "login" {
      method = "POST"
      path   = "/api/login"
      json   = { user = "vu-${vu.id}" }
      capture {
        token   = json("token")
        session = cookie("session")
      }
    }
  }

  request "home" {
    weight = 60
    path   = "/"
  }

  flow "order" {
    weight     = 10
    think_time = uniform("50ms", "150ms")
    request "list" {
      path    = "/api/products"
      headers = { Authorization = "Bearer ${vu.vars.token}" }
      capture {
        product  = json("items.0.id")
        location = header("Location")
        code     = status()
        first    = regex("id=(\\d+)")
      }
    }
    request "buy" {
      method     = "POST"
      path       = "/api/orders"
      headers    = { Authorization = "Bearer ${vu.vars.token}" }
      json       = { product_id = vu.vars.product }
      on_failure = "continue"
      check {
        status = 201
      }
    }
  }

  flow "browse" {
    request "detail" {
      path       = "/api/products/1"
      headers    = { Authorization = "Bearer ${vu.vars.token}" }
      on_failure = "stop"
    }
  }
}

threshold {
  metric    = "flow_duration"
  flow      = "order"
  condition = "p95 < 2s"
}

threshold {
  metric    = "flow_failures"
  condition = "rate < 10%"
}
