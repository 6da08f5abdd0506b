# Request/reply over RabbitMQ: the "caller" scenario sends rpc requests,
# each with reply_to (RabbitMQ's direct reply-to) and a correlation id, and
# times the round trip up to the reply. The "service" scenario stands in for
# the service under test: a consume with reply answers every request. Point
# routing_key at your own service's queue and drop the "service" scenario to
# load-test that service instead.
#
#   eval "$(scripts/rabbitmq.sh start)"
#   go run ./cmd/hload apply --var amqp_url=$HLOAD_RABBITMQ_URL examples/amqp-rpc.hcl
#   scripts/rabbitmq.sh stop

variable "amqp_url" {
  default = "amqp://guest:guest@127.0.0.1:5672/"
}

target "broker" {
  protocol = "amqp"
  url      = var.amqp_url
  queues   = [{ name = "hload-rpc-echo" }]
}

scenario "service" {
  executor = "constant-vus"
  vus      = 2
  duration = "25s"

  request "answer" {
    kind     = "consume"
    queue    = "hload-rpc-echo"
    prefetch = 50
    reply    = jsonencode({ status = "ok" })
    duration = "5s"
  }
}

scenario "caller" {
  executor = "ramping-vus"
  stages = [
    { duration = "5s", target = 20 },
    { duration = "15s", target = 20 },
  ]

  request "lookup" {
    kind        = "rpc"
    routing_key = "hload-rpc-echo"
    json        = { show_id = random_int(1, 5000) }
    timeout     = "2s" # no reply by then is a timeout error
  }
}

threshold {
  request   = "lookup"
  metric    = "latency"
  condition = "p95 < 50ms"
}
