# Field report 3 in hload: an SSE notification service under load. k6 could
# only time the POST that sends a notification; here subscribers hold SSE
# streams for users 1..5 at the same time, and hload reports whether each
# notification reached them (sse_events_missed) and how late
# (sse_delivery_latency). The stages are the report's, scaled down for a
# laptop: 20, 50 then 100 users instead of 100, 500 and 1,000.
#
# demo_url() starts hload's embedded demo, whose notification service
# delivers through a worker pool (the "after"). For the "before", where the
# POST delivers to every subscriber itself:
#
#   go run ./cmd/hload apply examples/sse-notifications.hcl --var delivery=sequential
#   go run ./cmd/hload apply examples/sse-notifications.hcl --var delivery=pool
#
# Delivery latency compares the send time the sender writes into each
# payload (unix_micros()) with the time the subscriber reads the event, so
# sender and subscribers must share one host clock. They do here: one hload
# run does both.

variable "delivery" {
  default = "pool" # pool | sequential
}

data "csv" "users" {
  path = "data/notification-users.csv" # user 1 to 5
  mode = "sequential"
}

target "api" {
  protocol = "http"
  base_url = demo_url()
  headers  = { Accept = "application/json" }
  timeout  = "30s"
}

target "notifications" {
  protocol = "sse"
  base_url = demo_url()
}

# Sets the demo's delivery mode once, as the run starts.
scenario "setup" {
  executor   = "iterations"
  vus        = 1
  iterations = 1
  target     = "api"

  request "delivery_mode" {
    method = "PUT"
    path   = "/api/notification/delivery"
    body   = var.delivery
    check {
      status = [204]
    }
  }
}

# Two subscribers per user, for the whole run.
scenario "subscribers" {
  executor = "constant-vus"
  vus      = 10
  duration = "95s"
  target   = "notifications"

  request "subscribe" {
    path          = "/api/notification/subscribe/${data.users.user}"
    reconnect     = true
    idle_timeout  = "30s"
    delivery_key  = data.users.user
    id_field      = "id"
    sent_at_field = "sentAt"
    sent_at_unit  = "us"
    miss_grace    = "2s"
  }
}

scenario "senders" {
  executor = "ramping-vus"
  stages = [
    { duration = "10s", target = 20 },  # report: to 100 users in 1 m
    { duration = "20s", target = 20 },  #         hold 3 m
    { duration = "10s", target = 50 },  #         to 500 in 1 m
    { duration = "20s", target = 50 },  #         hold 3 m
    { duration = "10s", target = 100 }, #         to 1,000 in 1 m
    { duration = "20s", target = 100 }, #         hold 3 m
  ]
  think_time = "1s"
  target     = "api"

  request "send" {
    method = "POST"
    path   = "/api/notification/send"
    # One random user per call, shared by the payload and the delivery key.
    let = {
      user = random_int(1, 5)
      id   = "${vu.id}-${vu.iteration}"
    }
    json = {
      userId  = let.user
      message = random_string(24)
      id      = let.id
      sentAt  = unix_micros()
    }
    delivery = { key = let.user, id = let.id }
    check {
      status = [200, 500, 429] # the report's checks; 500 and 429 show in the summary's statuses
    }
  }
}

threshold {
  metric    = "latency"
  request   = "send"
  condition = "p95 < 500ms"
}

threshold {
  metric    = "sse_delivery_latency"
  condition = "p95 < 100ms"
}

threshold {
  metric    = "sse_events_missed"
  condition = "count == 0"
}
