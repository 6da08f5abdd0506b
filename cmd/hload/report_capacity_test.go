package main

import (
	"math"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hload/hload/demo"
	"github.com/hload/hload/metrics"
	"github.com/hload/hload/sinks/html/browsertest"
)

// capacityReportTest is a short open capacity search against the demo's
// GET /capacity (at most 200 requests/s): four steps of 1 s, the last
// well past the limit.
const capacityReportTest = `
variable "base_url" {}
target "demo" {
  base_url = var.base_url
}
scenario "search" {
  executor       = "capacity-search"
  steps          = [50, 100, 150, 300]
  step_duration  = "1s"
  max_error_rate = 0.05
  graceful_stop  = "5s"
  request "capacity" {
    path = "/capacity"
  }
}
sink "html" {
  path = %q
}
`

// TestCapacityReportInBrowser: a real capacity search against the demo's
// capacity endpoint writes a report (sink "html", and `hload report` from
// the export) whose capacity chart is drawn, with the saturation point
// marked, and whose step table shows the summary JSON's steps. The
// endpoint's own counts check hload's.
func TestCapacityReportInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("a 4 s run and a browser: not in -short")
	}
	browsertest.RequireChromium(t)
	pool := demo.NewCapacity(demo.CapacityOptions{Workers: 4, ServiceTime: 20 * time.Millisecond, Queue: 64})
	srv := httptest.NewServer(pool)
	t.Cleanup(srv.Close)

	dir := t.TempDir()
	sinkReport := filepath.Join(dir, "report.html")
	writeFile(t, dir, "test.hcl", strings.Replace(capacityReportTest, "%q", strconv.Quote(sinkReport), 1))
	r := hload(t, dir, "apply", "--quiet", "--summary-export", "result.json", "--var", "base_url="+srv.URL, "test.hcl")
	if r.code != 0 {
		t.Fatalf("apply exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	sum := exportedSummary(t, filepath.Join(dir, "result.json"))
	sc := sum.Scenarios["search"]
	c := sc.Capacity
	if c == nil || len(c.Steps) < 2 {
		t.Fatalf("the export has no capacity search of two steps or more: %+v", c)
	}
	req := sc.Requests["capacity"]
	if req.Count-req.Errors != pool.Served() || req.Errors != pool.Rejected() {
		t.Fatalf("hload counted %d calls, %d failed; the endpoint served %d and rejected %d", req.Count, req.Errors, pool.Served(), pool.Rejected())
	}
	for i, s := range c.Steps {
		t.Logf("step %d: load %g, %.1f ok/s, p95 %.1f ms", i+1, s.Load, s.OKRPS, s.P95)
	}
	t.Logf("saturation: step %d, %s: %s", c.Saturation.Step, c.Saturation.Reason, c.Saturation.Detail)
	if r := hload(t, dir, "report", "result.json", "-o", "rendered.html"); r.code != 0 {
		t.Fatalf("report exit %d: %s", r.code, r.stderr)
	}

	browser := browsertest.NewBrowser(t)
	for name, path := range map[string]string{"sink": sinkReport, "command": filepath.Join(dir, "rendered.html")} {
		t.Run(name, func(t *testing.T) {
			page := browsertest.Open(t, browser, path)
			checkCapacityPanel(t, page, "search", c)
			browsertest.SaveArtifact(t, "report-capacity-"+name+".png", page.Screenshot)
		})
	}
}

// checkCapacityPanel wants the scenario's capacity chart drawn, with the
// saturation point's mark when a step held, and its step table equal to
// the summary's steps at the shown precision.
func checkCapacityPanel(t *testing.T, page *browsertest.Page, scenario string, c *metrics.CapacitySummary) {
	t.Helper()
	found := false
	for _, ch := range page.Charts {
		if !strings.HasPrefix(ch.Title, "capacity search") {
			continue
		}
		found = true
		t.Logf("chart %q: %d coloured pixels, %d of the saturation mark", ch.Title, ch.Coloured, ch.SaturationMark)
		if ch.Coloured < 40 {
			t.Errorf("chart %q is blank: %d coloured pixels", ch.Title, ch.Coloured)
		}
		if c.Saturation.Step > 0 && ch.SaturationMark < ch.Height/4 {
			t.Errorf("chart %q has %d pixels of the saturation mark, want a line across it", ch.Title, ch.SaturationMark)
		}
	}
	if !found {
		t.Fatalf("no capacity chart among %d charts", len(page.Charts))
	}
	var rows []browsertest.TableRow
	for _, row := range page.Tables["capacity"] {
		if row.Scenario == scenario {
			rows = append(rows, row)
		}
	}
	if len(rows) != len(c.Steps) {
		t.Fatalf("the step table has %d rows, the summary %d steps", len(rows), len(c.Steps))
	}
	for i, row := range rows {
		s := c.Steps[i]
		if row.Key != strconv.Itoa(i+1) {
			t.Errorf("row %d is step %q", i+1, row.Key)
		}
		want := map[string][2]float64{ // value, tolerance
			"load": {s.Load, 0}, "duration_s": {s.DurationS, 0.0005}, "count": {float64(s.Count), 0},
			"rps": {s.RPS, 0.05}, "ok_rps": {s.OKRPS, 0.05}, "error_rate": {100 * s.ErrorRate, 0.005},
			"p50": {s.P50, 0.0005}, "p95": {s.P95, 0.0005}, "p99": {s.P99, 0.0005},
		}
		for field, w := range want {
			got, err := strconv.ParseFloat(row.Cells[field], 64)
			if err != nil || math.Abs(got-w[0]) > w[1]+1e-9 {
				t.Errorf("step %d %s: the table shows %q, the JSON has %v", i+1, field, row.Cells[field], w[0])
			}
		}
		if sat := i+1 == c.Saturation.Step; sat != strings.Contains(row.Cells["note"], "saturation point") {
			t.Errorf("step %d's note %q; the saturation point is step %d", i+1, row.Cells["note"], c.Saturation.Step)
		}
	}
	if last := rows[len(rows)-1].Cells["note"]; !strings.Contains(last, c.Saturation.Reason) {
		t.Errorf("the last step's note %q does not say why the search stopped (%s)", last, c.Saturation.Reason)
	}
}
