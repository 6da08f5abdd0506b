package influxdb_test

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2/hcldec"
	influxdb2 "github.com/influxdata/influxdb-client-go/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/hload/hload/config"
	"github.com/hload/hload/core"
	"github.com/hload/hload/internal/servicetest"
	"github.com/hload/hload/metrics"
	"github.com/hload/hload/protocols"
	hloadhttp "github.com/hload/hload/protocols/http"
	csvsink "github.com/hload/hload/sinks/csv"
	"github.com/hload/hload/sinks/influxdb"
)

// influx is the real InfluxDB that scripts/influxd.sh started.
type influx struct {
	url, bucket, org, token string
	ctl                     string // scripts/influxd.sh, for the outage test
}

// realInflux reads the service script's exports, and checks that the
// server answers /ping. A server that is named but does not answer is a
// failure, required or not: whoever set the variable meant the test to run
// against it.
func realInflux(t *testing.T) influx {
	t.Helper()
	in := influx{
		url:    servicetest.InfluxDB.Env(t, "HLOAD_INFLUX_URL"),
		bucket: os.Getenv("HLOAD_INFLUX_BUCKET"),
		org:    os.Getenv("HLOAD_INFLUX_ORG"),
		token:  os.Getenv("HLOAD_INFLUX_TOKEN"),
		ctl:    os.Getenv("HLOAD_INFLUXD_CTL"),
	}
	if in.bucket == "" {
		in.bucket = "hload"
	}
	client := &http.Client{Timeout: 5 * time.Second}
	resp, err := client.Get(strings.TrimSuffix(in.url, "/") + "/ping")
	if err != nil {
		t.Fatalf("HLOAD_INFLUX_URL=%s: InfluxDB does not answer: %v", in.url, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("HLOAD_INFLUX_URL=%s: GET /ping = %s, want 204 from InfluxDB", in.url, resp.Status)
	}
	return in
}

// streamProtocol stands in for the SSE and AMQP protocols: each call emits
// a request sample and their metrics, and the client holds an
// sse_open_streams gauge, so the dashboard's SSE and AMQP panels have
// something to show.
type streamProtocol struct{}

func (streamProtocol) Describe() protocols.Info {
	return protocols.Info{Name: "fakestream", TargetSpec: hcldec.ObjectSpec{}, RequestSpec: hcldec.ObjectSpec{}}
}

func (streamProtocol) Open(context.Context, cty.Value) (protocols.Client, error) {
	return &streamClient{}, nil
}

type streamClient struct{ open atomic.Int64 }

func (c *streamClient) Do(ctx context.Context, call protocols.Call, emit func(protocols.Sample)) {
	c.open.Add(1)
	defer c.open.Add(-1)
	select {
	case <-ctx.Done():
	case <-time.After(20 * time.Millisecond):
	}
	now := time.Now()
	for _, m := range []string{"sse_events", "sse_delivery_latency", "amqp_confirmed", "amqp_consumed"} {
		emit(protocols.Sample{Metric: m, Time: now, Value: 3 * time.Millisecond})
	}
	emit(protocols.Sample{Metric: protocols.MetricRequest, Time: now, Value: 20 * time.Millisecond, Status: 200})
}

func (c *streamClient) Gauges(report func(string, int64)) { report("sse_open_streams", c.open.Load()) }
func (c *streamClient) Close() error                      { return nil }

// served is what the target answered, counted on its side: the flows'
// figures are checked against it.
type served struct {
	hits   atomic.Int64 // every request
	logins atomic.Int64 // /login
	flaky  atomic.Int64 // /flaky
	failed atomic.Int64 // /flaky answered 500: every third
}

// Load is the count of every request answered.
func (c *served) Load() int64 { return c.hits.Load() }

// target is a loopback HTTP server counting the requests it answers;
// /missing is a 404, and /flaky a 500 every third time.
func target(t *testing.T) (*httptest.Server, *served) {
	var c served
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.hits.Add(1)
		switch r.URL.Path {
		case "/missing":
			http.NotFound(w, r)
			return
		case "/login":
			c.logins.Add(1)
		case "/flaky":
			if c.flaky.Add(1)%3 == 0 {
				c.failed.Add(1)
				http.Error(w, "flaky", http.StatusInternalServerError)
				return
			}
		}
		io.WriteString(w, "hello")
	}))
	t.Cleanup(srv.Close)
	return srv, &c
}

// closedAddr is a loopback address nothing listens on.
func closedAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return "http://" + l.Addr().String()
}

// recorder notes whether any snapshot carried protocol metrics per
// interval, which the dashboard's hload_metrics panels need, and flows.
type recorder struct {
	mu             sync.Mutex
	snapshots      int
	intervalMetric bool
	flows          bool
}

func (r *recorder) Start(context.Context, metrics.RunInfo) error { return nil }
func (r *recorder) Close(metrics.Summary) error                  { return nil }
func (r *recorder) Write(s metrics.Snapshot) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.snapshots++
	for _, f := range s.Series {
		if len(f.Metrics) > 0 {
			r.intervalMetric = true
		}
	}
	if len(s.Flows) > 0 {
		r.flows = true
	}
	return nil
}

type run struct {
	sum   *metrics.Summary
	err   error
	log   string
	sink  *influxdb.Sink
	rec   *recorder
	csv   string
	took  time.Duration
	start time.Time
}

// apply loads src as `hload apply` would, with the http and fakestream
// protocols and the csv and influxdb sinks, and runs it. during, when set,
// runs beside the run.
func apply(t *testing.T, src string, during func()) run {
	t.Helper()
	reg := protocols.NewRegistry(hloadhttp.New(), streamProtocol{})
	dir := t.TempDir()
	test, diags := config.Parse(map[string][]byte{"test.hcl": []byte(src)}, dir, config.Options{
		Protocols: reg,
		Sinks:     map[string]hcldec.ObjectSpec{"influxdb": influxdb.Spec(), "csv": csvsink.Spec()},
	})
	if diags.HasErrors() {
		t.Fatalf("config: %s", diags.Error())
	}
	var log bytes.Buffer
	var logMu sync.Mutex
	logw := writerFunc(func(p []byte) (int, error) {
		logMu.Lock()
		defer logMu.Unlock()
		return log.Write(p)
	})
	r := run{rec: &recorder{}}
	sinks := []core.Sink{r.rec}
	for _, s := range test.Sinks {
		switch s.Type {
		case "influxdb":
			sk, err := influxdb.New(s.Config, influxdb.Options{Log: logw, TestName: t.Name()})
			if err != nil {
				t.Fatal(err)
			}
			r.sink = sk
			sinks = append(sinks, sk)
		case "csv":
			sk, err := csvsink.New(s.Config, dir)
			if err != nil {
				t.Fatal(err)
			}
			r.csv = sk.Path()
			sinks = append(sinks, sk)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	if during != nil {
		wg.Go(during)
	}
	r.start = time.Now()
	r.sum, r.err = core.Run(ctx, test, core.Options{Protocols: reg, Sinks: sinks})
	r.took = time.Since(r.start)
	wg.Wait()
	logMu.Lock()
	r.log = log.String()
	logMu.Unlock()
	t.Logf("sink log:\n%s", r.log)
	return r
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

func (in influx) block(extra string) string {
	return fmt.Sprintf(`
sink "influxdb" {
  url      = %q
  token    = %q
  org      = %q
  bucket   = %q
  instance = "itest"
  tags     = { suite = "sinks/influxdb" }
  %s
}
`, in.url, in.token, in.org, in.bucket, extra)
}

// query runs a Flux query and returns its rows as maps.
func (in influx) query(t *testing.T, flux string) []map[string]any {
	t.Helper()
	c := influxdb2.NewClient(in.url, in.token)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := c.QueryAPI(in.org).Query(ctx, flux)
	if err != nil {
		t.Fatalf("query failed: %v\n%s", err, flux)
	}
	defer res.Close()
	var rows []map[string]any
	for res.Next() {
		rows = append(rows, res.Record().Values())
	}
	if res.Err() != nil {
		t.Fatalf("query failed: %v\n%s", res.Err(), flux)
	}
	return rows
}

// intervalCounts returns, per "scenario/request", the hload_requests
// count of each interval the run wrote, by timestamp.
func (in influx) intervalCounts(t *testing.T, runID string, from, to time.Time) map[string]map[time.Time]int64 {
	rows := in.query(t, fmt.Sprintf(`from(bucket: %q)
  |> range(start: %s, stop: %s)
  |> filter(fn: (r) => r._measurement == "hload_requests" and r.run_id == %q and r._field == "count")`,
		in.bucket, from.Add(-time.Minute).UTC().Format(time.RFC3339), to.Add(time.Minute).UTC().Format(time.RFC3339), runID))
	out := map[string]map[time.Time]int64{}
	for _, r := range rows {
		key := fmt.Sprint(r["scenario"], "/", r["request"])
		if out[key] == nil {
			out[key] = map[time.Time]int64{}
		}
		out[key][r["_time"].(time.Time)] = r["_value"].(int64)
	}
	return out
}

const countsTest = `
target "web"  {
  protocol = "http"
  base_url = %q
}
target "down" {
  protocol = "http"
  base_url = %q
  timeout  = "1s"
}
target "streams" { protocol = "fakestream" }

scenario "shop" {
  executor   = "constant-vus"
  vus        = 4
  duration   = "10s"
  think_time = "5ms"
  setup {
    request "login" {
      target = "web"
      path   = "/login"
    }
  }
  flow "order" {
    weight = 2
    request "cart" {
      target = "web"
      path   = "/cart"
    }
    request "pay" {
      target = "web"
      path   = "/flaky"
    }
  }
  request "home" {
    target = "web"
    weight = 6
    path   = "/"
  }
  request "missing" {
    target = "web"
    weight = 2
    path   = "/missing"
  }
  request "refused" {
    target = "down"
    weight = 1
    path   = "/"
  }
}

scenario "subscribers" {
  executor = "constant-vus"
  vus      = 3
  duration = "10s"
  request "stream" { target = "streams" }
}
`

// TestRealInfluxCountsAndDashboard (must-show 1 and 2): after a 10 s run,
// the per-interval counts in InfluxDB add up exactly to the summary's
// count of each request and each flow, the flows' to the target's own
// counts too, and every query of the Grafana dashboard returns rows from
// that InfluxDB.
func TestRealInfluxCountsAndDashboard(t *testing.T) {
	in := realInflux(t)
	if testing.Short() {
		t.Skip("a 10 s run against InfluxDB; skipped under -short")
	}
	srv, hits := target(t)
	r := apply(t, fmt.Sprintf(countsTest, srv.URL, closedAddr(t))+in.block(""), nil)
	if r.err != nil {
		t.Fatalf("run: %v", r.err)
	}
	if c := r.sink.Counts(); c.Dropped != 0 || c.Unsent != 0 || c.Rejected != 0 {
		t.Fatalf("counts %+v: nothing may be lost", c)
	}

	got := in.intervalCounts(t, r.sum.RunID, r.start, time.Now())
	var total int64
	for sc, ss := range r.sum.Scenarios {
		for rq, f := range ss.Requests {
			key := sc + "/" + rq
			var sum int64
			for _, n := range got[key] {
				sum += n
			}
			t.Logf("%s: %d intervals in InfluxDB add up to %d; summary count %d", key, len(got[key]), sum, f.Count)
			if sum != f.Count || f.Count == 0 {
				t.Errorf("%s: InfluxDB's interval counts add up to %d, the summary says %d", key, sum, f.Count)
			}
			if len(got[key]) != r.rec.snapshots {
				t.Errorf("%s: %d intervals in InfluxDB, the run wrote %d snapshots", key, len(got[key]), r.rec.snapshots)
			}
			total += f.Count
		}
	}
	t.Logf("summary: %d calls in %s; the HTTP server answered %d", total, r.took.Round(time.Millisecond), hits.Load())
	checkFlows(t, in, r, hits, 4)
	if !strings.Contains(r.log, "points written") {
		t.Errorf("no end-of-run line in the sink's log")
	}

	// Must-show 2: every query of the dashboard, with Grafana's
	// variables set to this run and its time range.
	raw, err := os.ReadFile(filepath.Join("..", "..", "examples", "grafana", "dashboards", "hload.json"))
	if err != nil {
		t.Fatal(err)
	}
	queries := dashboardQueries(t, raw)
	if len(queries) < 10 {
		t.Fatalf("found only %d queries in the dashboard", len(queries))
	}
	vars := strings.NewReplacer(
		"${bucket}", in.bucket,
		"${run_id}", r.sum.RunID,
		"v.timeRangeStart", r.start.Add(-5*time.Second).UTC().Format(time.RFC3339),
		"v.timeRangeStop", time.Now().Add(5*time.Second).UTC().Format(time.RFC3339),
		"v.windowPeriod", "1s",
	)
	// The core's snapshots carry protocol metrics in the summary only
	// (metrics.SeriesFigures.Metrics is nil per interval), so the run
	// above writes no hload_metrics points. Those panels are checked
	// against snapshots that carry them, written straight to the sink.
	synthetic := ""
	if !r.rec.intervalMetric {
		synthetic = writeIntervalMetrics(t, in)
	}
	synVars := strings.NewReplacer(
		"${bucket}", in.bucket,
		"${run_id}", synthetic,
		"v.timeRangeStart", "2023-11-14T00:00:00Z",
		"v.timeRangeStop", "2023-11-16T00:00:00Z",
		"v.windowPeriod", "1s",
	)
	for _, q := range queries {
		flux := vars.Replace(q.flux)
		from := "this run"
		if synthetic != "" && strings.Contains(q.flux, `"hload_metrics"`) {
			flux, from = synVars.Replace(q.flux), "snapshots with per-interval protocol metrics"
		}
		rows := in.query(t, flux)
		if len(rows) == 0 {
			t.Errorf("dashboard %q returned no rows (%s):\n%s", q.title, from, flux)
			continue
		}
		t.Logf("dashboard %q: %d rows from %s", q.title, len(rows), from)
	}
}

// flowFigures sums the integer fields of measurement m (hload_flows,
// hload_flow_failures or hload_flow_totals) of a run, per "flow/field" (and
// "flow/kind/field" for hload_flow_failures), and counts its points per flow
// and field.
func (in influx) flowFigures(t *testing.T, m, runID string, from, to time.Time) (sums, points map[string]int64) {
	t.Helper()
	rows := in.query(t, fmt.Sprintf(`from(bucket: %q)
  |> range(start: %s, stop: %s)
  |> filter(fn: (r) => r._measurement == %q and r.run_id == %q)
  |> filter(fn: (r) => r._field == "count" or r._field == "completed" or r._field == "failed")`,
		in.bucket, from.Add(-time.Minute).UTC().Format(time.RFC3339), to.Add(time.Minute).UTC().Format(time.RFC3339), m, runID))
	sums, points = map[string]int64{}, map[string]int64{}
	for _, r := range rows {
		key := fmt.Sprint(r["flow"])
		if k, ok := r["kind"]; ok && k != nil {
			key += "/" + fmt.Sprint(k)
		}
		key += "/" + r["_field"].(string)
		sums[key] += r["_value"].(int64)
		points[key]++
	}
	return sums, points
}

// checkFlows checks the flows of countsTest's scenario "shop" in
// InfluxDB: each interval's points add up to the summary's figures, the
// totals are the summary's, and both match what the target counted on
// its side: a login per VU for the setup, a /flaky call per order flow
// that ended, and a failed order per 500 it answered.
func checkFlows(t *testing.T, in influx, r run, srv *served, vus int64) {
	t.Helper()
	if !r.rec.flows {
		t.Fatal("no snapshot carried flows (metrics.Snapshot.Flows), though the test has a setup and a flow")
	}
	sc := r.sum.Scenarios["shop"]
	setup, order := sc.Flows["setup"], sc.Flows["order"]
	if setup == nil || order == nil {
		t.Fatalf("summary flows of shop = %v, want setup and order", sc.Flows)
	}
	t.Logf("server: %d logins, %d /flaky calls of which %d answered 500; summary: setup %+v, order %+v",
		srv.logins.Load(), srv.flaky.Load(), srv.failed.Load(), *setup, *order)
	if setup.Completed != srv.logins.Load() || setup.Completed != vus || setup.Failed != 0 {
		t.Errorf("setup: %d completed, %d failed; the server saw %d logins from %d VUs", setup.Completed, setup.Failed, srv.logins.Load(), vus)
	}
	if order.Count != srv.flaky.Load() || order.Failed != srv.failed.Load() || order.FailedByKind["http_5xx"] != order.Failed ||
		order.Completed != order.Count-order.Failed || order.Count < 10 || order.Failed == 0 {
		t.Errorf("order: %d ended, %d completed, %d failed (%v); the server answered /flaky %d times, %d of them 500",
			order.Count, order.Completed, order.Failed, order.FailedByKind, srv.flaky.Load(), srv.failed.Load())
	}

	to := time.Now()
	sums, points := in.flowFigures(t, "hload_flows", r.sum.RunID, r.start, to)
	totals, _ := in.flowFigures(t, "hload_flow_totals", r.sum.RunID, r.start, to)
	failures, _ := in.flowFigures(t, "hload_flow_failures", r.sum.RunID, r.start, to)
	t.Logf("InfluxDB: hload_flows sums %v over %v points; hload_flow_totals %v; hload_flow_failures %v", sums, points, totals, failures)
	for name, f := range map[string]*metrics.FlowFigures{"setup": setup, "order": order} {
		for field, want := range map[string]int64{"count": f.Count, "completed": f.Completed, "failed": f.Failed} {
			key := name + "/" + field
			if sums[key] != want || totals[key] != want {
				t.Errorf("%s: InfluxDB's intervals add up to %d, its total says %d; the summary says %d", key, sums[key], totals[key], want)
			}
			if points[key] != int64(r.rec.snapshots) {
				t.Errorf("%s: %d intervals in InfluxDB, the run wrote %d snapshots", key, points[key], r.rec.snapshots)
			}
		}
	}
	if got := failures["order/http_5xx/count"]; got != srv.failed.Load() || len(failures) != 1 {
		t.Errorf("hload_flow_failures = %v, want order/http_5xx/count = %d (the server's 500s) alone", failures, srv.failed.Load())
	}
}

// TestRealInfluxFlowPoints: every field of hload_flows, hload_flow_failures
// and hload_flow_totals, written straight to the sink, reads back from
// InfluxDB with its value and its type; a flow without a completed run has
// no duration fields.
func TestRealInfluxFlowPoints(t *testing.T) {
	in := realInflux(t)
	cfg := map[string]cty.Value{
		"url":      cty.StringVal(in.url),
		"bucket":   cty.StringVal(in.bucket),
		"org":      cty.StringVal(in.org),
		"token":    cty.StringVal(in.token),
		"instance": cty.StringVal("itest"),
		"tags":     cty.MapVal(map[string]cty.Value{"suite": cty.StringVal("sinks/influxdb")}),
	}
	sk, err := influxdb.New(cty.ObjectVal(cfg), influxdb.Options{TestName: t.Name()})
	if err != nil {
		t.Fatal(err)
	}
	runID := fmt.Sprintf("flows-%d", time.Now().UnixNano())
	start := time.Unix(1_700_100_000, 0)
	if err := sk.Start(context.Background(), metrics.RunInfo{RunID: runID, Started: start}); err != nil {
		t.Fatal(err)
	}
	// want holds every field the points should carry, by
	// "measurement/flow/kind/unix seconds/field".
	want := map[string]any{}
	expect := func(m string, f *metrics.FlowSeriesFigures, at time.Time) {
		key := func(field string) string { return fmt.Sprintf("%s/%s//%d/%s", m, f.Flow, at.Unix(), field) }
		want[key("count")], want[key("completed")], want[key("failed")] = f.Count, f.Completed, f.Failed
		want[key("failure_rate")], want[key("rate")] = f.FailureRate, f.Rate
		if f.Completed > 0 {
			d := f.Duration
			for field, v := range map[string]float64{"min": d.Min, "mean": d.Mean, "stdev": d.Stdev, "p50": d.P50, "p90": d.P90, "p95": d.P95, "p99": d.P99, "p999": d.P999, "max": d.Max} {
				want[key("duration_"+field+"_ms")] = v
			}
		}
		if m == "hload_flows" {
			for kind, n := range f.FailedByKind {
				want[fmt.Sprintf("hload_flow_failures/%s/%s/%d/count", f.Flow, kind, at.Unix())] = n
			}
		}
	}
	for i := int64(1); i <= 3; i++ {
		end := start.Add(time.Duration(i) * time.Second)
		snap := metrics.Snapshot{Start: end.Add(-time.Second), End: end, Elapsed: time.Duration(i) * time.Second,
			VUs: map[string]int{"shop": 5},
			Flows: []metrics.FlowSeriesFigures{
				{Scenario: "shop", Flow: "order", FlowFigures: metrics.FlowFigures{
					Count: 10 * i, Completed: 10*i - i, Failed: i, FailureRate: 0.1, Rate: float64(10 * i),
					Duration:     metrics.LatencyFigures{Min: 10.5, Mean: 20.25 * float64(i), P50: 19, P90: 30.125, P95: 33, P99: 41.5, Max: 45.75},
					FailedByKind: map[string]int64{"capture": i - 1, "http_5xx": 1},
				}},
				{Scenario: "shop", Flow: "setup", FlowFigures: metrics.FlowFigures{
					Count: i, Failed: i, FailureRate: 1, Rate: float64(i), FailedByKind: map[string]int64{"timeout": i},
				}},
			}}
		for j := range snap.Flows {
			// Kinds with no failure are not in the map (the aggregator
			// leaves them out), so neither are their points.
			for k, n := range snap.Flows[j].FailedByKind {
				if n == 0 {
					delete(snap.Flows[j].FailedByKind, k)
				}
			}
			expect("hload_flows", &snap.Flows[j], end)
		}
		if err := sk.Write(snap); err != nil {
			t.Fatal(err)
		}
	}
	ended := start.Add(4 * time.Second)
	total := &metrics.FlowFigures{Count: 60, Completed: 54, Failed: 6, FailureRate: 0.1, Rate: 15,
		Duration: metrics.LatencyFigures{Min: 10.5, Mean: 40.5, P50: 19, P90: 30.125, P95: 33, P99: 41.5, Max: 45.75}}
	expect("hload_flow_totals", &metrics.FlowSeriesFigures{Flow: "order", FlowFigures: *total}, ended)
	if err := sk.Close(metrics.Summary{Ended: ended, Scenarios: map[string]*metrics.ScenarioSummary{
		"shop": {Flows: map[string]*metrics.FlowFigures{"order": total}},
	}}); err != nil {
		t.Fatal(err)
	}

	rows := in.query(t, fmt.Sprintf(`from(bucket: %q)
  |> range(start: 2023-11-15T00:00:00Z, stop: 2023-11-18T00:00:00Z)
  |> filter(fn: (r) => r.run_id == %q and r._measurement =~ /^hload_flow/)`, in.bucket, runID))
	got := map[string]any{}
	for _, r := range rows {
		if r["scenario"] != "shop" || r["instance"] != "itest" || r["suite"] != "sinks/influxdb" || r["test"] != t.Name() {
			t.Errorf("a point with tags %v, want scenario shop, instance itest, suite sinks/influxdb and test %s", r, t.Name())
		}
		kind, _ := r["kind"].(string)
		key := fmt.Sprintf("%s/%s/%s/%d/%s", r["_measurement"], r["flow"], kind, r["_time"].(time.Time).Unix(), r["_field"])
		got[key] = r["_value"]
	}
	t.Logf("InfluxDB returned %d fields for %d written", len(got), len(want))
	for k, v := range want {
		if g, ok := got[k]; !ok {
			t.Errorf("%s: missing, want %v", k, v)
		} else if fmt.Sprintf("%T %v", g, g) != fmt.Sprintf("%T %v", v, v) {
			t.Errorf("%s = %T %v, want %T %v", k, g, g, v, v)
		}
	}
	for k, g := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("%s = %v, written though it should not be", k, g)
		}
	}
}

// writeIntervalMetrics writes 5 snapshots whose series carry SSE and AMQP
// metrics, as the core would if it reported them per interval, at fixed
// times on 2023-11-14, and returns their run id.
func writeIntervalMetrics(t *testing.T, in influx) string {
	t.Helper()
	cfg := map[string]cty.Value{
		"url":    cty.StringVal(in.url),
		"bucket": cty.StringVal(in.bucket),
		"org":    cty.StringVal(in.org),
		"token":  cty.StringVal(in.token),
	}
	sk, err := influxdb.New(cty.ObjectVal(cfg), influxdb.Options{TestName: t.Name()})
	if err != nil {
		t.Fatal(err)
	}
	runID := fmt.Sprintf("synthetic-%d", time.Now().UnixNano())
	start := time.Unix(1_700_000_000, 0)
	if err := sk.Start(context.Background(), metrics.RunInfo{RunID: runID, Started: start}); err != nil {
		t.Fatal(err)
	}
	lat := metrics.LatencyFigures{Min: 1, Mean: 2, P50: 2, P90: 3, P95: 4, P99: 5, Max: 6}
	for i := 1; i <= 5; i++ {
		end := start.Add(time.Duration(i) * time.Second)
		m := map[string]metrics.MetricFigures{}
		for _, name := range []string{"sse_events", "sse_delivery_latency", "sse_events_missed", "amqp_confirmed", "amqp_consumed", "amqp_returned"} {
			m[name] = metrics.MetricFigures{Count: int64(10 * i), LatencyFigures: lat}
		}
		sk.Write(metrics.Snapshot{Start: end.Add(-time.Second), End: end, Elapsed: time.Duration(i) * time.Second,
			Series: []metrics.SeriesFigures{{Scenario: "subscribers", Request: "stream", RequestFigures: metrics.RequestFigures{
				Count: 10, Latency: lat, Metrics: m}}},
			VUs: map[string]int{"subscribers": 3}})
	}
	if err := sk.Close(metrics.Summary{Ended: start.Add(6 * time.Second)}); err != nil {
		t.Fatal(err)
	}
	return runID
}

type dashboardQuery struct{ title, flux string }

// dashboardQueries returns every Flux query of a Grafana dashboard: each
// panel's targets, in rows too, and the query variables.
func dashboardQueries(t *testing.T, raw []byte) []dashboardQuery {
	var d struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Query string `json:"query"`
			} `json:"targets"`
			Panels []json.RawMessage `json:"panels"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Name  string `json:"name"`
				Type  string `json:"type"`
				Query any    `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("dashboard JSON: %v", err)
	}
	var out []dashboardQuery
	for _, p := range d.Panels {
		if len(p.Panels) > 0 {
			t.Fatalf("row %q holds collapsed panels; this test reads top-level panels only", p.Title)
		}
		for _, tg := range p.Targets {
			out = append(out, dashboardQuery{p.Title, tg.Query})
		}
	}
	for _, v := range d.Templating.List {
		if q, ok := v.Query.(string); ok && v.Type == "query" {
			out = append(out, dashboardQuery{"variable " + v.Name, q})
		}
	}
	// Every Grafana variable the queries use must be one the test sets.
	known := map[string]bool{"${bucket}": true, "${run_id}": true}
	for _, q := range out {
		for _, v := range regexp.MustCompile(`\$\{?\w+\}?`).FindAllString(q.flux, -1) {
			if !known[v] {
				t.Fatalf("dashboard %q uses %s, which this test does not substitute", q.title, v)
			}
		}
	}
	return out
}

const outageTest = `
target "web" {
  protocol = "http"
  base_url = %q
}
scenario "steady" {
  executor = "constant-arrival-rate"
  rate     = 200
  duration = "26s"
  request "home" { path = "/" }
}
sink "csv" { path = "results.csv" }
`

// TestRealInfluxOutage (must-show 3): InfluxDB is stopped for 5 s mid-run
// and started again on the same data. The load's per-second counts stay in
// their band, InfluxDB holds every interval afterwards, nothing is
// dropped, and the end-of-run line says what was written and retried.
func TestRealInfluxOutage(t *testing.T) {
	in := realInflux(t)
	if testing.Short() {
		t.Skip("a 26 s run with an InfluxDB outage; skipped under -short")
	}
	if in.ctl == "" { // the outage test stops and starts influxd through it
		servicetest.InfluxDB.Missing(t, "HLOAD_INFLUXD_CTL is not set")
	}
	ctl := func(cmd string) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		out, err := exec.CommandContext(ctx, in.ctl, cmd).CombinedOutput()
		if err != nil {
			t.Errorf("%s %s: %v\n%s", in.ctl, cmd, err, out)
		}
	}
	// Whatever happens, leave InfluxDB running for the next test.
	t.Cleanup(func() { ctl("restart-start") })

	srv, _ := target(t)
	// stopping: the stop was asked for; downAt: influxd has exited;
	// upAt: it answers /ping again.
	var stopping, downAt, upAt time.Time
	r := apply(t, fmt.Sprintf(outageTest, srv.URL)+in.block(""), func() {
		// 7 s of steady run before the outage give the band its
		// intervals even when influxd is slow to start again: on a
		// busy machine it once took 8 s, and the intervals after the
		// outage fell past the run's end.
		time.Sleep(7 * time.Second)
		stopping = time.Now()
		ctl("restart-stop")
		downAt = time.Now()
		time.Sleep(5 * time.Second)
		ctl("restart-start")
		upAt = time.Now()
	})
	if r.err != nil {
		t.Fatalf("run: %v", r.err)
	}
	at := func(x time.Time) float64 { return x.Sub(r.start).Seconds() }
	t.Logf("influxd: stop asked at %.1fs of the run, exited at %.1fs, answering again at %.1fs", at(stopping), at(downAt), at(upAt))

	// The load: per-second counts from the CSV, in the band of the
	// intervals outside the outage.
	perSecond := csvCounts(t, r.csv)
	var outside, during []int64
	for i, row := range perSecond {
		if i == 0 || i == len(perSecond)-1 {
			continue // the first and last intervals are partial
		}
		end := r.start.Add(time.Duration(row.elapsed * float64(time.Second)))
		if end.After(stopping) && end.Before(upAt.Add(6*time.Second)) {
			// Up to 6 s after the restart the sender may still be
			// in its backoff, then catching up.
			during = append(during, row.count)
		} else {
			outside = append(outside, row.count)
		}
	}
	med := median(outside)
	lo, hi := med*8/10, med*12/10
	t.Logf("per-second counts: outside the outage %v (median %d, band %d..%d); during %v", outside, med, lo, hi, during)
	if len(during) < 4 || len(outside) < 4 {
		t.Fatalf("too few intervals to compare: %d during, %d outside", len(during), len(outside))
	}
	for _, n := range during {
		if n < lo || n > hi {
			t.Errorf("during the outage an interval counted %d, outside the band %d..%d", n, lo, hi)
		}
	}

	// InfluxDB holds every interval, adding up to the summary.
	c := r.sink.Counts()
	got := in.intervalCounts(t, r.sum.RunID, r.start, time.Now())["steady/home"]
	var sum int64
	for _, n := range got {
		sum += n
	}
	want := r.sum.Scenarios["steady"].Requests["home"].Count
	t.Logf("InfluxDB holds %d intervals adding up to %d (summary %d, snapshots %d); counts %+v", len(got), sum, want, r.rec.snapshots, c)
	if len(got) != r.rec.snapshots || sum != want {
		t.Errorf("InfluxDB holds %d intervals adding up to %d; want %d intervals adding up to %d", len(got), sum, r.rec.snapshots, want)
	}
	if c.Dropped != 0 || c.Unsent != 0 || c.Rejected != 0 || c.Retried == 0 {
		t.Errorf("counts %+v: want some retried and nothing dropped, unsent or rejected", c)
	}
	line := regexp.MustCompile(`influxdb: (\d+) points written, (\d+) retried, 0 dropped`).FindStringSubmatch(r.log)
	if line == nil || line[1] != strconv.FormatInt(c.Written, 10) || line[2] != strconv.FormatInt(c.Retried, 10) {
		t.Errorf("end-of-run line missing or wrong, want %d written, %d retried, 0 dropped:\n%s", c.Written, c.Retried, r.log)
	}
}

type csvRow struct {
	elapsed float64
	count   int64
}

// csvCounts reads the csv sink's interval file: the count per interval,
// summed over requests (rows of kind "request"), in time order.
func csvCounts(t *testing.T, path string) []csvRow {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	by := map[float64]int64{}
	for _, rec := range recs[1:] {
		if rec[17] != "request" {
			continue // a flow's row counts flows, not requests
		}
		el, _ := strconv.ParseFloat(rec[1], 64)
		n, _ := strconv.ParseInt(rec[4], 10, 64)
		by[el] += n
	}
	out := make([]csvRow, 0, len(by))
	for el, n := range by {
		out = append(out, csvRow{el, n})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].elapsed < out[j].elapsed })
	return out
}

func median(xs []int64) int64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]int64(nil), xs...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

// TestUnreachableInfluxFailsTheRunAtStart (must-show 4): with InfluxDB
// unreachable, core.Run fails before any load is sent, naming the URL; with
// required = false the run goes on, says so, and passes with a warning
// counting the points that never arrived.
func TestUnreachableInfluxFailsTheRunAtStart(t *testing.T) {
	srv, hits := target(t)
	down := closedAddr(t)
	src := fmt.Sprintf(`
target "web" {
  protocol = "http"
  base_url = %q
}
scenario "s" {
  executor = "constant-vus"
  vus      = 1
  duration = "1s"
  request "r" { path = "/" }
}
sink "influxdb" {
  url    = %q
  bucket = "hload"
  %%s
}
`, srv.URL, down)
	r := apply(t, fmt.Sprintf(src, ""), nil)
	if r.err == nil || !strings.Contains(r.err.Error(), down) || !strings.Contains(r.err.Error(), "could not start") {
		t.Fatalf("Run error = %v, want a start failure naming %s", r.err, down)
	}
	if hits.Load() != 0 {
		t.Fatalf("%d requests were sent before the sink failed to start", hits.Load())
	}

	r = apply(t, fmt.Sprintf(src, `required = false
  flush_timeout = "1s"`), nil)
	if hits.Load() == 0 || !strings.Contains(r.log, "does not answer") || !strings.Contains(r.log, "the run goes on") {
		t.Fatalf("required = false: %d requests sent, log:\n%s", hits.Load(), r.log)
	}
	if r.err != nil || !r.sum.Passed || !slices.ContainsFunc(r.sum.Warnings, func(w string) bool { return strings.Contains(w, "unsent") }) {
		t.Fatalf("required = false: Run error = %v, passed %v, warnings %q; want no error, a pass, and a warning reporting the unsent points", r.err, r.sum.Passed, r.sum.Warnings)
	}
}

// TestExampleFileLoads keeps examples/influxdb.hcl valid: it loads with
// the sink's schema, and its block is one New accepts.
func TestExampleFileLoads(t *testing.T) {
	path := filepath.Join("..", "..", "examples", "influxdb.hcl")
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"INFLUX_TOKEN": "t"}
	test, diags := config.Parse(map[string][]byte{path: src}, filepath.Dir(path), config.Options{
		Protocols: protocols.NewRegistry(hloadhttp.New()),
		Sinks:     map[string]hcldec.ObjectSpec{"influxdb": influxdb.Spec(), "csv": csvsink.Spec()},
		LookupEnv: func(k string) (string, bool) { v, ok := env[k]; return v, ok },
		DemoURL:   func() (string, error) { return "http://127.0.0.1:1", nil },
	})
	if diags.HasErrors() {
		t.Fatalf("%s: %s", path, diags.Error())
	}
	found := false
	for _, s := range test.Sinks {
		if s.Type == "influxdb" {
			found = true
			if _, err := influxdb.New(s.Config, influxdb.Options{}); err != nil {
				t.Fatalf("%s: %v", path, err)
			}
		}
	}
	if !found {
		t.Fatalf("%s has no influxdb sink", path)
	}
}

const goneTest = `
target "web" {
  protocol = "http"
  base_url = %q
}
scenario "steady" {
  executor = "constant-vus"
  vus      = 2
  duration = "4s"
  request "home" { path = "/" }
}
`

// TestRealInfluxGoneOptional (must-show 5): a real InfluxDB, optional
// (required = false), is stopped 1.5 s into a 4 s run and not started
// again. The run passes with warnings: the end of the run waits no more
// than the short default flush_timeout, the points that never arrived are
// counted in a warning, and InfluxDB holds the intervals written before
// it went.
func TestRealInfluxGoneOptional(t *testing.T) {
	in := realInflux(t)
	if in.ctl == "" { // the test stops and starts influxd through it
		servicetest.InfluxDB.Missing(t, "HLOAD_INFLUXD_CTL is not set")
	}
	ctl := func(cmd string) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		if out, err := exec.CommandContext(ctx, in.ctl, cmd).CombinedOutput(); err != nil {
			t.Errorf("%s %s: %v\n%s", in.ctl, cmd, err, out)
		}
	}
	// Whatever happens, leave InfluxDB running for the next test.
	t.Cleanup(func() { ctl("restart-start") })
	srv, _ := target(t)
	var stopped time.Time
	r := apply(t, fmt.Sprintf(goneTest, srv.URL)+in.block("required = false"), func() {
		time.Sleep(1500 * time.Millisecond)
		ctl("restart-stop")
		stopped = time.Now()
	})
	if r.err != nil {
		t.Fatalf("run: %v", r.err)
	}
	after := r.start.Add(r.took).Sub(r.sum.Ended)
	c := r.sink.Counts()
	t.Logf("influxd stopped %.1fs into the run; the run returned %v after its load's end; counts %+v; warnings %q",
		stopped.Sub(r.start).Seconds(), after.Round(time.Millisecond), c, r.sum.Warnings)
	if after > 5*time.Second {
		t.Errorf("the run returned %v after its load's end", after)
	}
	unsent := slices.ContainsFunc(r.sum.Warnings, func(w string) bool {
		return strings.HasPrefix(w, "influxdb sink (required = false): ") && strings.Contains(w, fmt.Sprintf("%d unsent", c.Unsent))
	})
	if !r.sum.Passed || len(r.sum.SinkErrors) != 0 || !unsent || c.Unsent == 0 || c.Written == 0 {
		t.Errorf("passed %v, sink errors %q, warnings %q, counts %+v; want a pass, and a warning counting the unsent points", r.sum.Passed, r.sum.SinkErrors, r.sum.Warnings, c)
	}

	ctl("restart-start")
	got := in.intervalCounts(t, r.sum.RunID, r.start, time.Now())["steady/home"]
	if len(got) == 0 || len(got) >= r.rec.snapshots {
		t.Errorf("InfluxDB holds %d of the run's %d intervals; want those before it stopped", len(got), r.rec.snapshots)
	}
	t.Logf("InfluxDB holds %d of the run's %d intervals", len(got), r.rec.snapshots)
}
