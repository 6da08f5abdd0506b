package html

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hload/hload/sinks/html/browsertest"
)

// liveEvent is the data of one /events event of a scenario "s", with a
// point for each request given (name: requests/s).
func liveEvent(t *testing.T, id int, final bool, warnings []string, rps map[string]float64) string {
	t.Helper()
	var reqs []map[string]any
	counts := map[string]any{}
	for _, name := range slices.Sorted(maps.Keys(rps)) {
		v := rps[name]
		reqs = append(reqs, map[string]any{"name": name, "rps": []float64{v}, "errors_per_s": []float64{0},
			"latency_p50_ms": []float64{1}, "latency_p95_ms": []float64{2}, "latency_p99_ms": []float64{3}})
		counts[name] = map[string]any{"count": id + 1, "rps": v, "error_rate": 0, "latency_ms": map[string]float64{"p50": 1, "p95": 2, "p99": 3}}
	}
	ev := map[string]any{"id": id, "final": final, "elapsed_s": float64(id + 1), "warnings": warnings,
		"interval": map[string]any{"time_s": []float64{float64(id + 1)}, "generator_cpu": []float64{0.25},
			"scenarios": []any{map[string]any{"name": "s", "model": "closed", "stages_s": []float64{2, 4},
				"planned": []float64{1}, "vus": []float64{1}, "iterations_per_s": []float64{1}, "dropped_per_s": []float64{0},
				"requests": reqs}}},
		"run_id": "r", "passed": false, "scenarios": map[string]any{"s": map[string]any{"requests": counts}},
		"thresholds": []any{map[string]any{"metric": "latency", "condition": "p95 < 1ms", "value": 2, "passed": false}}}
	data, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("id: %d\ndata: %s\n\n", id, data)
}

// TestLivePageResumes: the live page, served by a stand-in for the
// dashboard, keeps its series right when the stream drops after two
// events and the server, on the reconnection, repeats the last one: it
// resumes with Last-Event-ID, ignores the repeat, gives a request first
// seen late nulls before and one gone missing a null. At the final event
// it waits out the summary's 503s, then shows the summary's tables.
func TestLivePageResumes(t *testing.T) {
	browsertest.RequireChromium(t)
	var page bytes.Buffer
	if err := RenderLive(&page); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var lastIDs []string
	summaryAsked := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/":
			w.Write(page.Bytes())
		case "/events":
			mu.Lock()
			lastIDs = append(lastIDs, r.Header.Get("Last-Event-ID"))
			n := len(lastIDs)
			mu.Unlock()
			w.Header().Set("Content-Type", "text/event-stream")
			if n == 1 {
				// A quick reconnection, then the connection drops.
				fmt.Fprint(w, "retry: 100\n\n")
				fmt.Fprint(w, liveEvent(t, 0, false, nil, map[string]float64{"a": 10}))
				fmt.Fprint(w, liveEvent(t, 1, false, nil, map[string]float64{"a": 11}))
				return
			}
			fmt.Fprint(w, liveEvent(t, 1, false, nil, map[string]float64{"a": 11}))
			fmt.Fprint(w, liveEvent(t, 2, false, []string{"a data feeder ran out"}, map[string]float64{"a": 12, "late": 5}))
			fmt.Fprint(w, liveEvent(t, 3, true, nil, map[string]float64{"late": 6}))
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		case "/summary.json":
			mu.Lock()
			summaryAsked++
			n := summaryAsked
			mu.Unlock()
			if n <= 2 {
				http.Error(w, "not yet", http.StatusServiceUnavailable)
				return
			}
			fmt.Fprint(w, `{"passed": false, "duration_s": 4, "scenarios": {"s": {"requests": {"a": {"count": 1234, "rps": 9, "error_rate": 0}, "late": {"count": 56, "rps": 1, "error_rate": 0.5}}}},
				"thresholds": [{"metric": "latency", "condition": "p95 < 1ms", "value": 2.5, "passed": false}]}`)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)

	tab := browsertest.OpenURL(t, browsertest.NewBrowser(t), srv.URL+"/", 1200, 900)
	tab.Wait(`document.body.dataset.state === "summary"`, 20*time.Second)
	mu.Lock()
	ids, asked := slices.Clone(lastIDs), summaryAsked
	mu.Unlock()
	if !slices.Equal(ids, []string{"", "1"}) {
		t.Errorf("the page's connections to /events came with Last-Event-ID %q, want none then 1", ids)
	}
	if asked != 3 {
		t.Errorf("the page asked for the summary %d times, want 3 (two 503s)", asked)
	}
	var kept struct {
		TimeS     []float64 `json:"time_s"`
		Scenarios []struct {
			Requests []struct {
				Name string     `json:"name"`
				RPS  []*float64 `json:"rps"`
			} `json:"requests"`
		} `json:"scenarios"`
	}
	if err := json.Unmarshal([]byte(browsertest.Eval[string](tab, `JSON.stringify(window.hloadLiveSeries)`)), &kept); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, r := range kept.Scenarios[0].Requests {
		var vs []string
		for _, v := range r.RPS {
			if v == nil {
				vs = append(vs, "null")
			} else {
				vs = append(vs, fmt.Sprint(*v))
			}
		}
		got[r.Name] = strings.Join(vs, ",")
	}
	if want := map[string]string{"a": "10,11,12,null", "late": "null,null,5,6"}; !maps.Equal(got, want) || len(kept.TimeS) != 4 {
		t.Errorf("the page kept %d points, requests/s %v; want 4 points, %v", len(kept.TimeS), got, want)
	}
	p := tab.Read()
	for _, c := range p.Charts {
		if c.Points != 4 {
			t.Errorf("chart %q has %d points, want 4", c.Title, c.Points)
		}
	}
	counts := map[string]string{}
	for _, r := range p.Rows {
		counts[r.Request] = r.Cells["count"] + " " + r.Cells["error_rate"]
	}
	if want := map[string]string{"a": "1234 0.00", "late": "56 50.00"}; !maps.Equal(counts, want) {
		t.Errorf("the requests table shows %v, want the summary's %v", counts, want)
	}
	if th := p.Tables["thresholds"]; len(th) != 1 || th[0].Cells["value"] != "2.5" || th[0].Cells["state"] != "FAILED" {
		t.Errorf("the threshold panel shows %+v, want the summary's value 2.5, FAILED", th)
	}
	if w := browsertest.Eval[string](tab, `document.getElementById("warnings").textContent`); w != "3.0 s: a data feeder ran out" {
		t.Errorf("the warnings show %q", w)
	}
	if u := tab.Foreign(); len(u) > 0 {
		t.Errorf("the page asked for %q outside its server", u)
	}
}
