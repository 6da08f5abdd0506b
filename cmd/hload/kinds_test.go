package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// kindsTest runs two scenarios: calls to a page that answers in 20 ms,
// whose path fails to evaluate for 4 of its 10 rows (sent nothing), and
// subscriptions that each take 5 events.
const kindsTest = `
variable "base_url" {}
data "csv" "rows" {
  path = "rows.csv"
  mode = "sequential"
}
target "web" {
  base_url = var.base_url
}
target "events" {
  protocol = "sse"
  base_url = var.base_url
}
scenario "calls" {
  executor   = "iterations"
  vus        = 1
  iterations = 10
  request "page" {
    target = "web"
    path   = "/slow/${tostring(jsondecode(data.rows.payload))}"
  }
}
scenario "streams" {
  executor   = "iterations"
  vus        = 2
  iterations = 3
  request "subscribe" {
    target = "events"
    path   = "/events"
    events = 5
  }
}
`

// TestNothingSentAndCounts checks against the server's own counts: the
// calls that sent nothing (eval) count in the count and the errors but
// not in the latency, so no latency is below the page's 20 ms; and
// sse_events, a count, shows the server's number of events with its
// rate and without time figures, on screen, in the summary JSON and in
// the report.
func TestNothingSentAndCounts(t *testing.T) {
	const pageTime = 20 * time.Millisecond
	var pages, events atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/events" {
			pages.Add(1)
			time.Sleep(pageTime)
			w.Write([]byte("ok"))
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for i := range 5 {
			fmt.Fprintf(w, "id: %d\ndata: event %d\n\n", i, i)
			w.(http.Flusher).Flush()
			events.Add(1)
		}
		<-r.Context().Done() // the subscriber leaves after its 5 events
	}))
	defer srv.Close()
	dir := t.TempDir()
	writeFile(t, dir, "rows.csv", "payload\n1\n2\nx\n4\ny\n")
	writeFile(t, dir, "test.hcl", kindsTest)
	r := hload(t, dir, "apply", "--quiet", "--no-color", "--summary-export", "out.json", "--var", "base_url="+srv.URL, "test.hcl")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	t.Logf("the server served %d pages and sent %d events; hload printed:\n%s", pages.Load(), events.Load(), r.stdout)
	if pages.Load() != 6 || events.Load() != 30 {
		t.Fatalf("the server served %d pages and sent %d events, want 6 and 30", pages.Load(), events.Load())
	}

	data, err := os.ReadFile(filepath.Join(dir, "out.json"))
	if err != nil {
		t.Fatal(err)
	}
	var sum struct {
		DurationS float64 `json:"duration_s"`
		Scenarios map[string]struct {
			Requests map[string]struct {
				Count        int64                         `json:"count"`
				Errors       int64                         `json:"errors"`
				ErrorsByKind map[string]int64              `json:"errors_by_kind"`
				Latency      map[string]float64            `json:"latency_ms"`
				Metrics      map[string]map[string]float64 `json:"metrics"`
			} `json:"requests"`
		} `json:"scenarios"`
		Metrics map[string]map[string]float64 `json:"metrics"`
	}
	if err := json.Unmarshal(data, &sum); err != nil {
		t.Fatal(err)
	}
	metricsJSON, _ := json.Marshal(sum.Metrics)
	t.Logf("summary JSON metrics: %s; page latency_ms: %v", metricsJSON, sum.Scenarios["calls"].Requests["page"].Latency)
	page := sum.Scenarios["calls"].Requests["page"]
	if page.Count != 10 || page.Errors != 4 || page.ErrorsByKind["eval"] != 4 {
		t.Errorf("page: count %d, errors %d %v; want 10 calls, the 4 eval errors among them", page.Count, page.Errors, page.ErrorsByKind)
	}
	if min := page.Latency["min"]; min < float64(pageTime/time.Millisecond) {
		t.Errorf("page latency min %v ms: a call that sent nothing counts in it; every sent call took 20 ms or more", min)
	}
	wantRate := 30 / sum.DurationS
	for where, m := range map[string]map[string]float64{
		"metrics":                    sum.Metrics["sse_events"],
		"requests.subscribe.metrics": sum.Scenarios["streams"].Requests["subscribe"].Metrics["sse_events"],
	} {
		if len(m) != 2 || m["count"] != float64(events.Load()) || !approx(m["rate"], wantRate) {
			t.Errorf("%s.sse_events = %v, want count %d and rate %.3f only", where, m, events.Load(), wantRate)
		}
	}

	row := regexp.MustCompile(`(?m)^ +sse_events +(.*)$`).FindStringSubmatch(r.stdout)
	if row == nil || len(strings.Fields(row[1])) != 2 || strings.Fields(row[1])[0] != "30" {
		t.Errorf("console row of sse_events %q, want its count, 30, and its rate only", row)
	}
	minCell := regexp.MustCompile(`(?m)^ +page +10 +\S+ +\S+ +\S+ +\S+ +(\S+) `).FindStringSubmatch(r.stdout)
	if minCell == nil {
		t.Errorf("no row of page in the console")
	} else if min, err := strconv.ParseFloat(minCell[1], 64); err != nil || min < float64(pageTime/time.Millisecond) {
		t.Errorf("console min of page %q, want 20 ms or more", minCell[1])
	}

	// hload merge rebuilds the figures from the export's histograms: the
	// count stays a count.
	if rr := hload(t, dir, "merge", "--no-color", "--summary-export", "merged.json", "out.json"); rr.code != 0 {
		t.Fatalf("merge: exit %d\n%s%s", rr.code, rr.stdout, rr.stderr)
	}
	merged, err := os.ReadFile(filepath.Join(dir, "merged.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Metrics map[string]map[string]float64 `json:"metrics"`
	}
	if err := json.Unmarshal(merged, &m); err != nil {
		t.Fatal(err)
	}
	if got := m.Metrics["sse_events"]; len(got) != 2 || got["count"] != 30 {
		t.Errorf("merged sse_events = %v, want count 30 and rate only", got)
	}

	if rr := hload(t, dir, "report", "out.json", "-o", "report.html"); rr.code != 0 {
		t.Fatalf("report: exit %d\n%s", rr.code, rr.stderr)
	}
	html, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`<tr data-metric="sse_events"><td>sse_events</td><td data-field="count">30</td><td colspan="4">\(a count\)</td></tr>`).Match(html) {
		t.Errorf("the report's row of sse_events does not show a count of 30 without percentiles")
	}
}

// approx reports whether two rates agree to 0.1 %.
func approx(got, want float64) bool {
	return got > want*0.999 && got < want*1.001
}
