package main

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A real open-model summary (hload at 2,000/s for 1 s against this
// harness's server): hload's start lateness p99 is read from it, and the
// iterations it dropped.
func TestHloadOpenSummary(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "hload-summary-open.json"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := parseHloadSummary(data)
	if err != nil {
		t.Fatal(err)
	}
	if got.requests != 2000 || got.dropped != 0 || got.latenessP99 != 1.868 || got.saturated != "" {
		t.Errorf("figures %+v, want 2000 requests, 0 dropped, lateness p99 1.868 ms, not saturated", got)
	}
	// Dropped iterations, and the worst lateness of two requests.
	got, err = parseHloadSummary([]byte(`{"scenarios": {"s": {"dropped_iterations": 720, "requests": {
		"a": {"count": 100, "metrics": {"start_lateness": {"count": 100, "p99": 451.5}}},
		"b": {"count": 50, "metrics": {"start_lateness": {"count": 50, "p99": 738.25}}}}}}}`))
	if err != nil || got.dropped != 720 || got.latenessP99 != 738.25 || got.requests != 150 {
		t.Errorf("figures %+v, %v; want 720 dropped, lateness p99 738.25 ms, 150 requests", got, err)
	}
}

// hload's summary says when hload was the bottleneck of its run; the
// harness keeps the reason, so that the figures are read with it.
func TestHloadSaturated(t *testing.T) {
	for generator, want := range map[string]string{
		`"generator": {"saturated": true, "reason": "CPU 98% of 1 core for 4 of 5 intervals"},`: "CPU 98% of 1 core for 4 of 5 intervals",
		`"generator": {"saturated": true},`:                                                     "saturated",
		`"generator": {"saturated": false, "reason": "ignored"},`:                               "",
		``: "",
	} {
		data := []byte(`{` + generator + ` "scenarios": {"s": {"requests": {"r": {"count": 10}}}}}`)
		got, err := parseHloadSummary(data)
		if err != nil || got.saturated != want || got.requests != 10 {
			t.Errorf("%s: figures %+v, %v; want saturated %q", generator, got, err, want)
		}
	}
	runs := []result{
		{Case: "get", Tool: "hload", Round: 1, Saturated: "CPU 97%"},
		{Case: "get", Tool: "hload", Round: 2, Saturated: "CPU 99%"},
		{Case: "get", Tool: "hload", Round: 3},
	}
	meds := medians(runs)
	if meds[0].Saturated != "in 2 of 3 rounds: CPU 99%" {
		t.Errorf("medians: saturated %q", meds[0].Saturated)
	}
	var b strings.Builder
	printResults(&b, "medians", meds)
	if !strings.Contains(b.String(), "hload said it was the bottleneck (generator.saturated), in 2 of 3 rounds: CPU 99%") {
		t.Errorf("the table does not say hload was saturated:\n%s", b.String())
	}
}

// med is a median result of one tool in one case, as medians makes them.
func med(c, tool string, rps, cpuUS float64) result {
	r := result{Case: c, Tool: tool, Runs: 3, RPS: rps, CPUMicrosPerReq: cpuUS, ServerRequests: -1, ServerConnections: -1}
	if cpuUS > 0 {
		r.RequestsPerCPUSec = 1e6 / cpuUS
	}
	return r
}

// goal finds a goal by the start of its text.
func goal(t *testing.T, rs []ratio, what string) ratio {
	t.Helper()
	for _, r := range rs {
		if strings.HasPrefix(r.What, what) {
			return r
		}
	}
	t.Fatalf("no goal %q in %+v", what, rs)
	return ratio{}
}

// The Must show 2, 3, 4 and 5, from the medians of every case:
// ratios of CPU per request are at most their goal, figures of the open
// model are read from hload's, and the idle-VU figure is a slope.
func TestGoalsOfTheCases(t *testing.T) {
	late := 0.8
	open10k := med("open-10000", "hload-open-10000", 10000, 30)
	open10k.Planned, open10k.Requests, open10k.LatenessP99Ms, open10k.ServerConnections = 100000, 99750, &late, 120
	open20k := med("open-20000", "hload-open-20000", 18000, 88)
	open20k.Planned, open20k.Requests, open20k.Dropped, open20k.ServerConnections = 200000, 198560, 1440, 0
	idleLo := med("idle-vus", "hload-idle-2000", 0, 0)
	idleLo.PeakRSSMB = 100
	idleHi := med("idle-vus", "hload-idle-10000", 0, 0)
	idleHi.PeakRSSMB = 400
	meds := []result{
		med("get", "hload", 40000, 23),
		med("post", "hload-post", 20000, 29.9),
		med("post-dynamic", "hload-post-dynamic", 18000, 40),
		open10k, open20k, idleLo, idleHi,
		med("plugin", "hload-post-dynamic-isolated", 14400, 60),
	}
	rs := ratios(meds, true)

	want := []struct {
		what   string
		value  float64
		unit   string
		meets  bool
		atMost bool
	}{
		{"hload CPU per request, constant POST vs GET", 29.9 / 23, "x", true, true},
		{"hload CPU per request, dynamic POST vs constant POST", 40 / 29.9, "x", false, true},
		{"hload at 10000/s: sent off the plan", 0.25, "%", true, true},
		{"hload at 10000/s: dropped iterations, of the plan", 0, "%", true, true},
		{"hload at 10000/s: start lateness p99", 0.8, "ms", true, true},
		{"hload at 10000/s: connections the server accepted", 120, "", true, true},
		{"hload CPU per request, open at 10000/s vs closed GET", 30.0 / 23, "x", true, true},
		{"hload at 20000/s: sent off the plan", 0.72, "%", false, true},
		{"hload at 20000/s: dropped iterations, of the plan", 0.72, "%", false, true},
		{"hload at 20000/s: connections the server accepted", 0, "", true, true},
		{"hload CPU per request, open at 20000/s vs closed GET", 88.0 / 23, "x", false, true},
		{"hload peak RSS per added VU", 300 * 1024 / 8000.0, "KB", false, true},
		{"hload dynamic POST isolated vs in-process requests/s", 0.8, "x", true, false},
	}
	for _, w := range want {
		r := goal(t, rs, w.what)
		if r.Missing != "" || math.Abs(r.Value-w.value) > 1e-9 || r.Unit != w.unit || r.Meets != w.meets || r.AtMost != w.atMost {
			t.Errorf("%s = %+v, want value %g %s, meets %v, at most %v", w.what, r, w.value, w.unit, w.meets, w.atMost)
		}
	}
	// hload did not report its lateness at 20,000/s: n/a, not a zero
	// that would meet the goal.
	if r := goal(t, rs, "hload at 20000/s: start lateness p99"); r.Missing != "hload-open-20000 did not report it" || r.Meets {
		t.Errorf("lateness without a figure = %+v", r)
	}
	// Of the get case only hload ran, as the others' reference: its goals
	// against the peers are n/a, not below.
	if r := goal(t, rs, "hload requests per CPU-second vs wrk"); r.Missing != "wrk was not run" || r.Meets {
		t.Errorf("without wrk: %+v", r)
	}
}

// A goal whose tools are missing, failed or report zero says so and
// neither meets nor fails on a zero.
func TestGoalsWithMissingTools(t *testing.T) {
	failedOpen := result{Case: "open-10000", Tool: "hload-open-10000", Error: "failed in every round"}
	meds := []result{
		med("post", "hload-post", 20000, 29.9),
		med("post-dynamic", "hload-post-dynamic", 18000, 40),
		failedOpen,
		med("idle-vus", "hload-idle-10000", 0, 0),
		med("plugin", "hload-post-dynamic-isolated", 14400, 60),
	}
	rs := ratios(meds, true)
	// No tool of the get case ran: its goals are not listed.
	for _, r := range rs {
		if r.Case == "get" {
			t.Errorf("a goal of a case that did not run: %+v", r)
		}
	}
	for what, missing := range map[string]string{
		"hload CPU per request, constant POST vs GET":          "hload was not run",
		"hload at 10000/s: sent off the plan":                  "hload-open-10000 failed in every round",
		"hload CPU per request, open at 10000/s vs closed GET": "hload-open-10000 failed in every round",
		"hload peak RSS per added VU":                          "hload-idle-2000 was not run",
		"hload dynamic POST isolated vs in-process requests/s": "",
	} {
		r := goal(t, rs, what)
		if r.Missing != missing || (missing != "" && r.Meets) {
			t.Errorf("%s = %+v, want missing %q", what, r, missing)
		}
	}
	// The dynamic POST in-process with no requests/s: its figure is zero,
	// and the ratio is not computed from it.
	meds = append(meds[:len(meds)-1], med("plugin", "hload-post-dynamic-isolated", 14400, 60))
	meds[1].RPS = 0
	if r := goal(t, ratios(meds, true), "hload dynamic POST isolated"); r.Missing != "hload-post-dynamic's figure is zero" || r.Meets {
		t.Errorf("against a zero figure: %+v", r)
	}
}

// The medians carry each case's own figures: CPU per request, the plan,
// the dropped iterations, the lateness of the runs that reported it, and
// the server's counts.
func TestMediansOfTheNewFigures(t *testing.T) {
	l1, l2, l3 := 0.5, 3.0, 1.0
	s1, s3 := 12.0, 30.0
	runs := []result{
		{Case: "open-10000", Tool: "hload-open-10000", Round: 1, CPUMicrosPerReq: 30, Planned: 2000, Requests: 1990, Dropped: 10, LatenessP99Ms: &l1, ServerRequests: 1990, ServerConnections: 140, ServerStallMs: &s1},
		{Case: "open-10000", Tool: "hload-open-10000", Round: 2, CPUMicrosPerReq: 50, Planned: 2000, Requests: 2000, Dropped: 0, LatenessP99Ms: &l2, ServerRequests: 2000, ServerConnections: 100},
		{Case: "open-10000", Tool: "hload-open-10000", Round: 3, CPUMicrosPerReq: 40, Planned: 2000, Requests: 1999, Dropped: 1, LatenessP99Ms: &l3, ServerRequests: 1999, ServerConnections: 108, ServerStallMs: &s3},
		{Case: "open-10000", Tool: "vegeta-open-10000", Round: 1, CPUMicrosPerReq: 70, Planned: 2000, Requests: 2000, ServerRequests: 2000, ServerConnections: -1},
	}
	meds := medians(runs)
	if len(meds) != 2 {
		t.Fatalf("medians = %+v", meds)
	}
	h := meds[0]
	if h.Case != "open-10000" || h.CPUMicrosPerReq != 40 || h.Planned != 2000 || h.Requests != 1999 || h.Dropped != 1 ||
		h.LatenessP99Ms == nil || *h.LatenessP99Ms != 1.0 || h.ServerRequests != 1999 || h.ServerConnections != 108 ||
		h.ServerStallMs == nil || *h.ServerStallMs != 21 {
		t.Errorf("hload's medians = %+v", h)
	}
	if v := meds[1]; v.LatenessP99Ms != nil || v.ServerStallMs != nil || v.CPUMicrosPerReq != 70 || v.ServerConnections != -1 {
		t.Errorf("vegeta reports no lateness; medians = %+v", v)
	}
}

// The table of an open-model case has the open columns, the server's
// connections among them, and the other cases' tables do not.
func TestPrintResultsPerCase(t *testing.T) {
	late, stall := 2.63, 41.5
	open := med("open-10000", "hload-open-10000", 1991, 180.3)
	open.Planned, open.LatenessP99Ms, open.ServerRequests, open.ServerConnections, open.ServerStallMs = 2000, &late, 2000, 1234, &stall
	pool := med("open-10000", "hload-open-10000-pool", 1991, 180.3)
	pool.Planned = 2000
	var b strings.Builder
	printResults(&b, "round 1 of 1", []result{med("get", "hload", 40000, 23), open, pool,
		{Case: "open-10000", Tool: "vegeta-open-10000", Error: "exit status 1:\nboom"}})
	out := b.String()
	get, openTable, ok := strings.Cut(out, "round 1 of 1, case open-10000")
	if !ok || !strings.Contains(get, "round 1 of 1, case get") {
		t.Fatalf("no table per case:\n%s", out)
	}
	if strings.Contains(get, "planned") || strings.Contains(get, "conns") ||
		!strings.Contains(openTable, "planned") || !strings.Contains(openTable, "2.63") {
		t.Errorf("open columns in the wrong table:\n%s", out)
	}
	// conns and the server's stall are the last columns: 1,234 and 41.5
	// end hload's row, and the pool's unknown count is "?", not 0.
	last3 := func(line string) string {
		f := strings.Fields(line)
		return strings.Join(f[len(f)-3:], " ")
	}
	lines := strings.Split(openTable, "\n")
	if last3(lines[1]) != "conns server stall ms" && !strings.HasSuffix(lines[1], "conns  server stall ms") ||
		last3(lines[2]) != "2.63 1,234 41.5" || last3(lines[3]) != "- ? -" {
		t.Errorf("the conns column:\n%s", openTable)
	}
	if !strings.Contains(openTable, "vegeta-open-10000 failed: exit status 1: boom") {
		t.Errorf("the failure is not on one line:\n%s", out)
	}
}

func TestSelectTools(t *testing.T) {
	all := cases()
	names := func(ts []*tool) string {
		var n []string
		for _, t := range ts {
			n = append(n, t.name)
		}
		return strings.Join(n, ",")
	}
	for _, tt := range []struct {
		cases, tools, want, wantErr string
	}{
		// A case brings the tools its goals compare against, in the
		// order of the cases.
		{cases: "post", want: "hload,hload-post,wrk-post,hey-post,vegeta-post"},
		{cases: "plugin", want: "hload-post-dynamic,hload-post-dynamic-isolated,hload-echo"},
		{cases: "open-10000, idle-vus", want: "hload,hload-open-10000,hload-open-10000-pool,vegeta-open-10000,floor-open-10000,hload-idle-2000,hload-idle-10000"},
		{cases: "open-20000", want: "hload,hload-open-20000,hload-open-20000-pool,vegeta-open-20000,floor-open-20000"},
		// The sweep compares against nothing: it brings no other run.
		{cases: "open-sweep", want: "hload-open-sweep,vegeta-open-sweep,floor-open-sweep"},
		{cases: "post", tools: "hload-post", want: "hload-post"},
		{tools: "vegeta-open-20000,hload", want: "hload,vegeta-open-20000"},
		{cases: "posts", wantErr: `-cases: no case "posts"; the cases are get, post, post-dynamic, open-10000, open-20000, open-sweep, idle-vus, plugin`},
		{cases: "post", tools: "wrk", wantErr: `-tools: no tool "wrk" in the cases chosen`},
		{tools: "ab", wantErr: `-tools: no tool "ab"`},
	} {
		got, err := selectTools(all, tt.cases, tt.tools)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("-cases %q -tools %q: error %v, want %q", tt.cases, tt.tools, err, tt.wantErr)
			}
			continue
		}
		if err != nil || names(got) != tt.want {
			t.Errorf("-cases %q -tools %q = %s, %v; want %s", tt.cases, tt.tools, names(got), err, tt.want)
		}
	}
	// By default every case runs, and every tool knows its case.
	got, _ := selectTools(all, "", "")
	seen := map[string]bool{}
	for _, t := range got {
		seen[t.caseName] = true
	}
	if len(seen) != len(all) {
		t.Errorf("default cases %v, want all %d", seen, len(all))
	}
}

// The server's count is "HTTP ECHO CONNS STALL_US"; anything else, the
// three counts of an older server among them, is an error, never a zero
// count.
func TestParseCounts(t *testing.T) {
	if c, err := parseCounts([]byte("123 45 6 7890\n")); c != (serverCounts{requests: 123, echoes: 45, conns: 6, stallUs: 7890}) || err != nil {
		t.Errorf("parseCounts = %+v, %v", c, err)
	}
	for _, bad := range []string{"", "123", "123 45", "123 45 6", "x 1 2 3", "1 y 2 3", "1 2 z 3", "1 2 3 w", "1 2 3 4 5", "<html>"} {
		if c, err := parseCounts([]byte(bad)); err == nil {
			t.Errorf("parseCounts(%q) = %+v, no error", bad, c)
		}
	}
}

// openMed is hload's median with its default pool at rate: the plan of
// one 10-second run, and figures that meet every goal.
func openMed(rate int) result {
	late := 1.2
	r := med(fmt.Sprintf("open-%d", rate), fmt.Sprintf("hload-open-%d", rate), float64(rate), 30)
	r.Planned, r.Requests, r.LatenessP99Ms, r.ServerConnections = int64(rate)*10, int64(rate)*10, &late, 150
	return r
}

// floorMed is the floor's median at rate, 25 µs of CPU per request.
func floorMed(rate int) result {
	r := openMed(rate)
	r.Tool, r.CPUMicrosPerReq = fmt.Sprintf("floor-open-%d", rate), 25
	return r
}

// The open model's goals at 10,000 and 20,000/s, at their edges: sent
// within 0.5 % and dropped at most 0.1 % of the plan, start lateness p99
// and connections strictly under their goal, CPU per request at most 1.7x
// the closed GET's; and n/a, with why, when a figure is missing.
func TestOpenGoals(t *testing.T) {
	get := med("get", "hload", 40000, 20)
	for _, tt := range []struct {
		name  string
		what  string // the goal's text after "hload at 10000/s: " or the CPU goal's
		set   func(r *result)
		value float64
		meets bool
	}{
		{"sent at the edge", "sent off the plan", func(r *result) { r.Requests = 99500 }, 0.5, true},
		{"sent just past it", "sent off the plan", func(r *result) { r.Requests = 100501 }, 0.501, false},
		{"dropped at the edge", "dropped iterations, of the plan", func(r *result) { r.Dropped = 100 }, 0.1, true},
		{"dropped just past it", "dropped iterations, of the plan", func(r *result) { r.Dropped = 101 }, 0.101, false},
		{"lateness under", "start lateness p99", func(r *result) { v := 1.99; r.LatenessP99Ms = &v }, 1.99, true},
		{"lateness at the goal is not under it", "start lateness p99", func(r *result) { v := 2.0; r.LatenessP99Ms = &v }, 2, false},
		{"connections under", "connections the server accepted", func(r *result) { r.ServerConnections = 499 }, 499, true},
		{"connections at the goal are not under it", "connections the server accepted", func(r *result) { r.ServerConnections = 500 }, 500, false},
		{"CPU at the edge", "hload CPU per request, open at 10000/s vs closed GET", func(r *result) { r.CPUMicrosPerReq = 34 }, 1.7, true},
		{"CPU past it", "hload CPU per request, open at 10000/s vs closed GET", func(r *result) { r.CPUMicrosPerReq = 34.2 }, 1.71, false},
		{"CPU at the floor's edge", "hload CPU per request vs the floor's, open at 10000/s", func(r *result) { r.CPUMicrosPerReq = 32.5 }, 1.3, true},
		{"CPU past the floor's", "hload CPU per request vs the floor's, open at 10000/s", func(r *result) { r.CPUMicrosPerReq = 32.6 }, 1.304, false},
	} {
		open := openMed(10000)
		tt.set(&open)
		what := tt.what
		if !strings.HasPrefix(what, "hload CPU") {
			what = "hload at 10000/s: " + what
		}
		r := goal(t, ratios([]result{get, open, floorMed(10000)}, true), what)
		if r.Missing != "" || math.Abs(r.Value-tt.value) > 1e-9 || r.Meets != tt.meets || !r.AtMost {
			t.Errorf("%s: %+v, want value %g, meets %v", tt.name, r, tt.value, tt.meets)
		}
	}

	// Both rates have all six goals, and the run with an explicit pool
	// none: the goals are of the defaults.
	pool := openMed(20000)
	pool.Tool = "hload-open-20000-pool"
	rs := ratios([]result{get, openMed(10000), openMed(20000), pool, floorMed(10000), floorMed(20000)}, true)
	for _, rate := range []int{10000, 20000} {
		n := 0
		for _, r := range rs {
			if r.Case == fmt.Sprintf("open-%d", rate) {
				n++
				if !r.Meets || r.Missing != "" || strings.Contains(r.What, "pool") {
					t.Errorf("%+v, want it met", r)
				}
			}
		}
		if n != 6 {
			t.Errorf("open-%d has %d goals, want 6", rate, n)
		}
	}

	// Without the closed GET the CPU goal is n/a; without the server's
	// count, the connections.
	open := openMed(20000)
	open.ServerConnections = -1
	rs = ratios([]result{open}, true)
	if r := goal(t, rs, "hload CPU per request, open at 20000/s"); r.Missing != "hload was not run" || r.Meets {
		t.Errorf("without get: %+v", r)
	}
	if r := goal(t, rs, "hload at 20000/s: connections"); r.Missing != "the server's count was not read" || r.Meets {
		t.Errorf("without the server's count: %+v", r)
	}
	open.Planned = 0
	if r := goal(t, ratios([]result{open}, true), "hload at 20000/s: dropped"); r.Missing != "hload-open-20000 has no plan" || r.Meets {
		t.Errorf("without a plan: %+v", r)
	}

	// A goal the value must be under prints "<".
	var b strings.Builder
	printRatios(&b, ratios([]result{get, openMed(10000)}, true))
	if !strings.Contains(b.String(), "goal < 2.00 ms") || !strings.Contains(b.String(), "goal <= 0.10 %") {
		t.Errorf("the goals:\n%s", b.String())
	}
}
