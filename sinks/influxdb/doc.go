// Package influxdb is the InfluxDB sink: each interval's figures go to
// InfluxDB through the v2 write API, for watching a run live in Grafana
// (examples/grafana). It works with InfluxDB 2.x, and with 1.8 and later,
// whose v2 write API takes bucket "database" or "database/retention-policy",
// ignores org, and takes token "user:password", or none with auth off.
//
//	sink "influxdb" {
//	  url           = "http://127.0.0.1:8086"
//	  token         = env("INFLUX_TOKEN")
//	  org           = "hload"            # ignored by 1.8
//	  bucket        = "hload"            # 1.8: "database" or "database/rp"
//	  tags          = { env = "staging" } # static tags on every point
//	  instance      = "gen-1"            # default: the hostname
//	  raw           = false              # true: one point per request too
//	  required      = true               # false: InfluxDB is optional; its failures are warnings
//	  buffer        = 100000             # points held while InfluxDB is slow or down
//	  batch_size    = 5000               # points per HTTP write
//	  flush_timeout = "30s"              # how long the end of the run waits for InfluxDB ("3s" when optional)
//	}
//
// # Never slowing the load, never losing an accepted point
//
// Write and WriteRaw only encode points and append them to a bounded
// in-memory queue; one goroutine writes batches with the client's blocking
// write API. When a write fails for a network error, a timeout, 408, 429
// or 5xx, the batch is retried with exponential backoff (250 ms doubling
// to 2 s, or the server's Retry-After) while the queue keeps accepting
// points up to "buffer". A point that would exceed the bound is dropped:
// counted, and warned about at the first drop and at the end. Other 4xx
// answers (bad data, no such bucket, no permission) are counted as
// rejected, not retried. Close waits up to flush_timeout for the queue
// to drain, saying each second how many points wait, then prints
//
//	influxdb: 1234 points written, 56 retried, 0 dropped (at most 80 of 100000 buffered)
//
// adding ", N rejected by InfluxDB" or ", N unsent" when not zero, in which
// case Close returns an error; with required = false, or when Abandon (the
// user's Ctrl-C) ended the wait, they are a warning instead (Warnings),
// and the run's verdict does not change. Each point is counted once: retried counts
// the written points that had been in a failed write before. A batch being
// retried takes in the points that arrived meanwhile (up to batch_size),
// so after an outage most of the backlog counts as retried.
//
// Start pings InfluxDB and writes the run's first point, within 5 s. A
// failure is an error naming the URL and bucket, so the run does not
// start; with required = false it is a warning instead, and the sink
// buffers and retries as in an outage. With required = false the end of
// the run waits for InfluxDB at most DefaultOptionalFlushTimeout (3 s)
// unless flush_timeout says otherwise: an optional sink never holds the
// end of a run up for long, nor fails it.
//
// # Points
//
// Every point has the tags run_id, test (the test file's name without
// extension), instance (the "instance" attribute or the hostname),
// segment (under --segment), and the static "tags". Per-(scenario,
// request) points add the tags scenario and request; per-(scenario, flow)
// points add the tags scenario and flow, where a scenario's setup is the
// flow "setup". Timestamps are the end of the interval, in nanoseconds.
//
//	hload_requests  per interval, per (scenario, request):
//	                count, errors, checks_passed, checks_failed, bytes_sent,
//	                bytes_received, active_vus (of the scenario) (integers);
//	                error_rate, rps, latency_min_ms, latency_mean_ms,
//	                latency_stdev_ms, latency_p50_ms, latency_p90_ms,
//	                latency_p95_ms, latency_p99_ms, latency_p999_ms,
//	                latency_max_ms (floats; latencies only when count > 0)
//	hload_status    per interval, per (scenario, request, status_class):
//	                count; status_class is 1xx..5xx, "none" (no status: a
//	                connection error) or "other" (a non-HTTP code)
//	hload_errors    per interval, per (scenario, request, kind): count;
//	                kind is timeout, connection_refused, ...
//	hload_metrics   per interval, per (scenario, request, metric), when the
//	                snapshot carries the protocol metrics (sse_delivery_latency,
//	                amqp_confirmed, ...): count, latency_*_ms as above
//	hload_scenarios per interval, per scenario: active_vus, dropped_iterations
//	hload_gauges    per interval when a protocol reports levels: one integer
//	                field per gauge, such as sse_open_streams
//	hload_flows     per interval, per (scenario, flow), when the test has
//	                flows or a setup: count (flows that ended), completed,
//	                failed (integers); failure_rate (failed / count), rate
//	                (flows ended per second), duration_min_ms,
//	                duration_mean_ms, duration_stdev_ms, duration_p50_ms,
//	                duration_p90_ms, duration_p95_ms, duration_p99_ms,
//	                duration_p999_ms, duration_max_ms
//	                (floats; flow_duration of the completed flows, only when
//	                completed > 0)
//	hload_flow_failures per interval, per (scenario, flow, kind): count of
//	                the flows failed by a step of that error kind (capture,
//	                http_5xx, interrupted, ...)
//	hload_totals    at the end, per (scenario, request): the summary's
//	                figures, fields as in hload_requests
//	hload_metric_totals at the end, per (scenario, request, metric): the
//	                summary's protocol metrics, fields as in hload_metrics
//	hload_flow_totals at the end, per (scenario, flow): the summary's flow
//	                figures, fields as in hload_flows
//	hload_runs      at the start (fields version, files) and at the end
//	                (passed, interrupted, duration_s)
//	hload_raw       with raw = true, per call, tags as hload_requests plus
//	                status_class: latency_ms (float), status, bytes_sent,
//	                bytes_received, vu, iteration (integers), error (string,
//	                when the call failed). Two calls of the same request
//	                ending in the same nanosecond would share a point.
package influxdb
