# A test through the lines example plugin, against Redis: Redis's inline
# commands are one line each way, so the lines protocol can speak them
# (GET is left out because its reply takes two lines). Any server that
# answers one line per line works. From the repository's root:
#
#   go build -o plugins/hload-plugin-lines ./examples/plugins/lines
#   redis-server --port 6379 --save '' &
#   go run ./cmd/hload apply examples/plugins/lines/example.hcl

variable "address" {
  default = "127.0.0.1:6379"
}

variable "duration" {
  default = "30s"
}

plugin "lines" {
  # Relative to this file. Pin the binary with its sum, as sha256sum prints
  # it, to refuse any other binary at that path:
  # sha256 = "..."
  source = "../../../plugins/hload-plugin-lines"
}

target "redis" {
  protocol = "lines"
  address  = var.address
  timeout  = "2s"
}

scenario "cache" {
  executor = "constant-vus"
  vus      = 10
  duration = var.duration

  # Counters take most of the traffic, as page-view counters would.
  request "incr" {
    weight = 70
    line   = "INCR hits:${random_int(1, 1000)}"
  }

  # A reply other than expect gets status 500, so the check counts it.
  request "set" {
    weight = 25
    line   = "SET session:${vu.id} ${uuid()}"
    expect = "+OK"
    check {
      status = [200]
    }
  }

  request "ping" {
    weight = 5
    line   = "PING"
    expect = "+PONG"
    check {
      status = [200]
    }
  }
}

threshold {
  metric    = "latency"
  condition = "p99 < 20ms"
}

sink "csv" {
  path = "lines-results.csv"
}
