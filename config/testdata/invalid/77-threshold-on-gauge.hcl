# echo_open_connections is a gauge of the echo protocol: a level per
# interval, which no threshold can judge.
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
  metric    = "echo_open_connections"
  condition = "max < 10"
}
