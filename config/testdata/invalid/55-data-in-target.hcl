data "csv" "users" {
  path = "users.csv"
}

target "shop" {
  base_url = "http://127.0.0.1:8080/${data.users.name}"
}

scenario "browse" {
  executor = "constant-vus"
  vus      = 10
  duration = "1m"

  request "home" {
    path = "/"
  }
}
