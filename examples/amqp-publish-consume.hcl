# Application logs routed through RabbitMQ: one scenario
# publishes JSON log lines to a topic exchange at a steady rate, persistent
# and with publisher confirms; another consumes them from a durable queue.
# The summary shows the publish latency up to the broker's confirm, the
# consume rate, and the end-to-end latency of each message (amqp_consumed).
#
#   eval "$(scripts/rabbitmq.sh start)"   # or any broker you may load
#   go run ./cmd/hload apply --var amqp_url=$HLOAD_RABBITMQ_URL examples/amqp-publish-consume.hcl
#   scripts/rabbitmq.sh stop

variable "amqp_url" {
  default = "amqp://guest:guest@127.0.0.1:5672/"
}

variable "rate" {
  default = 500
}

target "broker" {
  protocol = "amqp"
  url      = var.amqp_url
  channels = 64 # publishes in flight with confirms, one per channel

  # Declared once before the run, and again after a reconnect.
  exchanges = [{ name = "hload-logs", type = "topic", durable = true }]
  queues    = [{ name = "hload-app-logs", durable = true }]
  bindings  = [{ exchange = "hload-logs", queue = "hload-app-logs", routing_key = "log.#" }]
}

scenario "app" {
  executor = "constant-arrival-rate"
  rate     = var.rate
  duration = "30s"
  max_vus  = 200

  request "log" {
    kind        = "publish"
    exchange    = "hload-logs"
    routing_key = "log.${random_choice(["info", "info", "info", "warn", "error"])}"
    json = {
      request_id = uuid()
      vu         = vu.id
      message    = "GET /shows/${random_int(1, 5000)} 200"
    }
    persistent = true
    confirm    = true # the latency runs to the broker's ack
    mandatory  = true # an unroutable message is an error (returned), not silence
  }
}

scenario "log-shipper" {
  executor = "constant-vus"
  vus      = 2
  duration = "35s"

  request "ship" {
    kind     = "consume"
    queue    = "hload-app-logs"
    prefetch = 200
    duration = "5s" # each call holds a consumer for 5 s, then the VU starts another
  }
}

threshold {
  request   = "log"
  metric    = "errors"
  condition = "rate < 1%"
}

threshold {
  metric    = "amqp_consumed" # end-to-end: publish to consume
  condition = "p99 < 500ms"
}
