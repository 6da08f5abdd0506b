# Watch a run live in Grafana: the demo shop under a steady load, with every
# interval's figures sent to InfluxDB. Start InfluxDB and Grafana as
# examples/grafana/README.md says, then:
#
#   export INFLUX_URL=http://127.0.0.1:8086 INFLUX_TOKEN=... INFLUX_BUCKET=hload
#   go run ./cmd/hload apply examples/influxdb.hcl
#
# With the InfluxDB 1.8 that scripts/influxd.sh starts:
#
#   eval "$(scripts/influxd.sh start)"
#   INFLUX_URL=$HLOAD_INFLUX_URL INFLUX_BUCKET=hload go run ./cmd/hload apply examples/influxdb.hcl

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
  url      = env("INFLUX_URL")
  token    = env("INFLUX_TOKEN")
  org      = "hload"             # InfluxDB 1.8 ignores it
  bucket   = env("INFLUX_BUCKET") # 1.8: "database" or "database/retention-policy"
  tags     = { env = "laptop" }
  required = true                # false: run on, with a warning, when InfluxDB is down at the start
}

sink "csv" { path = "influxdb-example.csv" }
