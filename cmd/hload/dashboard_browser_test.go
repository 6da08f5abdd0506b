package main

import (
	"errors"
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hload/hload/demo"
	"github.com/hload/hload/sinks/html/browsertest"
)

var update = flag.Bool("update", false, "rewrite docs/dashboard.png from TestDashboardInBrowser")

// dashboardTest is a 7 s run against the demo shop with a threshold that
// breaks from the first interval: no page answers in a microsecond.
const dashboardTest = `
variable "base_url" {}
target "shop" {
  base_url = var.base_url
}
scenario "shop" {
  executor = "ramping-vus"
  stages = [
    { duration = "2s", target = 3 },
    { duration = "5s", target = 3 },
  ]
  think_time = "50ms"
  request "main" {
    path = "/"
  }
  request "list" {
    path  = "/products"
    query = { page = "${random_int(1, 50)}" }
  }
}
threshold {
  metric    = "latency"
  condition = "p95 < 0.001ms"
}
`

// dashboardDuration is dashboardTest's planned length.
const dashboardDuration = 7 * time.Second

// TestDashboardInBrowser (issue 25, must show 1): Chromium watches a live
// run's dashboard. From one interval to the next the page's charts get a
// point more and their pixels change; the threshold panel shows the
// breaking threshold FAILED while the run goes on (its summary export is
// not written yet); at the end the page's requests table equals the
// summary export's counts, which equal the demo shop's own count of the
// requests it received, and the page offers the HTML report. The page,
// opened with the dashboard's token, passes it on to every address it
// reads, and asks for nothing outside the dashboard. With -update it rewrites
// docs/dashboard.png, a screenshot of the page at the end.
func TestDashboardInBrowser(t *testing.T) {
	browsertest.RequireChromium(t)
	// The browser first: its start must not eat into the run.
	browser := browsertest.NewBrowser(t)
	shop := demo.NewHandler(demo.Options{Seed: 1})
	srv := newPathCounter(t, shop.ServeHTTP)

	dir := t.TempDir()
	export := filepath.Join(dir, "summary.json")
	file := writeFile(t, dir, "test.hcl", dashboardTest)
	// A token, which the page must pass on to every address it reads.
	const token = "s3cr3t"
	began := time.Now()
	// No --dashboard-linger: the dashboard ends with the run, and the page
	// has the summary and the report from the stream's last event.
	address, exit, stderr := startDashboardRun(t, "--dashboard-token", token,
		"--summary-export", export, "--var", "base_url="+srv.URL, file)
	var code int // apply's exit code, once done is closed
	done := make(chan struct{})
	go func() { code = <-exit; close(done) }()
	// No goroutine outlives the test, even one that fails early.
	t.Cleanup(func() {
		select {
		case <-done:
		case <-time.After(time.Minute):
			t.Errorf("apply did not end within a minute")
		}
	})
	tab := browsertest.OpenURL(t, browser, address+"?token="+token, 1200, 900)

	// (b) The threshold breaks in the first interval: the panel says so
	// while the run goes on.
	tab.Wait(`document.querySelector('table[data-table="thresholds"] td[data-field="state"].fail')`, 10*time.Second)
	page := tab.Read()
	elapsed := browsertest.Eval[float64](tab, `Number(document.body.dataset.elapsed)`)
	if _, err := os.Stat(export); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the threshold panel showed FAILED only once the summary export was written (%v)", err)
	}
	select {
	case <-done:
		t.Fatalf("the threshold panel showed FAILED only after apply returned (exit %d)", code)
	default:
	}
	if elapsed >= dashboardDuration.Seconds() {
		t.Fatalf("the threshold panel showed FAILED at %.1f s, at the run's end", elapsed)
	}
	rows := page.Tables["thresholds"]
	if len(rows) != 1 || rows[0].Cells["metric"] != "latency" || rows[0].Cells["condition"] != "p95 < 0.001ms" || rows[0].Cells["state"] != "FAILED" {
		t.Fatalf("the threshold panel at %.1f s: %+v, want latency p95 < 0.001ms FAILED", elapsed, rows)
	}
	t.Logf("the threshold panel showed latency p95 < 0.001ms FAILED at %.1f s of %v, value %s ms", elapsed, dashboardDuration, rows[0].Cells["value"])

	// (a) From one interval to the next, every chart gets a point and
	// draws something new.
	first := browsertest.Eval[int](tab, `Number(document.body.dataset.event)`)
	tab.Wait(`Number(document.body.dataset.event) > `+strconv.Itoa(first), 5*time.Second)
	before := tab.Read()
	second := browsertest.Eval[int](tab, `Number(document.body.dataset.event)`)
	tab.Wait(`Number(document.body.dataset.event) > `+strconv.Itoa(second), 5*time.Second)
	after := tab.Read()
	if len(before.Charts) < 4 || len(after.Charts) != len(before.Charts) {
		t.Fatalf("%d charts at interval %d, %d at the next: want the same four or more (requests, latency, VUs, CPU...)",
			len(before.Charts), second, len(after.Charts))
	}
	for i, b := range before.Charts {
		a := after.Charts[i]
		if a.Title != b.Title || a.Points <= b.Points || a.Pixels == b.Pixels {
			t.Errorf("chart %q: %d points (pixels %s) at interval %d, then %q: %d points (pixels %s): want more points, drawn",
				b.Title, b.Points, b.Pixels, second, a.Title, a.Points, a.Pixels)
		}
		if a.Coloured < 40 {
			t.Errorf("chart %q is blank: %d coloured pixels", a.Title, a.Coloured)
		}
	}
	t.Logf("%d charts; from interval %d to the next: requests/s chart %d -> %d points", len(after.Charts), second,
		before.Charts[0].Points, after.Charts[0].Points)

	// (c) At the end: the summary, its counts, the server's.
	tab.Wait(`document.body.dataset.state === "summary"`, dashboardDuration+20*time.Second)
	end := tab.Read()
	shot := tab.Screenshot()
	sum := exportedSummary(t, export)
	sc := sum.Scenarios["shop"]
	if sc == nil || len(sc.Requests) != 2 {
		t.Fatalf("the export's scenario shop: %+v", sc)
	}
	server := map[string]int64{"main": srv.count("/"), "list": srv.count("/products")}
	var shown []string
	for _, row := range end.Rows {
		shown = append(shown, row.Request)
		want := sc.Requests[row.Request]
		if row.Scenario != "shop" || want == nil {
			t.Errorf("the page's table has a row %s/%s the summary lacks", row.Scenario, row.Request)
			continue
		}
		if got := row.Cells["count"]; got != strconv.FormatInt(want.Count, 10) || want.Count != server[row.Request] || want.Count == 0 {
			t.Errorf("request %s: the page shows %s, the summary export %d, the server received %d", row.Request, got, want.Count, server[row.Request])
		}
	}
	if !slices.Equal(shown, []string{"list", "main"}) {
		t.Errorf("the page's requests table has rows %q, want list and main", shown)
	}
	if !t.Failed() {
		t.Logf("the page, the export and the server agree: main %d, list %d requests", server["main"], server["list"])
	}
	if v := browsertest.Eval[string](tab, `document.getElementById("verdict").textContent`); v != "FAILED" || sum.Passed {
		t.Errorf("the page's verdict is %q, the summary's passed is %v", v, sum.Passed)
	}
	if rows := end.Tables["thresholds"]; len(rows) != 1 || rows[0].Cells["state"] != "FAILED" {
		t.Errorf("the threshold panel at the end: %+v", rows)
	}
	// The link offers the HTML report of the run, though the dashboard has
	// gone: the page made it from the stream's last event.
	report := browsertest.Eval[string](tab, `fetch(document.getElementById("report-link").href).then(r => r.text())`)
	if !strings.Contains(report, "<title>hload report") || !strings.Contains(report, sum.RunID) {
		t.Errorf("the report link %q gives %d bytes, not the run's report", browsertest.Eval[string](tab, `document.getElementById("report-link").href`), len(report))
	}
	for _, u := range tab.Foreign() {
		t.Errorf("the page asked for %s, outside the dashboard", u)
	}

	select {
	case <-done:
		if code != exitThreshold {
			t.Errorf("apply exit %d, want %d\nstderr:\n%s", code, exitThreshold, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("apply did not end after the page showed the summary")
	}
	t.Logf("the run took %v", time.Since(began).Round(100*time.Millisecond))
	browsertest.SaveArtifact(t, "dashboard.png", shot)
	if *update {
		if err := os.WriteFile(filepath.Join("..", "..", "docs", "dashboard.png"), shot, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
