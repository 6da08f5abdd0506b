package kubernetes_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	influxdb2 "github.com/influxdata/influxdb-client-go/v2"

	"github.com/hload/hload/internal/servicetest"
	"github.com/hload/hload/metrics"
)

// segmentsTest is a test that two segments run, each writing its points
// to InfluxDB with the segment tag; both run on this host, so their
// "instance" tag is the same, as in a shell loop on one machine.
const segmentsTest = `
variable "base_url" {}
variable "influx_url" {}
variable "influx_bucket" {}
variable "influx_org" {}
target "t" {
  base_url = var.base_url
}
target "events" {
  protocol = "sse"
  base_url = var.base_url
}
# Segment 1/2 (index 0) has 1 VU, 2/2 has 2. The server fails every
# /r/0 and every other /pay/0, so the run's error and failure rates
# differ from the mean of the segments' rates, and answers /r/0 and
# /cart/0 slower, so the segments' mean latencies differ.
scenario "s" {
  executor = "constant-vus"
  vus      = 3
  duration = "3s"
  target   = "t"
  request "r" {
    path = "/r/${env("JOB_COMPLETION_INDEX")}"
  }
}
scenario "f" {
  executor   = "iterations"
  vus        = 3
  iterations = 4
  target     = "t"
  flow "order" {
    request "cart" {
      path = "/cart/${env("JOB_COMPLETION_INDEX")}"
    }
    request "pay" {
      path = "/pay/${env("JOB_COMPLETION_INDEX")}"
    }
  }
}
scenario "sse" {
  executor   = "iterations"
  vus        = 2
  iterations = 4
  target     = "events"
  request "sub" {
    path   = "/events"
    events = 5
  }
}
sink "influxdb" {
  url      = var.influx_url
  token    = env("HLOAD_INFLUX_TOKEN")
  org      = var.influx_org
  bucket   = var.influx_bucket
  required = true
}
`

// TestDashboardSumsSegments: the Grafana dashboard of examples/grafana,
// its queries run against a real InfluxDB with the run variable set to
// the segments' run ids as Grafana formats a multi-value choice, adds
// the segments up, checked against what the test server counted: its
// end-of-run tables (per request, per flow, SSE) count every call, flow
// and event the server saw, its error rate is the server's failures over
// its calls, and its VU panel reaches the test's VUs, which no segment
// has alone; the tables' mean columns are the means of hload merge of
// the segments' results. The AMQP totals table is the SSE one's query
// for amqp_ metrics (no broker runs here), and every panel of
// percentiles says that it shows the highest segment's and that
// `hload merge` gives the exact ones.
func TestDashboardSumsSegments(t *testing.T) {
	url, bucket, org := servicetest.InfluxDB.Env(t, "HLOAD_INFLUX_URL"), os.Getenv("HLOAD_INFLUX_BUCKET"), os.Getenv("HLOAD_INFLUX_ORG")
	if bucket == "" {
		bucket = "hload"
	}
	// The server's own counts: calls of request r (served) and of them
	// the failed ones (/r/0), the flow's first and last steps (/pay/0
	// fails every other call), and the SSE subscriptions and events it
	// wrote.
	const eventsPerStream = 5
	var served, failed, carts, pays, pays0, paysFailed, streams, events atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch path := r.URL.Path; {
		case path == "/r/0":
			served.Add(1)
			failed.Add(1)
			time.Sleep(10 * time.Millisecond)
			http.Error(w, "fails", http.StatusInternalServerError)
			return
		case path == "/r/1":
			served.Add(1)
			time.Sleep(2 * time.Millisecond)
		case strings.HasPrefix(path, "/cart/"):
			carts.Add(1)
			if path == "/cart/0" {
				time.Sleep(20 * time.Millisecond)
			}
		case strings.HasPrefix(path, "/pay/"):
			pays.Add(1)
			if path == "/pay/0" && pays0.Add(1)%2 == 0 {
				paysFailed.Add(1)
				http.Error(w, "fails", http.StatusInternalServerError)
				return
			}
		case path == "/events":
			streams.Add(1)
			w.Header().Set("Content-Type", "text/event-stream")
			for i := range eventsPerStream {
				fmt.Fprintf(w, "id: %d\ndata: event %d\n\n", i, i)
				w.(http.Flusher).Flush()
				events.Add(1)
			}
			// The subscriber ends the stream after its events.
			select {
			case <-r.Context().Done():
			case <-time.After(10 * time.Second):
			}
			return
		}
		w.Write([]byte("ok"))
	}))
	defer srv.Close()
	dir := t.TempDir()
	file := filepath.Join(dir, "test.hcl")
	if err := os.WriteFile(file, []byte(segmentsTest), 0o644); err != nil {
		t.Fatal(err)
	}

	const n = 2
	started := time.Now()
	startAt := started.Add(5 * time.Second).UTC().Format(time.RFC3339)
	logs := make([]bytes.Buffer, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		cmd := exec.Command(hloadBin, "apply", file, "--segment-count=2", "--start-at="+startAt, "--quiet", "--summary-export=-",
			"--var", "base_url="+srv.URL, "--var", "influx_url="+url, "--var", "influx_bucket="+bucket, "--var", "influx_org="+org)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), fmt.Sprintf("JOB_COMPLETION_INDEX=%d", i))
		cmd.Stdout, cmd.Stderr = &logs[i], &logs[i]
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		timer := time.AfterFunc(time.Minute, func() { cmd.Process.Kill() })
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer timer.Stop()
			errs[i] = cmd.Wait()
		}()
	}
	wg.Wait()
	var runIDs []string
	var count int64
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("segment %d: %v\n%s", i, errs[i], logs[i].String())
		}
		var sum metrics.Summary
		if err := json.Unmarshal([]byte(lastLine(logs[i].String())), &sum); err != nil {
			t.Fatalf("segment %d: %v\n%s", i, err, logs[i].String())
		}
		runIDs = append(runIDs, sum.RunID)
		count += sum.Scenarios["s"].Requests["r"].Count
	}
	if count != served.Load() || count == 0 {
		t.Fatalf("the segments counted %d calls, the server %d", count, served.Load())
	}
	// The exact means of the whole run, for the end-of-run tables' mean
	// columns: hload merge of the segments' logs, as kubectl logs gives
	// them.
	merge := exec.Command(hloadBin, "merge", "-", "--summary-export=merged.json")
	merge.Dir = dir
	merge.Stdin = strings.NewReader(logs[0].String() + logs[1].String())
	if out, err := merge.CombinedOutput(); err != nil {
		t.Fatalf("hload merge: %v\n%s", err, out)
	}
	var merged metrics.Summary
	if b, err := os.ReadFile(filepath.Join(dir, "merged.json")); err != nil {
		t.Fatal(err)
	} else if err := json.Unmarshal(b, &merged); err != nil {
		t.Fatal(err)
	}
	if merged.Scenarios["s"] == nil || merged.Scenarios["s"].Requests["r"] == nil || merged.Scenarios["f"] == nil || merged.Scenarios["f"].Flows["order"] == nil {
		t.Fatalf("the merged summary lacks s/r or the flow f/order: %+v", merged.Scenarios)
	}
	meanR, meanFlow := merged.Scenarios["s"].Requests["r"].Latency.Mean, merged.Scenarios["f"].Flows["order"].Duration.Mean
	// The error-rate check needs segments whose rates differ, and both
	// with calls: one fails every call, the other none.
	if failed.Load() == 0 || failed.Load() == served.Load() {
		t.Fatalf("the server failed %d of %d calls; want the calls of one segment of two", failed.Load(), served.Load())
	}
	if 2*failed.Load() == served.Load() {
		t.Fatalf("the server failed %d of %d calls: half, the mean of the segments' rates, which the check below must tell apart", failed.Load(), served.Load())
	}

	raw, err := os.ReadFile("../../examples/grafana/dashboards/hload.json")
	if err != nil {
		t.Fatal(err)
	}
	panels := dashboardPanels(t, raw)
	// Grafana formats a multi-value choice for InfluxDB as a regex
	// alternation: (id1|id2).
	vars := func(window string) *strings.Replacer {
		return strings.NewReplacer(
			"${bucket}", bucket,
			"${run_id}", "("+strings.Join(runIDs, "|")+")",
			"v.timeRangeStart", started.Add(-5*time.Second).UTC().Format(time.RFC3339),
			"v.timeRangeStop", time.Now().Add(5*time.Second).UTC().Format(time.RFC3339),
			"v.windowPeriod", window,
		)
	}
	client := influxdb2.NewClient(url, os.Getenv("HLOAD_INFLUX_TOKEN"))
	defer client.Close()
	queryWindow := func(title, window string) []map[string]any {
		p, ok := panels[title]
		if !ok || p.Query == "" {
			t.Fatalf("the dashboard has no panel %q with a query", title)
		}
		q := vars(window).Replace(p.Query)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		res, err := client.QueryAPI(org).Query(ctx, q)
		if err != nil {
			t.Fatalf("%s: %v\n%s", title, err, q)
		}
		defer res.Close()
		var rows []map[string]any
		for res.Next() {
			rows = append(rows, res.Record().Values())
		}
		if res.Err() != nil {
			t.Fatalf("%s: %v", title, res.Err())
		}
		return rows
	}
	query := func(title string) []map[string]any { return queryWindow(title, "1s") }
	// row is the one row of rows whose tags match, or nil.
	row := func(rows []map[string]any, tags ...string) map[string]any {
		var found map[string]any
	next:
		for _, r := range rows {
			for i := 0; i+1 < len(tags); i += 2 {
				if fmt.Sprint(r[tags[i]]) != tags[i+1] {
					continue next
				}
			}
			if found != nil {
				t.Errorf("two rows for %v: %v and %v", tags, found, r)
			}
			found = r
		}
		return found
	}
	// near reports whether r's column c holds want within 1 µs: a mean
	// of the segments' means weighted by their counts is the merged mean
	// but for float rounding.
	near := func(r map[string]any, c string, want float64) bool {
		v, ok := r[c].(float64)
		return ok && math.Abs(v-want) < 0.001
	}
	// is reports whether r's column c holds the number want.
	is := func(r map[string]any, c string, want float64) bool {
		switch v := r[c].(type) {
		case float64:
			return v == want
		case int64:
			return float64(v) == want
		}
		return false
	}

	totals := query("Per request, end of run")
	r := row(totals, "scenario", "s", "request", "r")
	if r == nil || !is(r, "count", float64(count)) || !is(r, "errors", float64(failed.Load())) || !near(r, "latency_mean_ms", meanR) {
		t.Errorf("end-of-run table: %v; want s/r counting the %d calls of both segments, %d failed, as the server did, and the merged mean latency %v ms", r, count, failed.Load(), meanR)
	}
	var peak float64
	for _, r := range query("Virtual users") {
		if fmt.Sprint(r["scenario"]) != "s" {
			continue
		}
		if v, ok := r["_value"].(float64); ok {
			peak = max(peak, v)
		} else if v, ok := r["_value"].(int64); ok {
			peak = max(peak, float64(v))
		}
	}
	if peak != 3 {
		t.Errorf("the VU panel peaks at %v VUs; the test runs 3 (segments of 1 and 2)", peak)
	}
	series := map[string]bool{}
	for _, r := range query("Requests per second, per request") {
		if fmt.Sprint(r["scenario"], "/", r["request"]) == "s/r" {
			series[fmt.Sprint(r["table"])] = true
		}
	}
	if len(series) != 1 {
		t.Errorf("requests per second: %d series for one request; want the segments summed into one", len(series))
	}

	// Error rate: with one window holding the whole run (windows are
	// aligned on the Unix epoch; 100000 days end in 2243), the panel's
	// one point for s/r is the server's failures over its calls. The
	// mean of the segments' rates would be near 1/2; the run's is near
	// 1/5 (1 VU on 10 ms calls that fail, 2 on 2 ms calls that pass).
	rates := queryWindow("Error rate per request", "100000d")
	wantRate := float64(failed.Load()) / float64(served.Load())
	if r := row(rates, "scenario", "s", "request", "r"); r == nil || !is(r, "_value", wantRate) {
		t.Errorf("error rate over the run: %v; want the server's %d failed of %d calls = %v", r, failed.Load(), served.Load(), wantRate)
	}
	// Over 1 s windows, every point is a rate, and the failed segment's
	// calls keep it above 0 somewhere.
	var positive bool
	for _, r := range query("Error rate per request") {
		v, _ := r["_value"].(float64)
		if v < 0 || v > 1 {
			t.Errorf("error rate point %v is not a rate", r)
		}
		positive = positive || v > 0
	}
	if !positive {
		t.Error("error rate per 1 s window: no point above 0, though the server failed calls")
	}

	// Per flow: every flow ended (the server's /cart calls), completed
	// (the /pay calls answered) or failed (the /pay/0 500s), over both
	// segments.
	flows := query("Per flow, end of run")
	f := row(flows, "scenario", "f", "flow", "order")
	wantFailure := float64(paysFailed.Load()) / float64(carts.Load())
	if f == nil || !is(f, "count", float64(carts.Load())) || !is(f, "failed", float64(paysFailed.Load())) ||
		!is(f, "completed", float64(pays.Load()-paysFailed.Load())) || !is(f, "failure_rate", wantFailure) || !near(f, "duration_mean_ms", meanFlow) {
		t.Errorf("per flow, end of run: %v; want order ended %d times (the server's /cart calls), %d completed, %d failed (its 500s), failure_rate %v, and the merged mean duration %v ms",
			f, carts.Load(), pays.Load()-paysFailed.Load(), paysFailed.Load(), wantFailure, meanFlow)
	}
	if paysFailed.Load() == 0 || 2*paysFailed.Load() == pays.Load() {
		t.Errorf("the server failed %d of %d /pay calls; want every other call of one segment", paysFailed.Load(), pays.Load())
	}

	// SSE: every event the server wrote, on every stream it served.
	sse := query("SSE totals")
	if e := row(sse, "scenario", "sse", "request", "sub", "metric", "sse_events"); e == nil || !is(e, "count", float64(events.Load())) || events.Load() != streams.Load()*eventsPerStream {
		t.Errorf("SSE totals: sse_events %v; want the %d events the server wrote on %d streams", e, events.Load(), streams.Load())
	}
	// AMQP totals is the SSE query for the amqp_ metrics, so the check
	// above holds for it too.
	if a, s := panels["AMQP totals"].Query, panels["SSE totals"].Query; a != strings.Replace(s, "r.metric =~ /^sse_/", "r.metric =~ /^amqp_/", 1) {
		t.Errorf("the AMQP totals query is not the SSE totals one for amqp_ metrics:\n%s\n%s", a, s)
	}

	// Percentiles of separate processes cannot be summed: every panel
	// that shows them says so and names hload merge.
	percentiles := regexp.MustCompile(`(latency|duration)_\(?(mean|p50)`)
	var withPercentiles int
	for title, p := range panels {
		if percentiles.MatchString(p.Query) {
			withPercentiles++
			if !strings.Contains(p.Description, "hload merge") || !strings.Contains(p.Description, "highest segment") {
				t.Errorf("panel %q shows percentiles, but its description does not say that they are the highest segment's and that hload merge gives the exact ones: %q", title, p.Description)
			}
		}
	}
	if withPercentiles != 9 {
		t.Errorf("%d panels show percentiles or means; the dashboard has 9", withPercentiles)
	}
	t.Logf("segments %v: %d calls, the server %d (%d failed); end-of-run table %v; VU peak %v; error rate %v; flow %v; merged means: s/r %v ms, order %v ms; SSE events %v (server %d on %d streams)",
		runIDs, count, served.Load(), failed.Load(), r, peak, rates, f, meanR, meanFlow, row(sse, "metric", "sse_events"), events.Load(), streams.Load())
}

// panel is what the test reads of a dashboard panel.
type panel struct {
	Description string
	Query       string // the first target's
}

// dashboardPanels maps the dashboard's panel titles to their description
// and first query.
func dashboardPanels(t *testing.T, raw []byte) map[string]panel {
	t.Helper()
	var d struct {
		Panels []struct {
			Title       string `json:"title"`
			Description string `json:"description"`
			Targets     []struct {
				Query string `json:"query"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatal(err)
	}
	out := map[string]panel{}
	for _, p := range d.Panels {
		q := ""
		if len(p.Targets) > 0 {
			q = p.Targets[0].Query
		}
		out[p.Title] = panel{Description: p.Description, Query: q}
	}
	return out
}
