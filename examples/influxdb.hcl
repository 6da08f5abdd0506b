# Watch a run live in Grafana: the demo shop under a steady load, with every
# interval's figures sent to InfluxDB. Start InfluxDB and Grafana as
# examples/grafana/README.md says, then:
#
#   export INFLUX_TOKEN=...
#   go run ./cmd/hload apply examples/influxdb.hcl --var influx_url=http://127.0.0.1:8086
#
# With the InfluxDB 1.8 that scripts/influxd.sh starts:
#
#   eval "$(scripts/influxd.sh start)"
#   go run ./cmd/hload apply examples/influxdb.hcl --var influx_url=$HLOAD_INFLUX_URL

variable "influx_url" {
  default = "http://127.0.0.1:8086"
}
variable "influx_bucket" {
  default = "hload" # 1.8: "database" or "database/retention-policy"
}

target "shop" {
  base_url = demo_url()
}

scenario "browse" {
  executor   = "ramping-vus"
  stages     = [{ duration = "20s", target = 20 }, { duration = "40s", target = 20 }]
  think_time = uniform("0.5s", "1.5s")

  request "home" {
    weight = 6
    path   = "/"
  }
  request "products" {
    weight = 3
    path   = "/products"
    query  = { page = "${random_int(1, 50)}" }
  }
  request "missing" {
    weight = 1
    path   = "/no-such-page"
  }
}

sink "influxdb" {
  url      = var.influx_url
  token    = env("INFLUX_TOKEN")  # empty when InfluxDB 1.8 runs without auth
  org      = "hload"              # InfluxDB 1.8 ignores it
  bucket   = var.influx_bucket
  tags     = { env = "laptop" }
  required = true                # false: run on, with a warning, when InfluxDB is down at the start
}

sink "csv" { path = "influxdb-example.csv" }
