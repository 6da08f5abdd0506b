# The echo plugin's test that docs/plugins.md walks through: 4 VUs send
# their payload to the TCP echo server at var.address and check that it
# comes back. From the repository's root:
#
#   go build -o plugins/hload-plugin-echo ./examples/plugins/echo
#   socat TCP-LISTEN:7007,bind=127.0.0.1,reuseaddr,fork PIPE &
#   go run ./cmd/hload apply examples/plugins/echo/example.hcl

variable "address" {
  default = "127.0.0.1:7007"
}

variable "duration" {
  default = "5s"
}

plugin "echo" {}                # finds ./plugins/hload-plugin-echo

target "echo" {
  protocol = "echo"             # the plugin block's name
  address  = var.address
  timeout  = "1s"
}

scenario "ping" {
  executor = "constant-vus"
  vus      = 4
  duration = var.duration

  request "hello" {
    payload = "hello from VU ${vu.id}"
    check {
      body_contains = "hello"
    }
  }
}

threshold {
  metric    = "latency"
  condition = "p99 < 50ms"
}
