# ttfb is an http metric, and this test only uses the echo protocol.
target "echo" {
  protocol = "echo"
  address  = "127.0.0.1:7007"
}

scenario "ping" {
  executor = "constant-vus"
  vus      = 1
  duration = "1s"

  request "hello" {
    message = "hi"
  }
}

threshold {
  metric    = "ttfb"
  condition = "p95 < 200ms"
}
