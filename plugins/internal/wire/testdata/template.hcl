# POSTs evaluated per call, for template_test.go. order has holes as
# whole attributes (path, headers, query) and inside its json, at two
# depths, of several types; whole's json is a hole as a whole (its
# arithmetic is evaluated through HCL), of an object type. No random
# functions, so that Eval and EvalHoles give the same values for the
# same iteration.
variable "base_url" {}

target "server" {
  protocol = "http"
  base_url = var.base_url
  headers  = { Accept = "application/json" }
}

scenario "s" {
  executor   = "iterations"
  vus        = 1
  iterations = 1

  request "order" {
    method  = "POST"
    path    = "/orders/${vu.id}-${vu.iteration}"
    query   = { page = "${vu.iteration}", sort = "price" }
    headers = { "X-Trace" = "t-${vu.iteration}", "X-Static" = "same" }
    json = {
      sku      = "A-100"
      price    = 19.99
      gift     = false
      quantity = vu.iteration
      tags     = ["red", "small"]
      note     = "ünïcode ${vu.id}"
      user = {
        id    = vu.id
        email = "user${vu.id}@example.com"
        seen  = [vu.iteration, "x"]
        none  = null
      }
    }
  }

  request "whole" {
    method = "POST"
    path   = "/whole"
    json = {
      quantity = vu.iteration + 1
      gift     = vu.iteration % 2 == 0
      tags     = ["a", vu.id]
    }
  }
}
