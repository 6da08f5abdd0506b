package core

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hload/hload/config"
	"github.com/hload/hload/metrics"
	"github.com/hload/hload/protocols"
)

// shopTest is a scenario "shop" with a setup (login), a flow "order"
// (list, buy), a flow "refund" (refund) and a bare request "home", and a
// scenario "plain" with a bare request only. It is built by hand, so that
// the reporting is tested apart from the parser and the VUs.
func shopTest() *config.Test {
	req := func(name string) *config.Request { return &config.Request{Name: name, Target: "t", Weight: 1} }
	login, list, buy, refund, home := req("login"), req("list"), req("buy"), req("refund"), req("home")
	home.Weight = 3
	exec := config.ConstantVUs{VUs: 1, Duration: time.Second}
	return &config.Test{Scenarios: []*config.Scenario{{
		Name:     "shop",
		Executor: exec,
		Requests: []*config.Request{login, list, buy, refund, home},
		Setup:    &config.Flow{Name: metrics.SetupFlow, Steps: []*config.Request{login}},
		Mix: []*config.Flow{
			{Name: "order", Weight: 1, Steps: []*config.Request{list, buy}},
			{Name: "refund", Weight: 1, Steps: []*config.Request{refund}},
			{Name: "home", Weight: 3, Steps: []*config.Request{home}, Single: true},
		},
	}, {
		Name:     "plain",
		Executor: exec,
		Requests: []*config.Request{req("r")},
	}}}
}

// reportRun is a run with no executor behind it: the test records into its
// aggregator by hand and writes its snapshots at chosen times.
func reportRun(test *config.Test, sinks ...Sink) *run {
	r := &run{
		test:      test,
		agg:       metrics.NewAggregator(),
		interval:  time.Second,
		info:      metrics.RunInfo{Started: time.Unix(1000, 0)},
		opts:      Options{Sinks: sinks},
		cancelRun: func() {},
	}
	for _, s := range test.Scenarios {
		r.scenarios = append(r.scenarios, &scenarioRun{cfg: s, name: s.Name, planned: -1, ending: make(chan struct{})})
	}
	r.snapshots.start(r)
	return r
}

// at is the time d into a reportRun.
func (r *run) at(d time.Duration) time.Time { return r.info.Started.Add(d) }

func recordFlows(s *metrics.Series, kind protocols.ErrorKind, ms ...int) {
	for _, m := range ms {
		s.RecordFlow(time.Duration(m)*time.Millisecond, kind)
	}
}

func near(got, want, rel float64) bool { return math.Abs(got-want) <= rel*math.Abs(want)+1e-9 }

func flowOf(snap metrics.Snapshot, scenario, flow string) *metrics.FlowSeriesFigures {
	for i := range snap.Flows {
		if snap.Flows[i].Scenario == scenario && snap.Flows[i].Flow == flow {
			return &snap.Flows[i]
		}
	}
	return nil
}

// TestFlowFiguresInSnapshotsAndSummary records known flow runs over three
// intervals, the last one short, and compares every snapshot's flow
// figures and the summary's with figures computed here from the same
// durations.
func TestFlowFiguresInSnapshotsAndSummary(t *testing.T) {
	live := &snapshotSink{}
	r := reportRun(shopTest(), live)
	order, setup := r.agg.Flow("shop", "order"), r.agg.Flow("shop", metrics.SetupFlow)

	recordFlows(order, protocols.ErrNone, 10, 20, 30, 40)
	recordFlows(order, "capture", 5)
	recordFlows(setup, protocols.ErrNone, 50, 50, 50)
	recordFlows(setup, "capture", 7, 7)
	r.snapshots.write(r, r.at(time.Second), false)

	recordFlows(order, protocols.ErrNone, 100)
	recordFlows(order, protocols.ErrTimeout, 3)
	r.snapshots.write(r, r.at(2*time.Second), false)

	// The run's last 50 ms: one more flow.
	recordFlows(order, protocols.ErrNone, 30)
	r.end = r.at(2050 * time.Millisecond)
	r.snapshots.write(r, r.end, true)

	if len(live.snaps) != 3 {
		t.Fatalf("%d snapshots, want 3", len(live.snaps))
	}
	type want struct {
		count, completed, failed int64
		mean, min, max, rate     float64
		kinds                    map[string]int64
	}
	check := func(where string, f metrics.FlowFigures, w want) {
		t.Helper()
		if f.Count != w.count || f.Completed != w.completed || f.Failed != w.failed {
			t.Errorf("%s: count %d, completed %d, failed %d; want %d, %d, %d", where, f.Count, f.Completed, f.Failed, w.count, w.completed, w.failed)
		}
		if w.count > 0 && !near(f.FailureRate, float64(w.failed)/float64(w.count), 1e-9) {
			t.Errorf("%s: failure rate %v, want %d/%d", where, f.FailureRate, w.failed, w.count)
		}
		// The histograms keep 3 significant figures.
		d := f.Duration
		if !near(d.Mean, w.mean, 1e-3) || !near(d.Min, w.min, 1e-3) || !near(d.Max, w.max, 1e-3) {
			t.Errorf("%s: duration mean %v min %v max %v ms; want %v, %v, %v", where, d.Mean, d.Min, d.Max, w.mean, w.min, w.max)
		}
		if !near(f.Rate, w.rate, 1e-9) {
			t.Errorf("%s: rate %v/s, want %v/s", where, f.Rate, w.rate)
		}
		if w.kinds != nil && !maps.Equal(f.FailedByKind, w.kinds) {
			t.Errorf("%s: failed by kind %v, want %v", where, f.FailedByKind, w.kinds)
		}
	}
	s1, s2, s3 := live.snaps[0], live.snaps[1], live.snaps[2]
	if len(s1.Flows) != 2 {
		t.Fatalf("first snapshot's flows %+v, want order and setup", s1.Flows)
	}
	check("interval 1, order", flowOf(s1, "shop", "order").FlowFigures,
		want{5, 4, 1, 25, 10, 40, 5, map[string]int64{"capture": 1}})
	check("interval 1, setup", flowOf(s1, "shop", metrics.SetupFlow).FlowFigures,
		want{5, 3, 2, 50, 50, 50, 5, map[string]int64{"capture": 2}})
	check("interval 2, order", flowOf(s2, "shop", "order").FlowFigures,
		want{2, 1, 1, 100, 100, 100, 2, map[string]int64{"timeout": 1}})
	check("interval 2, setup", flowOf(s2, "shop", metrics.SetupFlow).FlowFigures,
		want{0, 0, 0, 0, 0, 0, 0, map[string]int64{}})
	// The last 50 ms put their rate over the interval before them too:
	// (2 + 1) flows over 1.05 s, not 1 over 0.05 s.
	check("interval 3, order", flowOf(s3, "shop", "order").FlowFigures,
		want{1, 1, 0, 30, 30, 30, 3 / 1.05, nil})

	sum := r.summarise()
	shop := sum.Scenarios["shop"]
	if got := slices.Sorted(maps.Keys(shop.Flows)); !slices.Equal(got, []string{"order", "refund", "setup"}) {
		t.Fatalf("summary flows %q, want order, refund and setup", got)
	}
	check("summary, order", *shop.Flows["order"],
		want{8, 6, 2, (10 + 20 + 30 + 40 + 100 + 30) / 6.0, 10, 100, 8 / 2.05, map[string]int64{"capture": 1, "timeout": 1}})
	check("summary, setup", *shop.Flows[metrics.SetupFlow],
		want{5, 3, 2, 50, 50, 50, 5 / 2.05, map[string]int64{"capture": 2}})
	// refund never ended: it is there, with zeros; the bare request is not.
	check("summary, refund", *shop.Flows["refund"], want{kinds: map[string]int64{}})
	// Counts add up over the snapshots.
	var n int64
	for _, snap := range live.snaps {
		n += flowOf(snap, "shop", "order").Count
	}
	if n != shop.Flows["order"].Count {
		t.Errorf("snapshots count %d orders, the summary %d", n, shop.Flows["order"].Count)
	}
	if f := sum.Scenarios["plain"].Flows; f != nil {
		t.Errorf("scenario plain has no flow, but the summary gives it %v", f)
	}
	data, err := json.Marshal(sum)
	if err != nil {
		t.Fatal(err)
	}
	var raw struct {
		Scenarios map[string]map[string]json.RawMessage `json:"scenarios"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		t.Fatal(err)
	}
	if _, ok := raw.Scenarios["plain"]["flows"]; ok {
		t.Errorf("the JSON of scenario plain has flows: %s", raw.Scenarios["plain"]["flows"])
	}
	if !strings.Contains(string(raw.Scenarios["shop"]["flows"]), `"order":{"count":8,"completed":6,"failed":2,`) {
		t.Errorf("the JSON of scenario shop lacks order's figures: %s", raw.Scenarios["shop"]["flows"])
	}
}

// TestNoFlowsNoFlowFigures: a test without flow or setup has no flow
// figures in its snapshots or its summary.
func TestNoFlowsNoFlowFigures(t *testing.T) {
	test := shopTest()
	test.Scenarios = test.Scenarios[1:]
	live := &snapshotSink{}
	r := reportRun(test, live)
	r.agg.Series("plain", "r").Record(protocols.Sample{Metric: protocols.MetricRequest, Value: time.Millisecond, Status: 200})
	r.end = r.at(time.Second)
	r.snapshots.write(r, r.end, true)
	sum := r.summarise()
	if live.snaps[0].Flows != nil || sum.Scenarios["plain"].Flows != nil {
		t.Errorf("snapshot flows %v, summary flows %v; want none", live.snaps[0].Flows, sum.Scenarios["plain"].Flows)
	}
}

// TestFlowAbortThreshold: an abort threshold on a flow metric is judged at
// every interval and stops the run once it fails; one whose flow has not
// ended yet does not abort, and at the end it does not pass, with a
// warning that says it had nothing to judge.
func TestFlowAbortThreshold(t *testing.T) {
	test := shopTest()
	failures := &config.Threshold{Metric: "flow_failures", Flow: "order", Abort: true,
		Condition: config.Condition{Text: "rate < 10%", Aggregation: "rate", Op: "<", Value: 0.1}}
	idle := &config.Threshold{Metric: "flow_duration", Flow: "refund", Abort: true,
		Condition: config.Condition{Text: "p95 < 1s", Aggregation: "p95", Percentile: 95, Op: "<", Value: 1000, IsDuration: true}}
	test.Thresholds = []*config.Threshold{idle, failures}
	r := reportRun(test)
	order := r.agg.Flow("shop", "order")

	r.tick()
	if r.aborted != "" {
		t.Fatalf("aborted with no flow ended: %q", r.aborted)
	}
	recordFlows(order, protocols.ErrNone, slices.Repeat([]int{10}, 19)...)
	recordFlows(order, "capture", 10)
	r.tick() // 1 of 20 failed: 5 %
	if r.aborted != "" {
		t.Fatalf("aborted at 1 failed order of 20: %q", r.aborted)
	}
	recordFlows(order, "capture", 10, 10)
	r.tick() // 3 of 22: 13.6 %
	const want = "flow_failures flow=order: rate < 10%"
	if r.aborted != want {
		t.Fatalf("after 3 failed orders of 22, aborted = %q, want %q", r.aborted, want)
	}
	select {
	case <-r.scenarios[0].ending:
	default:
		t.Error("the abort did not end the scenarios")
	}

	r.end = time.Now()
	r.snapshots.write(r, r.end, true)
	sum := r.summarise()
	if sum.Passed || sum.Aborted != want {
		t.Errorf("summary passed %v, aborted %q", sum.Passed, sum.Aborted)
	}
	if len(sum.Thresholds) != 2 || sum.Thresholds[0].Passed || sum.Thresholds[1].Passed ||
		!near(sum.Thresholds[1].Value, 3/22.0, 1e-9) || sum.Thresholds[1].Flow != "order" || sum.Thresholds[0].Flow != "refund" {
		t.Errorf("thresholds %+v; want both failed, order's at 3/22", sum.Thresholds)
	}
	nothing := `threshold "flow_duration flow=refund: p95 < 1s" had nothing to judge: no flow "refund" completed, so it did not pass`
	if !slices.Contains(sum.Warnings, nothing) {
		t.Errorf("warnings %q lack %q", sum.Warnings, nothing)
	}
}

// TestSetupAndFlowWarnings: a failed VU setup is said live once, when it
// first happens, and in the summary with the attempts, the kinds and the
// first reason; a flow whose every run failed is said live once and in
// the summary, one that recovered only live.
func TestSetupAndFlowWarnings(t *testing.T) {
	test := shopTest()
	// A second scenario whose every setup fails.
	down := *test.Scenarios[0]
	down.Name = "down"
	test.Scenarios = append(test.Scenarios, &down)
	live := &snapshotSink{}
	r := reportRun(test, live)
	setup, order, refund := r.agg.Flow("shop", metrics.SetupFlow), r.agg.Flow("shop", "order"), r.agg.Flow("shop", "refund")
	downSetup := r.agg.Flow("down", metrics.SetupFlow)
	login := r.agg.Series("shop", "login")
	loginFailed := func(n int) {
		for range n {
			login.Record(protocols.Sample{Metric: protocols.MetricRequest, Error: "capture", Status: 200,
				Message: `capture "token": json("token") found nothing`})
		}
	}
	login.Record(protocols.Sample{Metric: protocols.MetricRequest, Status: 200})

	// Interval 1: setups fine; order fails every time so far, refund too.
	recordFlows(setup, protocols.ErrNone, 5, 5, 5)
	recordFlows(order, "http_5xx", 10)
	recordFlows(refund, "capture", 10, 10)
	recordFlows(downSetup, protocols.ErrConnectionRefused, 1)
	r.snapshots.write(r, r.at(time.Second), false)
	// Interval 2: a setup fails; order recovers; refund fails again.
	recordFlows(setup, "capture", 5)
	loginFailed(1)
	recordFlows(order, protocols.ErrNone, 10)
	recordFlows(refund, "capture", 10)
	r.snapshots.write(r, r.at(2*time.Second), false)
	// Interval 3: two more setups fail.
	recordFlows(setup, "capture", 5, 5)
	loginFailed(2)
	recordFlows(downSetup, protocols.ErrConnectionRefused, 1, 1)
	r.end = r.at(3 * time.Second)
	r.snapshots.write(r, r.end, true)

	said := make([][]string, len(live.snaps))
	for i, snap := range live.snaps {
		said[i] = withoutGenerator(snap.Warnings)
	}
	wantLive := [][]string{{
		`scenario "shop", flow "order": every run so far failed (1 of 1: http_5xx 1)`,
		`scenario "shop", flow "refund": every run so far failed (2 of 2: capture 2)`,
		`scenario "down": 1 of 1 VU setup attempts so far failed (connection_refused 1); a VU whose setup fails retries it after a backoff and runs no iteration meanwhile`,
	}, {
		`scenario "shop": 1 of 4 VU setup attempts so far failed (capture 1); a VU whose setup fails retries it after a backoff and runs no iteration meanwhile`,
	}, nil}
	for i := range wantLive {
		if !slices.Equal(slices.Sorted(slices.Values(said[i])), slices.Sorted(slices.Values(wantLive[i]))) {
			t.Errorf("snapshot %d warned %q, want %q", i+1, said[i], wantLive[i])
		}
	}

	sum := r.summarise()
	wantSum := []string{
		`scenario "down": 3 of 3 VU setup attempts failed (connection_refused 3); a VU whose setup failed retried it after a backoff and ran no iteration meanwhile, and no VU completed its setup`,
		`scenario "shop", flow "refund": every run failed (3 of 3: capture 3)`,
		`scenario "shop": 3 of 6 VU setup attempts failed (capture 3), first at step "login": capture "token": json("token") found nothing; a VU whose setup failed retried it after a backoff and ran no iteration meanwhile`,
	}
	if got := withoutGenerator(sum.Warnings); !slices.Equal(got, wantSum) {
		t.Errorf("summary warnings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(wantSum, "\n"))
	}
}

// TestPlanMix: the plan lists each mix entry with its weight and share,
// each flow's steps in order with what they capture, and the setup's
// steps; Requests keeps one entry per request an iteration may send, a
// step with its flow's share.
func TestPlanMix(t *testing.T) {
	test := shopTest()
	s := test.Scenarios[0]
	s.Mix[0].ThinkTime = config.ThinkTime{Min: 50 * time.Millisecond, Max: 50 * time.Millisecond}
	s.Setup.Steps[0].Captures = []config.Capture{{Name: "token", Source: config.CaptureJSON, Arg: "token"}, {Name: "session", Source: config.CaptureCookie, Arg: "sid"}}
	s.Mix[0].Steps[1].ContinueOnFailure = true
	plans := Plan(test, Segment{})
	p := plans[0]
	// Weights 1 (order), 1 (refund) and 3 (home): shares of 5.
	wantMix := []struct {
		name   string
		weight int
		share  float64
		single bool
		steps  []string
	}{
		{"order", 1, 0.2, false, []string{"list", "buy"}},
		{"refund", 1, 0.2, false, []string{"refund"}},
		{"home", 3, 0.6, true, []string{"home"}},
	}
	if len(p.Mix) != len(wantMix) {
		t.Fatalf("mix %+v, want %d entries", p.Mix, len(wantMix))
	}
	for i, w := range wantMix {
		f := p.Mix[i]
		var steps []string
		for _, st := range f.Steps {
			steps = append(steps, st.Name)
		}
		if f.Name != w.name || f.Weight != w.weight || !near(f.Share, w.share, 1e-12) || f.Single != w.single || !slices.Equal(steps, w.steps) {
			t.Errorf("mix entry %d: %s weight %d share %v single %v steps %q; want %+v", i, f.Name, f.Weight, f.Share, f.Single, steps, w)
		}
	}
	if p.Mix[0].ThinkTime.Min != 50*time.Millisecond || !p.Mix[0].Steps[1].ContinueOnFailure || p.Mix[0].Steps[0].ContinueOnFailure {
		t.Errorf("order: think time %v, continue on failure %v %v", p.Mix[0].ThinkTime, p.Mix[0].Steps[0].ContinueOnFailure, p.Mix[0].Steps[1].ContinueOnFailure)
	}
	if p.Setup == nil || len(p.Setup.Steps) != 1 || p.Setup.Steps[0].Name != "login" ||
		!slices.Equal(p.Setup.Steps[0].Captures, []string{"token", "session"}) || p.Setup.Weight != 0 || p.Setup.Share != 0 {
		t.Errorf("setup %+v, want login capturing token and session, with no weight nor share", p.Setup)
	}
	wantRequests := []RequestShare{
		{"list", "t", 1, 0.2}, {"buy", "t", 1, 0.2}, {"refund", "t", 1, 0.2}, {"home", "t", 3, 0.6},
	}
	if !slices.EqualFunc(p.Requests, wantRequests, func(a, b RequestShare) bool {
		return a.Name == b.Name && a.Target == b.Target && a.Weight == b.Weight && near(a.Share, b.Share, 1e-12)
	}) {
		t.Errorf("requests %+v, want %+v", p.Requests, wantRequests)
	}
	// A scenario built with no mix (only requests) plans them as bare
	// requests, as before flows.
	plain := plans[1]
	if len(plain.Mix) != 1 || !plain.Mix[0].Single || plain.Mix[0].Share != 1 || plain.Setup != nil ||
		len(plain.Requests) != 1 || plain.Requests[0] != (RequestShare{"r", "t", 1, 1}) {
		t.Errorf("plain: mix %+v, setup %+v, requests %+v", plain.Mix, plain.Setup, plain.Requests)
	}
}

// countingShop counts what it serves by path, by its own counters: a login
// is refused on its first attempt by each user of scenario "s" and on
// every attempt by the users of scenario "down"; /nope always fails.
type countingShop struct {
	*httptest.Server
	mu       sync.Mutex
	attempts map[string]int // logins by user
	refused  map[string]int // logins refused, by scenario
	admitted map[string]int // logins admitted, by scenario
	served   map[string]int // by path, logins apart
}

func newCountingShop(t *testing.T) *countingShop {
	cs := &countingShop{attempts: map[string]int{}, refused: map[string]int{}, admitted: map[string]int{}, served: map[string]int{}}
	cs.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cs.mu.Lock()
		defer cs.mu.Unlock()
		if r.URL.Path != "/login" {
			cs.served[r.URL.Path]++
			if r.URL.Path == "/nope" {
				http.Error(w, "no such page", http.StatusInternalServerError)
			}
			return
		}
		user := r.URL.Query().Get("user")
		scenario, _, _ := strings.Cut(user, "-")
		cs.attempts[user]++
		if scenario == "down" || cs.attempts[user] == 1 {
			cs.refused[scenario]++
			http.Error(w, "try later", http.StatusServiceUnavailable)
			return
		}
		cs.admitted[scenario]++
		fmt.Fprintf(w, `{"token": "tok-%s"}`, user)
	}))
	t.Cleanup(cs.Close)
	return cs
}

const reportJourney = loopbackTarget + `
scenario "s" {
  executor   = "constant-vus"
  vus        = 3
  duration   = "800ms"
  think_time = "5ms"
  setup {
    request "login" {
      method = "POST"
      path   = "/login"
      query  = { user = "s-${vu.id}" }
      capture {
        token = json("token")
      }
    }
  }
  flow "order" {
    weight = 3
    request "a" {
      path    = "/a"
      headers = { Authorization = "Bearer ${vu.vars.token}" }
    }
    request "b" {
      path = "/b"
    }
  }
  flow "broken" {
    request "nope" {
      path = "/nope"
    }
    request "never" {
      path = "/never"
    }
  }
}
scenario "down" {
  executor = "constant-vus"
  vus      = 2
  duration = "800ms"
  setup {
    request "login2" {
      method = "POST"
      path   = "/login"
      query  = { user = "down-${vu.id}" }
      capture {
        token = json("token")
      }
    }
  }
  flow "order2" {
    request "c" {
      path    = "/c"
      headers = { Authorization = "Bearer ${vu.vars.token}" }
    }
  }
}
threshold {
  metric    = "flow_failures"
  flow      = "broken"
  condition = "rate == 100%"
}
threshold {
  metric    = "flow_duration"
  scenario  = "s"
  flow      = "order"
  condition = "count > 0"
}
threshold {
  metric    = "flow_failures"
  condition = "count < 1000000"
}
threshold {
  metric    = "flow_duration"
  flow      = "order2"
  condition = "p95 < 10s"
}
`

// TestFlowReportEndToEnd runs flows and setups against a server that
// counts what it serves, and compares with its counts: the flow figures of
// the snapshots and the summary, the thresholds on them (one watches a
// flow that never ran, as every login of its scenario fails, and does not
// pass), and the warnings for failed setups and a flow that always fails.
func TestFlowReportEndToEnd(t *testing.T) {
	cs := newCountingShop(t)
	live := &snapshotSink{}
	test := loadTest(t, reportJourney, map[string]string{"base_url": cs.URL})
	res := runJourneyWith(t, test, 50*time.Millisecond, Options{Sinks: []Sink{live}, Interval: 100 * time.Millisecond})
	sum := res.sum
	cs.mu.Lock()
	defer cs.mu.Unlock()

	// The server's counts, flow by flow: an order sent /a then /b, and
	// both always succeed; a broken flow stopped at /nope.
	want := map[string]map[string][2]int64{ // completed, failed
		"s": {
			"order":           {int64(cs.served["/b"]), 0},
			"broken":          {0, int64(cs.served["/nope"])},
			metrics.SetupFlow: {int64(cs.admitted["s"]), int64(cs.refused["s"])},
		},
		"down": {
			"order2":          {0, 0},
			metrics.SetupFlow: {0, int64(cs.refused["down"])},
		},
	}
	if cs.served["/a"] != cs.served["/b"] || cs.served["/never"] != 0 || cs.served["/c"] != 0 || cs.served["/nope"] == 0 || cs.served["/b"] == 0 {
		t.Fatalf("the server served %v: want as many /b as /a, some /nope, no /never nor /c", cs.served)
	}
	for scenario, flows := range want {
		for name, w := range flows {
			f := res.flow(t, scenario, name)
			if f.Completed != w[0] || f.Failed != w[1] || f.Count != w[0]+w[1] {
				t.Errorf("%s/%s: summary %d completed, %d failed of %d; the server says %d and %d", scenario, name, f.Completed, f.Failed, f.Count, w[0], w[1])
			}
			var completed, failed int64
			for _, snap := range live.snaps {
				if lf := flowOf(snap, scenario, name); lf != nil {
					completed += lf.Completed
					failed += lf.Failed
				}
			}
			if completed != w[0] || failed != w[1] {
				t.Errorf("%s/%s: the snapshots add up to %d completed, %d failed; the server says %d and %d", scenario, name, completed, failed, w[0], w[1])
			}
		}
	}
	// Snapshots come every 100 ms of a run of about 1 s, but a busy
	// machine may run the ticker late and merge intervals: three still
	// show figures added up over intervals, the last one final.
	if !live.snaps[len(live.snaps)-1].Final || len(live.snaps) < 3 {
		t.Errorf("%d snapshots, the last final %v", len(live.snaps), live.snaps[len(live.snaps)-1].Final)
	}

	// Thresholds, in file order.
	// A threshold on any flow leaves the setups out: only one that names
	// "setup" judges them.
	allFailed := int64(cs.served["/nope"])
	wantThresholds := []struct {
		flow   string
		value  float64
		passed bool
	}{
		{"broken", 1, true},
		{"order", float64(cs.served["/b"]), true},
		{"", float64(allFailed), true},
		{"order2", 0, false},
	}
	for i, w := range wantThresholds {
		got := sum.Thresholds[i]
		if got.Flow != w.flow || got.Value != w.value || got.Passed != w.passed {
			t.Errorf("threshold %d: %+v; want flow %q, value %v, passed %v", i+1, got, w.flow, w.value, w.passed)
		}
	}
	if sum.Passed {
		t.Error("the run passed, with a threshold on a flow that never ran")
	}

	refusedS, triedS, refusedDown := cs.refused["s"], cs.refused["s"]+cs.admitted["s"], cs.refused["down"]
	wantWarnings := []struct{ prefix, suffix string }{
		{fmt.Sprintf(`scenario "s": %d of %d VU setup attempts failed (http_5xx %d)`, refusedS, triedS, refusedS),
			"; a VU whose setup failed retried it after a backoff and ran no iteration meanwhile"},
		{fmt.Sprintf(`scenario "down": %d of %d VU setup attempts failed (http_5xx %d)`, refusedDown, refusedDown, refusedDown),
			"; a VU whose setup failed retried it after a backoff and ran no iteration meanwhile, and no VU completed its setup"},
		{fmt.Sprintf(`scenario "s", flow "broken": every run failed (%d of %d: http_5xx %d)`, cs.served["/nope"], cs.served["/nope"], cs.served["/nope"]), ""},
		{`threshold "flow_duration flow=order2: p95 < 10s" had nothing to judge: no flow "order2" completed, so it did not pass`, ""},
	}
	for _, w := range wantWarnings {
		if !slices.ContainsFunc(sum.Warnings, func(s string) bool { return strings.HasPrefix(s, w.prefix) && strings.HasSuffix(s, w.suffix) }) {
			t.Errorf("summary warnings lack %q ... %q:\n%s", w.prefix, w.suffix, strings.Join(sum.Warnings, "\n"))
		}
	}
	var said []string
	for _, snap := range live.snaps {
		said = append(said, snap.Warnings...)
	}
	for _, prefix := range []string{`scenario "s": `, `scenario "down": `, `scenario "s", flow "broken": every run so far failed`} {
		n := 0
		for _, w := range said {
			if strings.HasPrefix(w, prefix) {
				n++
			}
		}
		if n != 1 {
			t.Errorf("live warnings %q say %q %d times, want once", said, prefix, n)
		}
	}
	t.Logf("server: %v; logins refused %v, admitted %v\nwarnings:\n%s\nlive:\n%s", cs.served, cs.refused, cs.admitted,
		strings.Join(sum.Warnings, "\n"), strings.Join(said, "\n"))
}

// TestFlowAbortEndToEnd: an abort threshold on flow_failures stops a 20 s
// run at the interval its flow first fails, while an abort threshold on
// a flow that never ends (its scenario's every login fails), listed
// first, does not stop it.
func TestFlowAbortEndToEnd(t *testing.T) {
	cs := newCountingShop(t)
	test := loadTest(t, loopbackTarget+`
scenario "s" {
  executor   = "constant-vus"
  vus        = 2
  duration   = "20s"
  think_time = "5ms"
  flow "order" {
    weight = 9
    request "a" {
      path = "/a"
    }
  }
  flow "broken" {
    request "nope" {
      path = "/nope"
    }
  }
}
scenario "down" {
  executor = "constant-vus"
  vus      = 1
  duration = "20s"
  setup {
    request "login" {
      method = "POST"
      path   = "/login"
      query  = { user = "down-${vu.id}" }
    }
  }
  flow "idle" {
    request "c" {
      path = "/c"
    }
  }
}
threshold {
  metric    = "flow_duration"
  flow      = "idle"
  condition = "p95 < 1s"
  abort     = true
}
threshold {
  metric    = "flow_failures"
  flow      = "broken"
  condition = "count < 1"
  abort     = true
}
`, map[string]string{"base_url": cs.URL})
	res := runJourneyWith(t, test, 50*time.Millisecond, Options{Interval: 100 * time.Millisecond})
	sum := res.sum
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if want := "flow_failures flow=broken: count < 1"; sum.Aborted != want {
		t.Fatalf("aborted %q, want %q; the server served %v", sum.Aborted, want, cs.served)
	}
	if sum.DurationS > 10 || sum.Passed {
		t.Errorf("the run took %.1fs of its planned 20s, passed %v", sum.DurationS, sum.Passed)
	}
	broken := res.flow(t, "s", "broken")
	if cs.served["/c"] != 0 || cs.refused["down"] == 0 {
		t.Errorf("the server served %v and refused %v logins: want no /c, and refused logins of scenario down", cs.served, cs.refused)
	}
	if broken.Failed != int64(cs.served["/nope"]) || sum.Thresholds[1].Value != float64(cs.served["/nope"]) {
		t.Errorf("broken failed %d times, the threshold read %v; the server failed /nope %d times", broken.Failed, sum.Thresholds[1].Value, cs.served["/nope"])
	}
	t.Logf("aborted after %.2fs; the server served %v", sum.DurationS, cs.served)
}
