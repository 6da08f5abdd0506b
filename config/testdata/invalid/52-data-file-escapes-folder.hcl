target "shop" {
  base_url = "http://127.0.0.1:8080"
}

data "csv" "users" {
  path = "../valid/users.csv"
}

scenario "browse" {
  executor = "constant-vus"
  vus      = 10
  duration = "1m"

  request "login" {
    method = "POST"
    path   = "/login"
    json   = { email = data.users.email, password = "secret" }
  }
}
