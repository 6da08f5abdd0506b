package compare

import (
	"bytes"
	"encoding/json"
	"flag"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hload/hload/metrics"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// request builds a request's figures: calls, errors, rps and latencies
// (p50, p95, p99 in ms; the others derived from them).
func request(count, errors int64, rps, p50, p95, p99 float64) *metrics.RequestFigures {
	rate := 0.0
	if count > 0 {
		rate = float64(errors) / float64(count)
	}
	return &metrics.RequestFigures{
		Count: count, Errors: errors, ErrorRate: rate, RPS: rps,
		Latency: metrics.LatencyFigures{Min: p50 / 2, Mean: (p50 + p95) / 2, P50: p50, P90: (p50 + p95) / 2,
			P95: p95, P99: p99, P999: p99, Max: p99 * 1.5},
		Status: map[string]int64{}, ErrorsByKind: map[string]int64{},
	}
}

func summary(id string, requests map[string]*metrics.RequestFigures) *metrics.Summary {
	return &metrics.Summary{
		HloadVersion: "0.1.0-dev", RunID: id, Passed: true, DurationS: 3,
		Started:   time.Date(2026, 12, 1, 15, 27, 42, 0, time.UTC),
		Scenarios: map[string]*metrics.ScenarioSummary{"shop": {Executor: "constant-vus", Model: "closed", Requests: requests}},
		Metrics:   map[string]metrics.MetricFigures{},
	}
}

// fixture is a base and a new run: detail got slower and lost throughput,
// main got faster, login is only in the base run and order only in the
// new one.
func fixture() *Comparison {
	base := summary("base-run", map[string]*metrics.RequestFigures{
		"detail": request(300, 0, 100, 1, 2, 4),
		"main":   request(600, 6, 200, 2, 4, 8),
		"login":  request(30, 0, 10, 5, 6, 7),
	})
	new := summary("new-run", map[string]*metrics.RequestFigures{
		"detail": request(150, 3, 50, 51, 52, 54),
		"main":   request(600, 0, 200, 1, 2, 4),
		"order":  request(20, 1, 6.5, 3, 4, 5),
	})
	return Compare(Run{Path: "base.json", Summary: base}, Run{Path: "new.json", Summary: new})
}

func find(t *testing.T, c *Comparison, name string) Request {
	t.Helper()
	for _, r := range c.Requests {
		if r.Name() == name {
			return r
		}
	}
	t.Fatalf("comparison lacks %s", name)
	return Request{}
}

func TestCompare(t *testing.T) {
	c := fixture()
	var names []string
	for _, r := range c.Requests {
		names = append(names, r.Name())
	}
	if got := strings.Join(names, " "); got != "shop/detail shop/login shop/main shop/order" {
		t.Fatalf("requests %q: each request of either run, sorted", got)
	}
	detail := find(t, c, "shop/detail")
	for _, tc := range []struct {
		figure    Figure
		base, new float64
		percent   float64
		verdict   Verdict
	}{
		{Count, 300, 150, -50, Neutral},
		{RPS, 100, 50, -50, Worse},
		{Mean, 1.5, 51.5, 3333.33, Worse},
		{P50, 1, 51, 5000, Worse},
		{P95, 2, 52, 2500, Worse},
		{P99, 4, 54, 1250, Worse},
		{Max, 6, 81, 1250, Worse},
		{ErrorRate, 0, 0.02, math.Inf(1), Worse},
	} {
		ch := detail.Changes[tc.figure]
		if ch.Figure != tc.figure || ch.Base != tc.base || ch.New != tc.new || math.Abs(ch.Percent-tc.percent) > 0.01 && !math.IsInf(tc.percent, 1) ||
			math.IsInf(tc.percent, 1) != math.IsInf(ch.Percent, 1) || ch.Verdict != tc.verdict {
			t.Errorf("detail %s: %+v, want base %v new %v change %v%% %v", tc.figure, ch, tc.base, tc.new, tc.percent, tc.verdict)
		}
	}
	main := find(t, c, "shop/main")
	for f, want := range map[Figure]Verdict{Count: Neutral, RPS: Same, P95: Better, ErrorRate: Better} {
		if got := main.Changes[f].Verdict; got != want {
			t.Errorf("main %s: %v, want %v", f, got, want)
		}
	}
	if p := main.Changes[P95].Percent; p != -50 {
		t.Errorf("main p95 change %v%%, want -50%%", p)
	}
	login, order := find(t, c, "shop/login"), find(t, c, "shop/order")
	if login.Base == nil || login.New != nil || login.Changes != nil || order.Base != nil || order.New == nil || order.Changes != nil {
		t.Errorf("one-run requests: login %+v, order %+v", login, order)
	}
}

func TestCheck(t *testing.T) {
	c := fixture()
	cases := []struct {
		rules  []string
		broken []string // Breach.String() of each, in order
	}{
		{[]string{"latency p95 > +10%"}, []string{
			`"latency p95 > +10%" broke on shop/detail: p95 2.000 ms in the base run, 52.00 ms in the new run (+2500.0 %)`}},
		{[]string{"latency p95 > +2600%"}, nil},
		{[]string{"latency p99 > +50ms"}, nil},
		{[]string{"latency p99 >= +50ms"}, []string{
			`"latency p99 >= +50ms" broke on shop/detail: p99 4.000 ms in the base run, 54.00 ms in the new run (+1250.0 %)`}},
		{[]string{"latency p95 < -10%"}, []string{
			`"latency p95 < -10%" broke on shop/main: p95 4.000 ms in the base run, 2.000 ms in the new run (-50.0 %)`}},
		// A level judges the new run's own figure, on the requests only
		// it has as well.
		{[]string{"errors rate > 1%"}, []string{
			`"errors rate > 1%" broke on shop/detail: error % 0.00 % in the base run, 2.00 % in the new run (+inf %)`,
			`"errors rate > 1%" broke on shop/order: error % 5.00 % in the new run (the base run does not have this request)`}},
		{[]string{"errors rate > +50%"}, []string{
			`"errors rate > +50%" broke on shop/detail: error % 0.00 % in the base run, 2.00 % in the new run (+inf %)`}},
		{[]string{"rps < -5%"}, []string{
			`"rps < -5%" broke on shop/detail: requests/s 100.0/s in the base run, 50.0/s in the new run (-50.0 %)`}},
		{[]string{"rps < -50"}, nil},
		{[]string{"rps <= -50"}, []string{
			`"rps <= -50" broke on shop/detail: requests/s 100.0/s in the base run, 50.0/s in the new run (-50.0 %)`}},
		{[]string{"rps < 10"}, []string{
			`"rps < 10" broke on shop/order: requests/s 6.5/s in the new run (the base run does not have this request)`}},
		{[]string{"latency p95 > +10% on shop/main", "latency max > 80ms on shop"}, []string{
			`"latency max > 80ms on shop" broke on shop/detail: max 6.000 ms in the base run, 81.00 ms in the new run (+1250.0 %)`}},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.rules, "; "), func(t *testing.T) {
			var rules []Rule
			for _, text := range tc.rules {
				r, err := ParseRule(text)
				if err != nil {
					t.Fatal(err)
				}
				rules = append(rules, r)
			}
			breaches, err := c.Check(rules)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, b := range breaches {
				got = append(got, b.String())
			}
			if strings.Join(got, "\n") != strings.Join(tc.broken, "\n") {
				t.Errorf("broken:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.broken, "\n"))
			}
		})
	}
}

// TestCheckNothingToJudge: a rule whose scope has no request it can judge
// is an error, not a pass.
func TestCheckNothingToJudge(t *testing.T) {
	c := fixture()
	for text, want := range map[string]string{
		"latency p95 > +10% on shop/detial": `"latency p95 > +10% on shop/detial" has nothing to judge: shop/detial is not in both runs (requests in both runs: shop/detail, shop/main)`,
		"latency p95 > +10% on shop/login":  `shop/login is not in both runs`,
		"latency p95 > +10% on cart":        `cart is not in both runs`,
		"errors rate > 1% on shop/login":    `shop/login is not in the new run (requests in the new run: shop/detail, shop/main, shop/order)`,
	} {
		r, err := ParseRule(text)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Check([]Rule{r}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", text, err, want)
		}
	}
	empty := Compare(Run{Summary: summary("a", nil)}, Run{Summary: summary("b", nil)})
	r, _ := ParseRule("latency p95 > +10%")
	if _, err := empty.Check([]Rule{r}); err == nil || !strings.Contains(err.Error(), "any request is not in both runs (requests in both runs: none)") {
		t.Errorf("runs without requests: %v", err)
	}
}

// TestWriteText keeps the table's layout in testdata/text.golden (go test
// -update rewrites it), and checks that one-run requests are listed.
func TestWriteText(t *testing.T) {
	c := fixture()
	c.New.Summary.Generator = &metrics.GeneratorFigures{Saturated: true, Reason: "used 95% of 2 cores in 3 of 3 intervals"}
	var buf bytes.Buffer
	if err := c.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "text.golden")
	if *update {
		os.MkdirAll("testdata", 0o755)
		if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if buf.String() != string(want) {
		t.Errorf("WriteText:\n%s\nwant (%s):\n%s", buf.String(), golden, want)
	}
	for _, line := range []string{
		`scenario "shop", request "login": only in the base run`,
		`scenario "shop", request "order": only in the new run`,
		"warning: in the new run hload itself was saturated",
	} {
		if !strings.Contains(buf.String(), line) {
			t.Errorf("output lacks %q", line)
		}
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good, err := json.Marshal(fixture().Base.Summary)
	if err != nil {
		t.Fatal(err)
	}
	// A later version may add fields; they are not an error.
	withMore := strings.Replace(string(good), `"scenarios"`, `"series":{"a":[1,2]},"scenarios"`, 1)
	for name, tc := range map[string]struct {
		content string // "" is a missing file
		want    string // in the error; "" when it loads
	}{
		"good.json":    {string(good), ""},
		"later.json":   {withMore, ""},
		"missing.json": {"", "missing.json: no such file or directory"},
		"text.json":    {"hello", "text.json: not JSON (at byte 1"},
		"cut.json":     {string(good[:40]), "cut.json: not JSON"},
		"package.json": {`{"name": "x", "version": "1.0.0"}`, "package.json: not a summary export: it lacks hload_version, run_id, started or scenarios"},
		"array.json":   {`[1, 2]`, "array.json: not a summary export (json: cannot unmarshal array"},
		"typed.json":   {`{"hload_version": "1", "scenarios": "many"}`, "typed.json: not a summary export (json: cannot unmarshal string"},
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(dir, name)
			if tc.content != "" {
				path = write(name, tc.content)
			}
			run, err := Load(path)
			switch {
			case tc.want == "" && err != nil:
				t.Fatal(err)
			case tc.want == "" && (run.Summary.RunID != "base-run" || run.Summary.Scenarios["shop"].Requests["detail"].Latency.P95 != 2):
				t.Fatalf("loaded %+v", run.Summary)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("Load: %v, want %q", err, tc.want)
			}
		})
	}
}

// TestChangeWithinResolution: percentiles that differ by no more than the
// histograms' resolution (0.1 %) are the same; exact figures (mean, max)
// and larger changes are marked.
func TestChangeWithinResolution(t *testing.T) {
	for _, tc := range []struct {
		figure    Figure
		base, new float64
		want      Verdict
	}{
		{P95, 200, 200.2, Same},
		{P99, 200, 199.8, Same},
		{P95, 200, 200.4, Worse},
		{P50, 200, 199.6, Better},
		{Mean, 200, 200.2, Worse},
		{Max, 200, 199.8, Better},
		{RPS, 50, 50.01, Better},
		{Count, 50, 49, Neutral},
	} {
		if got := change(tc.figure, tc.base, tc.new).Verdict; got != tc.want {
			t.Errorf("%s %v -> %v: %v, want %v", tc.figure, tc.base, tc.new, got, tc.want)
		}
	}
}
