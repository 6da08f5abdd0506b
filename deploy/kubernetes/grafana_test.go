package kubernetes_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	influxdb2 "github.com/influxdata/influxdb-client-go/v2"

	"github.com/hload/hload/core/metrics"
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
scenario "s" {
  executor = "constant-vus"
  vus      = 3
  duration = "3s"
  request "r" {
    path = "/r"
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
// the segments up: its end-of-run table counts every call the server
// answered, and its VU panel reaches the test's VUs, which no segment
// has alone.
func TestDashboardSumsSegments(t *testing.T) {
	url, bucket, org := os.Getenv("HLOAD_INFLUX_URL"), os.Getenv("HLOAD_INFLUX_BUCKET"), os.Getenv("HLOAD_INFLUX_ORG")
	if url == "" {
		msg := `HLOAD_INFLUX_URL is not set: run eval "$(scripts/influxd.sh start)" first, or scripts/test.sh`
		if v := os.Getenv("HLOAD_REQUIRE_SERVICES"); (v != "" && v != "0" && v != "false") || os.Getenv("CI") == "true" {
			t.Fatal(msg + " (services are required here, so this is a failure, not a skip)")
		}
		t.Skip(msg)
	}
	if bucket == "" {
		bucket = "hload"
	}
	var served atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served.Add(1)
		time.Sleep(5 * time.Millisecond)
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

	raw, err := os.ReadFile("../../examples/grafana/dashboards/hload.json")
	if err != nil {
		t.Fatal(err)
	}
	queries := panelQueries(t, raw)
	// Grafana formats a multi-value choice for InfluxDB as a regex
	// alternation: (id1|id2).
	vars := strings.NewReplacer(
		"${bucket}", bucket,
		"${run_id}", "("+strings.Join(runIDs, "|")+")",
		"v.timeRangeStart", started.Add(-5*time.Second).UTC().Format(time.RFC3339),
		"v.timeRangeStop", time.Now().Add(5*time.Second).UTC().Format(time.RFC3339),
		"v.windowPeriod", "1s",
	)
	client := influxdb2.NewClient(url, os.Getenv("HLOAD_INFLUX_TOKEN"))
	defer client.Close()
	query := func(title string) []map[string]any {
		q, ok := queries[title]
		if !ok {
			t.Fatalf("the dashboard has no panel %q", title)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		res, err := client.QueryAPI(org).Query(ctx, vars.Replace(q))
		if err != nil {
			t.Fatalf("%s: %v\n%s", title, err, vars.Replace(q))
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

	totals := query("Per request, end of run")
	if len(totals) != 1 || fmt.Sprint(totals[0]["count"]) != fmt.Sprint(float64(count)) {
		t.Errorf("end-of-run table: %v; want one row counting the %d calls of both segments", totals, count)
	}
	var peak float64
	for _, r := range query("Virtual users") {
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
		series[fmt.Sprint(r["table"])] = true
	}
	if len(series) != 1 {
		t.Errorf("requests per second: %d series for one request; want the segments summed into one", len(series))
	}
	t.Logf("segments %v: %d calls, the server %d; end-of-run table %v; VU peak %v", runIDs, count, served.Load(), totals, peak)
}

// panelQueries maps the dashboard's panel titles to their first query.
func panelQueries(t *testing.T, raw []byte) map[string]string {
	t.Helper()
	var d struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Query string `json:"query"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, p := range d.Panels {
		if len(p.Targets) > 0 {
			out[p.Title] = p.Targets[0].Query
		}
	}
	return out
}
