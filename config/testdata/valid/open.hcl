# The open model: iterations start at a rate, whatever the latency.
target "shop" {
  base_url = "http://127.0.0.1:8080"
}

data "csv" "users" {
  path = "users.csv"
  mode = "unique"
}

data "csv" "products" {
  path      = "products.tsv"
  delimiter = "\t"
}

scenario "orders" {
  executor          = "constant-arrival-rate"
  rate              = 50
  time_unit         = "100ms"
  duration          = "2m"
  pre_allocated_vus = 20

  request "login" {
    method = "POST"
    path   = "/login"
    json   = { email = data.users.email, password = data.users.password }
  }
}

scenario "browse" {
  executor   = "ramping-arrival-rate"
  start_rate = 10
  stages = [
    { duration = "30s", target = 200 },
    { duration = "1m", target = 200 },
    { duration = "10s", target = 0.5 },
  ]

  request "product" {
    path  = "/products/${data.products.sku}"
    query = { name = data.products.name, user = data.users.name }
  }
  request "home" {
    path = "/"
  }
}
