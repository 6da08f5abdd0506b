// Package benchreq holds the requests that hload's speed goals are
// measured on, as HCL request blocks, so that the bench harness and the Go
// benchmarks that stand for it (config's BenchmarkEval, protocols/http's
// BenchmarkRequests) measure the very same request: a ratio between two of
// them means nothing if one drifts.
package benchreq

// PostDynamic is the dynamic POST of docs/performance.md: a random path
// segment, a field of the CSV data source "users" (a column "email"),
// random_int and the VU's id and iteration in the JSON body. The constant
// POST it is compared with is the same request with these values fixed.
const PostDynamic = `  request "r" {
    method = "POST"
    path   = "/orders/${random_string(8)}"
    query  = { page = "1", sort = "price" }
    json = {
      sku       = "A-100"
      quantity  = random_int(1, 9)
      price     = 19.99
      gift      = false
      tags      = ["red", "small"]
      user      = data.users.email
      vu        = vu.id
      iteration = vu.iteration
    }
  }
`
