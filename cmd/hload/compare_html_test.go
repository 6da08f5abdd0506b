package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hload/hload/compare"
	"github.com/hload/hload/demo"
	"github.com/hload/hload/metrics"
	"github.com/hload/hload/sinks/html/browsertest"
)

// compareHTMLTest is a short run of two scenarios against the demo: a
// capacity search of the demo's GET /capacity (at most 200 requests/s)
// whose steps are STEPS, and 2 VUs looping on the shop's pages for 3 s,
// the last of which is named EXTRA (so that each run has a request the
// other has not).
const compareHTMLTest = `
variable "base_url" {}
target "demo" {
  base_url = var.base_url
}
scenario "search" {
  executor       = "capacity-search"
  steps          = STEPS
  step_duration  = "1s"
  max_error_rate = 0.05
  graceful_stop  = "5s"
  request "capacity" {
    path = "/capacity"
  }
}
scenario "shop" {
  executor   = "constant-vus"
  vus        = 2
  duration   = "3s"
  think_time = "20ms"
  request "main" {
    path = "/"
  }
  request "EXTRA" {
    path = "/products"
  }
}
`

// TestCompareHTMLInBrowser (issue 15, compare --html): two short real runs
// against the demo, each a capacity search and a closed scenario, one with
// a request the other lacks, are compared with --html. The page opens in
// headless Chromium from file:// with the network off: every chart drew
// its lines (each scenario's requests/s and p95 with both runs overlaid,
// and both capacity curves with their saturation points), the tables show
// what the compare package computed from the two exports, and a
// screenshot is kept. --fail-if still decides the exit code. The two
// exports come from real runs rather than checked-in files, so the page is
// tested on what hload writes today; the server's own counts check
// hload's.
func TestCompareHTMLInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("two 4 s runs and a browser: not in -short")
	}
	browsertest.RequireChromium(t)
	pool := demo.NewCapacity(demo.CapacityOptions{Workers: 4, ServiceTime: 20 * time.Millisecond, Queue: 64})
	shop := demo.NewHandler(demo.Options{Seed: 1})
	var served atomic.Int64 // the shop's calls; the pool counts its own
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/capacity" {
			pool.ServeHTTP(w, r)
			return
		}
		served.Add(1)
		shop.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	apply := func(export, steps, extra string) {
		before, poolBefore := served.Load(), pool.Served()+pool.Rejected()
		writeFile(t, dir, export+".hcl", strings.NewReplacer("STEPS", steps, "EXTRA", extra).Replace(compareHTMLTest))
		r := hload(t, dir, "apply", "--quiet", export+".hcl", "--var", "base_url="+srv.URL, "--summary-export", export)
		if r.code != 0 {
			t.Fatalf("apply %s: exit %d\nstdout:\n%s\nstderr:\n%s", export, r.code, r.stdout, r.stderr)
		}
		sum := exportedSummary(t, filepath.Join(dir, export))
		shopCalls := sum.Scenarios["shop"].Requests["main"].Count + sum.Scenarios["shop"].Requests[extra].Count
		if got := served.Load() - before; got != shopCalls || shopCalls == 0 {
			t.Fatalf("%s: the shop served %d calls, hload counted %d", export, got, shopCalls)
		}
		if got := pool.Served() + pool.Rejected() - poolBefore; got != sum.Scenarios["search"].Requests["capacity"].Count {
			t.Fatalf("%s: the capacity endpoint answered %d calls, hload counted %d", export, got, sum.Scenarios["search"].Requests["capacity"].Count)
		}
	}
	apply("base.json", "[50, 100, 150, 300]", "list")
	apply("new.json", "[60, 120, 180, 360]", "detail")

	// A rule that breaks: --html writes the page and the exit is still 99.
	r := hload(t, dir, "compare", "base.json", "new.json", "--html", "compare.html", "--fail-if", "latency max > 0ms")
	if r.code != exitThreshold {
		t.Fatalf("compare --html with a broken rule: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, exitThreshold, r.stdout, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "compare.html")); err != nil || !strings.Contains(r.stderr, "compare.html: comparison page written") {
		t.Fatalf("compare --html with a broken rule wrote no page (%v); stderr:\n%s", err, r.stderr)
	}
	t.Logf("compare base.json new.json:\n%s", r.stdout)
	// A rule that holds: exit 0, and the page again.
	if r := hload(t, dir, "compare", "--html", "held.html", "base.json", "new.json", "--fail-if", "errors rate > 100%"); r.code != exitOK {
		t.Fatalf("compare --html with a rule that holds: exit %d\n%s", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "held.html")); err != nil {
		t.Fatalf("the page of a passing compare: %v", err)
	}

	var runs [2]compare.Run
	for i, name := range []string{"base.json", "new.json"} {
		var err error
		if runs[i], err = compare.Load(filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	c := compare.Compare(runs[0], runs[1])
	page := browsertest.Open(t, browsertest.NewBrowser(t), filepath.Join(dir, "compare.html"))
	browsertest.SaveArtifact(t, "compare.png", page.Screenshot)
	checkCompareCharts(t, page, runs)
	checkCompareTables(t, page, c)
	// The rules' verdicts, as the exit code had them.
	if rules := page.Tables["rules"]; len(rules) != 1 || rules[0].Key != "latency max > 0ms" || rules[0].Cells["verdict"] != "FAIL" {
		t.Errorf("the page's rules: %+v, want latency max > 0ms FAIL", rules)
	}
}

// checkCompareCharts wants, per scenario with series in either run, a
// chart of requests/s and one of p95, and a capacity chart with both
// saturation points for the search; each drew its lines.
func checkCompareCharts(t *testing.T, page *browsertest.Page, runs [2]compare.Run) {
	t.Helper()
	scenarios := map[string]bool{}
	for _, run := range runs {
		for _, sc := range run.Summary.Series.Scenarios {
			scenarios[sc.Name] = true
		}
	}
	if want := 2*len(scenarios) + 1; len(page.Charts) != want || len(scenarios) != 2 {
		t.Errorf("%d charts, want %d (two per scenario of %v and a capacity chart)", len(page.Charts), want, scenarios)
	}
	capacity := false
	for _, ch := range page.Charts {
		t.Logf("chart %q: %dx%d, %d coloured pixels, %d of the saturation marks in %d columns", ch.Title, ch.Width, ch.Height, ch.Coloured, ch.SaturationMark, ch.SaturationColumns)
		if ch.Coloured < 40 {
			t.Errorf("chart %q is blank: %d coloured pixels", ch.Title, ch.Coloured)
		}
		if strings.HasPrefix(ch.Title, "capacity search") {
			capacity = true
			// Two marks at the two runs' saturation loads, 2 pixels wide
			// each, and the base's dashed: 4 columns, and more than half
			// of the plot's height.
			if ch.SaturationColumns < 4 || ch.SaturationMark < ch.Height/4 {
				t.Errorf("chart %q has %d pixels in %d columns of the saturation marks, want both runs' lines", ch.Title, ch.SaturationMark, ch.SaturationColumns)
			}
		}
	}
	if !capacity {
		t.Errorf("no capacity chart")
	}
}

// checkCompareTables wants the page's tables to show what the compare
// package computed: each request's figures in both runs with the change
// and the verdict, "-" for the run that lacks a request, and the capacity
// searches' saturation points.
func checkCompareTables(t *testing.T, page *browsertest.Page, c *compare.Comparison) {
	t.Helper()
	rows := map[string]map[string]string{}
	for _, row := range page.Tables["compare"] {
		rows[row.Scenario+"/"+row.Key] = row.Cells
	}
	if want := len(c.Requests) * len(compare.Figures); len(rows) != want || len(c.Requests) != 4 {
		t.Errorf("the table has %d rows, want %d: %d figures of %d requests (search/capacity, shop/main, shop/list in the base run only, shop/detail in the new run only)",
			len(rows), want, len(compare.Figures), len(c.Requests))
	}
	one := 0
	for _, r := range c.Requests {
		for _, f := range compare.Figures {
			var want [4]string
			switch {
			case r.Changes != nil:
				ch := r.Changes[f]
				verdict := map[compare.Verdict]string{compare.Better: "better", compare.Worse: "worse"}[ch.Verdict]
				want = [4]string{compare.Format(f, ch.Base), compare.Format(f, ch.New), compare.FormatPercent(ch.Percent), verdict}
			case r.Base != nil:
				want = [4]string{compare.Format(f, f.Of(r.Base)), "-", "", ""}
			default:
				want = [4]string{"-", compare.Format(f, f.Of(r.New)), "", ""}
			}
			if r.Changes == nil {
				one++
			}
			cells := rows[r.Name()+"/"+f.String()]
			if got := [4]string{cells["base"], cells["new"], cells["change"], cells["verdict"]}; got != want {
				t.Errorf("%s %s: the page shows %q, compare computed %q", r.Name(), f, got, want)
			}
		}
	}
	if one != 2*len(compare.Figures) {
		t.Errorf("%d rows of a request in one run only, want those of shop/list and shop/detail", one)
	}
	caps := c.Capacities()
	if len(caps) != 1 {
		t.Fatalf("compare found %d capacity searches in both runs, want 1", len(caps))
	}
	var capRows []browsertest.TableRow
	capRows = append(capRows, page.Tables["capacity"]...)
	if len(capRows) != len(caps[0].Changes) {
		t.Fatalf("the capacity table has %d rows, want %d", len(capRows), len(caps[0].Changes))
	}
	for i, ch := range caps[0].Changes {
		unit := caps[0].Base.Unit
		verdict := map[compare.Verdict]string{compare.Better: "better", compare.Worse: "worse"}[ch.Verdict]
		want := [4]string{ch.Figure.Format(ch.Base, unit), ch.Figure.Format(ch.New, unit), compare.FormatPercent(ch.Percent), verdict}
		cells := capRows[i].Cells
		if got := [4]string{cells["base"], cells["new"], cells["change"], cells["verdict"]}; got != want || capRows[i].Key != ch.Figure.String() {
			t.Errorf("capacity %s: the page shows %s %q, compare computed %q", ch.Figure, capRows[i].Key, got, want)
		}
	}
}

// TestCompareHTMLUnwritable: a page that cannot be written (its folder
// does not exist) is an error naming --html, exit 1, after the text.
func TestCompareHTMLUnwritable(t *testing.T) {
	dir := t.TempDir()
	sum := &metrics.Summary{HloadVersion: "0.1.0-dev", RunID: "r1", Started: time.Now(), Passed: true, DurationS: 1,
		Scenarios: map[string]*metrics.ScenarioSummary{"shop": {Requests: map[string]*metrics.RequestFigures{"main": {Count: 10, RPS: 10}}}}}
	data, err := json.Marshal(sum)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "a.json", string(data))
	r := hload(t, dir, "compare", "a.json", "a.json", "--html", filepath.Join("missing", "out.html"))
	if r.code != exitRuntime || !strings.Contains(r.stderr, "--html: open missing/out.html") || !strings.Contains(r.stdout, `scenario "shop", request "main"`) {
		t.Fatalf("exit %d, want %d naming --html after the text\nstdout:\n%s\nstderr:\n%s", r.code, exitRuntime, r.stdout, r.stderr)
	}
}
