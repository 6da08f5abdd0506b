# hload user journeys: every virtual user logs in once, keeps the bearer token
# the shop gave it, browses, and orders a product it saw in a list, against
# hload's embedded demo shop (demo_url() starts it on a free loopback port).
#
#   go run ./cmd/hload apply examples/journey.hcl
#
# - setup runs once per VU, before its first iteration: POST /api/login hands
#   out a token, captured as vu.vars.token for every later request.
# - The mix weighs a bare request (a flow of one step) and two flows: "browse"
#   lists products and opens one it was shown; "order" lists, opens one and
#   orders it. Each list shows a few products at random, so the id has to be
#   captured from the list: the demo refuses (404, 422) any id never listed
#   to the token, and any order whose token is missing or is another user's.
# - The demo leaves the "items" field out of one list in every 20 on purpose. The
#   capture json("items.0.id") then finds nothing, the request fails with the
#   error kind "capture", and its flow stops there: about 5 % of browse and
#   order flows fail, which the flow_failures threshold allows.
# - flow_duration of "order" runs from the list's send to the end of the
#   order, the think time between its steps included.
#
# The demo's own counts are at GET <demo>/api/journey/stats: orders with a
# wrong or missing token, orders for ids never listed to the token, and
# requests sent after a failed capture are all 0 when the run is right.

target "shop" {
  protocol = "http"
  base_url = demo_url()
  headers  = { Accept = "application/json" }
  timeout  = "5s"
}

scenario "shop" {
  executor = "ramping-vus"
  # VUs come and go: a VU that returns after the lull keeps its token and
  # does not log in again, so the shop sees one login per VU, 20 in all.
  stages = [
    { duration = "4s", target = 20 }, # ramp up
    { duration = "4s", target = 20 }, # hold
    { duration = "4s", target = 5 },  # a lull
    { duration = "4s", target = 20 }, # back up
    { duration = "4s", target = 0 },  # ramp down
  ]
  think_time = uniform("50ms", "150ms") # between iterations

  setup {
    request "login" {
      method = "POST"
      path   = "/api/login"
      json   = { user = "vu-${vu.id}" }
      check {
        status = 200
      }
      capture {
        token = json("token")
      }
    }
  }

  request "home" {
    weight = 60
    path   = "/"
    check {
      status = 200
    }
  }

  flow "browse" {
    weight     = 30
    think_time = uniform("20ms", "80ms") # between steps

    request "browse_list" {
      path    = "/api/products"
      headers = { Authorization = "Bearer ${vu.vars.token}" }
      check {
        status = 200
      }
      capture {
        product = json("items.0.id")
      }
    }

    request "browse_detail" {
      path    = "/api/products/${vu.vars.product}"
      headers = { Authorization = "Bearer ${vu.vars.token}" }
      check {
        status = 200
      }
    }
  }

  flow "order" {
    weight     = 10
    think_time = "50ms"

    request "order_list" {
      path    = "/api/products"
      headers = { Authorization = "Bearer ${vu.vars.token}" }
      check {
        status = 200
      }
      capture {
        product = json("items.0.id")
      }
    }

    request "order_detail" {
      path    = "/api/products/${vu.vars.product}"
      headers = { Authorization = "Bearer ${vu.vars.token}" }
      check {
        status = 200
      }
    }

    request "order_buy" {
      method = "POST"
      path   = "/api/orders"
      headers = {
        Authorization = "Bearer ${vu.vars.token}"
        X-User        = "vu-${vu.id}"
      }
      json = { product_id = vu.vars.product }
      check {
        status = 201
      }
    }
  }
}

threshold {
  metric    = "latency"
  condition = "p95 < 500ms"
}

threshold {
  metric    = "flow_duration"
  flow      = "order"
  condition = "p95 < 2s"
}

# About 5 % of the lists leave their items out on purpose (see above).
threshold {
  metric    = "flow_failures"
  condition = "rate < 10%"
}
