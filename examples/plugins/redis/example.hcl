# The Redis example plugin against a redis-server on loopback: 4 VUs set a
# key of their own, read it back and count with INCR, in that order. From the repository's
# root:
#
#   go build -o plugins/hload-plugin-redis ./examples/plugins/redis
#   redis-server --bind 127.0.0.1 --port 6379 --save '' &
#   go run ./cmd/hload apply examples/plugins/redis/example.hcl

variable "address" {
  default = "127.0.0.1:6379"
}

variable "duration" {
  default = "5s"
}

plugin "redis" {}               # finds ./plugins/hload-plugin-redis

target "cache" {
  protocol = "redis"
  address  = var.address
  timeout  = 1                  # seconds, or "1s"
  pool     = 8
}

scenario "cache" {
  executor = "constant-vus"
  vus      = 4
  duration = var.duration

  flow "cycle" {                # the three requests in order, each iteration
    request "set" {
      command = "SET"
      key     = "hload:vu:${vu.id}"
      value   = "iteration ${vu.iteration}"
    }

    request "get" {
      command = "GET"
      key     = "hload:vu:${vu.id}"
      check {
        body_contains = "iteration"
      }
    }

    request "incr" {
      command = "INCR"
      key     = "hload:counter"
    }
  }
}

threshold {
  metric    = "errors"
  condition = "rate < 1%"
}
