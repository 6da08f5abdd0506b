package main

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/hload/hload/metrics"
	"github.com/hload/hload/sinks/html/browsertest"
)

// reportTest is a short run against the embedded demo shop: a closed
// scenario with stages, an open one, SSE subscribers with their senders
// (protocol metrics), a threshold, and the html sink.
const reportTest = `
variable "base_url" {}
variable "peak" {
  default = 2
}
target "shop" {
  base_url = var.base_url
}
target "notifications" {
  protocol = "sse"
  base_url = var.base_url
}
scenario "browse" {
  executor = "ramping-vus"
  stages = [
    { duration = "1s", target = var.peak },
    { duration = "2s", target = var.peak },
  ]
  think_time = "20ms"
  target     = "shop"
  request "main" {
    path = "/"
  }
  request "detail" {
    path = "/products/${random_int(1, 2000)}"
  }
}
scenario "list" {
  executor          = "constant-arrival-rate"
  rate              = 20
  duration          = "3s"
  pre_allocated_vus = 2
  max_vus           = 5
  target            = "shop"
  request "list" {
    path = "/products"
  }
}
scenario "subscribers" {
  executor = "constant-vus"
  vus      = 1
  duration = "3s"
  target   = "notifications"
  request "subscribe" {
    path          = "/api/notification/subscribe/1"
    delivery_key  = 1
    id_field      = "id"
    sent_at_field = "sentAt"
    sent_at_unit  = "us"
    miss_grace    = "500ms"
  }
}
scenario "senders" {
  executor   = "constant-vus"
  vus        = 1
  duration   = "3s"
  think_time = "50ms"
  target     = "shop"
  request "send" {
    method = "POST"
    path   = "/api/notification/send"
    let = {
      id = "${vu.id}-${vu.iteration}"
    }
    json     = { userId = 1, message = "hi", id = let.id, sentAt = unix_micros() }
    delivery = { key = 1, id = let.id }
  }
}
threshold {
  metric    = "errors"
  condition = "rate < 50%"
}
sink "html" {
  path = %q
}
`

// TestReportInBrowser (issue 15, must show 1): a real run against the
// embedded demo shop writes the report through sink "html", and `hload
// report` renders one from the summary export. Each opens in headless
// Chromium from file:// with the network off: every chart drew its lines,
// the per-request table shows the summary JSON's numbers, the page asked
// for nothing but itself, and a screenshot is kept.
func TestReportInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("a 3 s run and a browser: not in -short")
	}
	browsertest.RequireChromium(t)

	// The demo shop, behind a counter of its own: hload's counts are
	// checked against it.
	srv, served := countingShop(t)

	dir := t.TempDir()
	sinkReport := filepath.Join(dir, "report.html")
	export := filepath.Join(dir, "result.json")
	file := writeFile(t, dir, "test.hcl", strings.Replace(reportTest, "%q", strconv.Quote(sinkReport), 1))
	var stdout, stderr bytes.Buffer
	if code := run([]string{"apply", "--quiet", "--summary-export", export, "--var", "base_url=" + srv.URL, "--var", "peak=3", file}, &stdout, &stderr); code != 0 {
		t.Fatalf("apply exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	srv.CloseClientConnections()
	var sum metrics.Summary
	data, err := os.ReadFile(export)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &sum); err != nil {
		t.Fatal(err)
	}
	var calls int64
	for _, sc := range sum.Scenarios {
		for _, r := range sc.Requests {
			calls += r.Count
		}
	}
	// Every call is one request to the server; a stream is one request.
	if got := served.Load(); got != calls {
		t.Fatalf("the server served %d requests, the summary counts %d calls", got, calls)
	}
	if sum.Series == nil || len(sum.Series.TimeS) < 3 {
		t.Fatalf("the export has no series: %+v", sum.Series)
	}
	if sum.Variables["peak"] != "3" || len(sum.Files) != 1 {
		t.Fatalf("the export's metadata: files %v, variables %v", sum.Files, sum.Variables)
	}

	rendered := filepath.Join(dir, "rendered.html")
	stdout.Reset()
	stderr.Reset()
	if code := run([]string{"report", export, "-o", rendered}, &stdout, &stderr); code != 0 {
		t.Fatalf("report exit %d: %s", code, stderr.String())
	}

	browser := browsertest.NewBrowser(t)
	for name, path := range map[string]string{"sink": sinkReport, "command": rendered} {
		t.Run(name, func(t *testing.T) {
			page := browsertest.Open(t, browser, path)
			checkCharts(t, page, &sum)
			checkTable(t, page, &sum)
			if !strings.Contains(page.Metadata, "peak = 3") || !strings.Contains(page.Metadata, file) || !strings.Contains(page.Metadata, sum.RunID) {
				t.Errorf("the metadata table misses the variables, the file or the run id:\n%s", page.Metadata)
			}
			browsertest.SaveArtifact(t, "report-"+name+".png", page.Screenshot)
		})
	}
}

// checkCharts wants three charts per scenario (requests and errors,
// latency, load), one per protocol metric and one for the gauges, each
// with its lines drawn.
func checkCharts(t *testing.T, page *browsertest.Page, sum *metrics.Summary) {
	t.Helper()
	metricNames := map[string]bool{}
	for _, sc := range sum.Series.Scenarios {
		for _, r := range sc.Requests {
			for _, m := range r.Metrics {
				metricNames[m.Name] = true
			}
		}
	}
	if !metricNames["sse_delivery_latency"] {
		t.Errorf("the series have no sse_delivery_latency: the SSE panel is not shown")
	}
	want := 3*len(sum.Series.Scenarios) + len(metricNames)
	if len(sum.Series.Gauges) > 0 {
		want++
	}
	if len(page.Charts) != want {
		t.Errorf("the page has %d charts, want %d", len(page.Charts), want)
	}
	for _, c := range page.Charts {
		t.Logf("chart %q: %dx%d, %d coloured pixels", c.Title, c.Width, c.Height, c.Coloured)
		// A line across the plot is thousands of pixels, a lone value's
		// dot about 80; an empty plot has none (its axes, grid and legend
		// are grey or outside the canvas).
		if c.Coloured < 40 {
			t.Errorf("chart %q is blank: %d coloured pixels", c.Title, c.Coloured)
		}
	}
}

// checkTable wants one row per request of the summary, each showing its
// figures: counts and latencies exactly (the JSON has microsecond
// resolution, the table three decimals of a millisecond), rates and
// error shares at the shown precision.
func checkTable(t *testing.T, page *browsertest.Page, sum *metrics.Summary) {
	t.Helper()
	requests := 0
	for _, sc := range sum.Scenarios {
		requests += len(sc.Requests)
	}
	if len(page.Rows) != requests || requests == 0 {
		t.Fatalf("the tables have %d rows, the summary %d requests", len(page.Rows), requests)
	}
	for _, row := range page.Rows {
		r := sum.Scenarios[row.Scenario].Requests[row.Request]
		if r == nil {
			t.Errorf("row %s/%s is in no scenario of the summary", row.Scenario, row.Request)
			continue
		}
		l := r.Latency
		want := map[string][2]float64{ // value, tolerance
			"count": {float64(r.Count), 0}, "rps": {r.RPS, 0.05}, "error_rate": {100 * r.ErrorRate, 0.005},
			"mean": {l.Mean, 0.0005}, "stdev": {l.Stdev, 0.0005}, "min": {l.Min, 0}, "p50": {l.P50, 0},
			"p90": {l.P90, 0}, "p95": {l.P95, 0}, "p99": {l.P99, 0}, "max": {l.Max, 0},
		}
		for field, w := range want {
			got, err := strconv.ParseFloat(row.Cells[field], 64)
			if err != nil || math.Abs(got-w[0]) > w[1]+1e-9 {
				t.Errorf("%s/%s %s: the table shows %q, the JSON has %v", row.Scenario, row.Request, field, row.Cells[field], w[0])
			}
		}
	}
}

// TestHTMLSinkMistakes: a sink "html" block with a bad attribute, an empty
// path or no path is refused by validate, exit 2, naming the file and
// line; and `hload report` refuses what is not a summary export.
func TestHTMLSinkMistakes(t *testing.T) {
	cases := []struct{ name, body, want, at string }{
		{"unknown attribute", "path = \"r.html\"\n  colour = \"red\"", `An argument named "colour" is not expected here`, "test.hcl:15:3"},
		{"empty path", `path = ""`, `"path" must not be empty`, "test.hcl:13,1-12"},
		{"no path", `x = 1`, `The argument "path" is required`, "test.hcl:13:13"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			file := writeFile(t, dir, "test.hcl", `target "shop" {
  base_url = "http://127.0.0.1:1"
}
scenario "s" {
  executor = "constant-vus"
  vus      = 1
  duration = "1s"
  target   = "shop"
  request "r" {
    path = "/"
  }
}
sink "html" {
  `+c.body+`
}
`)
			var stdout, stderr bytes.Buffer
			code := run([]string{"validate", "--no-color", file}, &stdout, &stderr)
			if code != exitUsage || !strings.Contains(stderr.String(), c.want) || !strings.Contains(stderr.String(), c.at) {
				t.Fatalf("exit %d, want 2 with %q at %s; stderr:\n%s", code, c.want, c.at, stderr.String())
			}
		})
	}
	t.Run("report of what is not an export", func(t *testing.T) {
		dir := t.TempDir()
		for _, content := range []string{"not json", `{"hello": 1}`} {
			in := writeFile(t, dir, "in.json", content)
			var stdout, stderr bytes.Buffer
			code := run([]string{"report", in, "-o", filepath.Join(dir, "out.html")}, &stdout, &stderr)
			if code != exitUsage || !strings.Contains(stderr.String(), in+": not a summary export") {
				t.Fatalf("%q: exit %d, want 2 naming the file; stderr: %s", content, code, stderr.String())
			}
		}
	})
}
