target "app" {
  base_url = "http://127.0.0.1:8080"
}

scenario "notify" {
  executor = "constant-vus"
  vus      = 5
  duration = "1m"

  request "send" {
    method   = "POST"
    path     = "/api/notification/send"
    let      = { uid = random_int(1, 5) }
    json     = { userId = let.user_id }
  }
}
