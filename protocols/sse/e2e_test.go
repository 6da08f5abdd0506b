package sse_test

import (
	"context"
	"encoding/json"
	"fmt"
	nethttp "net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hload/hload/config"
	"github.com/hload/hload/core"
	"github.com/hload/hload/demo"
	"github.com/hload/hload/metrics"
	"github.com/hload/hload/plugins/protocoltest"
	"github.com/hload/hload/protocols"
	"github.com/hload/hload/protocols/delivery"
	"github.com/hload/hload/protocols/http"
	"github.com/hload/hload/protocols/sse"
)

// runOn loads src (with files in its folder) and runs it with the http and
// sse protocols and a ledger, as hload apply does, with its SSE targets on
// path: isolated, they run as isolate = true runs them, with the core
// taking their protocol from Options.Isolated, which hload answers with a
// plugin process and this test with p, the path's harness.
func runOn(t *testing.T, src string, files map[string]string, path protocoltest.Path, p protocols.Protocol) *metrics.Summary {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	reg := protocols.NewRegistry(http.New(), sse.New())
	test, diags := config.Parse(map[string][]byte{"test.hcl": []byte(src)}, dir, config.Options{Protocols: reg})
	if diags.HasErrors() {
		t.Fatalf("config: %s", diags.Error())
	}
	opts := core.Options{Protocols: reg}
	if path.Isolated {
		for _, tg := range test.Targets {
			if tg.Protocol == "sse" {
				tg.Isolate = true
			}
		}
		opts.Isolated = func(*config.Target) (protocols.Protocol, error) { return p, nil }
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sum, err := core.Run(delivery.WithLedger(ctx, delivery.NewLedger()), test, opts)
	if err != nil {
		t.Fatal(err)
	}
	return sum
}

// deliveryTest is the must-show test: 200 subscribers, 40 for each of 5
// users, hold their streams while a sender posts 500 notifications a
// second for 10 s, after a 2 s lead so that every subscriber is in. The
// subscribers allow 4 s for an event (miss_grace): on this shared 2-core
// machine the demo's delivery queue has run 2 to 3 s behind (p99), and an
// event that late is counted missed, then late, though the server
// delivered it. They hold their streams 5 s past the last send, so that
// every send is settled before they close.
const deliveryTest = `
data "csv" "subs" {
  path = "subs.csv"
  mode = "sequential"
}

target "api" {
  base_url = "%[1]s"
  timeout  = "10s"
}

target "notify" {
  protocol = "sse"
  base_url = "%[1]s"
}

scenario "subscribers" {
  executor   = "iterations"
  vus        = 200
  iterations = 1
  target     = "notify"

  request "subscribe" {
    path          = "/api/notification/subscribe/${data.subs.user}"
    duration      = "17s"
    delivery_key  = data.subs.user
    id_field      = "id"
    sent_at_field = "sentAt"
    sent_at_unit  = "us"
    miss_grace    = "4s"
  }
}

scenario "sender" {
  executor   = "ramping-arrival-rate"
  start_rate = 0
  stages = [
    { duration = "2s", target = 0 },
    { duration = "1ms", target = 500 },
    { duration = "10s", target = 500 },
  ]
  pre_allocated_vus = 50
  max_vus           = 400
  target            = "api"

  request "send" {
    method = "POST"
    path   = "/api/notification/send"
    let    = { uid = random_int(1, 5), id = "${vu.id}-${vu.iteration}" }
    json = {
      userId  = let.uid
      message = random_string(16)
      id      = let.id
      sentAt  = unix_micros()
    }
    delivery = { key = let.uid, id = let.id }
    check {
      status = [200]
    }
  }
}
`

// TestDeliveryMatchesServer: the events the subscribers received, and
// those they missed, match the demo server's own counts exactly; the
// server drops one delivery in 997 on purpose, so that missed is not 0.
// In-process and isolated alike: isolated, the subscribers count against
// the plugin's mirror of the run's ledger, which the host feeds the sends
// of the keys they watch. The subscribers are all in 2 s before the first
// send, well beyond the wire round trip a key's first watch takes to
// reach the host, so both paths expect exactly the same sends.
func TestDeliveryMatchesServer(t *testing.T) {
	if testing.Short() {
		t.Skip("a 17 s end-to-end run per path; skipped with -short")
	}
	protocoltest.Run(t, sse.New(), deliveryMatchesServer)
}

func deliveryMatchesServer(t *testing.T, path protocoltest.Path, p protocols.Protocol) {
	srv, err := demo.Start(context.Background(), "127.0.0.1:0", demo.Options{NotificationDropEvery: 997, NotificationQueue: 100000})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	var subs strings.Builder
	subs.WriteString("user\n")
	for i := range 200 {
		fmt.Fprintf(&subs, "%d\n", i%5+1)
	}
	sum := runOn(t, fmt.Sprintf(deliveryTest, srv.URL()), map[string]string{"subs.csv": subs.String()}, path, p)

	var st demo.NotificationStats
	resp, err := nethttp.Get(srv.URL() + "/api/notification/stats")
	if err != nil {
		t.Fatal(err)
	}
	json.NewDecoder(resp.Body).Decode(&st)
	resp.Body.Close()

	sent := sum.Scenarios["sender"].Requests["send"]
	subscribe := sum.Scenarios["subscribers"].Requests["subscribe"]
	m := sum.Metrics
	t.Logf("sent %d (status %v), server delivered %d, failed %d (dropped %d)", sent.Count, sent.Status, st.Delivered, st.Failed, st.Dropped)
	t.Logf("subscribers received %d, missed %d, late %d; delivery latency p50 %.3f ms, p99 %.3f ms, max %.3f ms",
		m[sse.MetricEvents].Count, m[sse.MetricEventsMissed].Count, m[sse.MetricEventsLate].Count,
		m[sse.MetricDeliveryLatency].P50, m[sse.MetricDeliveryLatency].P99, m[sse.MetricDeliveryLatency].Max)

	if subscribe.Count != 200 || subscribe.Errors != 0 || m[sse.MetricConnect].Count != 200 {
		t.Errorf("subscriptions: %d, errors %v, connects %d; want 200 without error", subscribe.Count, subscribe.ErrorsByKind, m[sse.MetricConnect].Count)
	}
	if sent.Count < 4500 || sent.Errors != 0 || sent.Status["200"] != sent.Count {
		t.Errorf("sends: %d, errors %d %v, statuses %v; want about 5000, all 200", sent.Count, sent.Errors, sent.ErrorsByKind, sent.Status)
	}
	if st.Delivered == 0 {
		t.Fatalf("server stats %+v", st)
	}
	if got := m[sse.MetricEvents].Count; got != st.Delivered {
		t.Errorf("subscribers received %d events, the server delivered %d", got, st.Delivered)
	}
	if got := m[sse.MetricDeliveryLatency].Count; got != st.Delivered {
		t.Errorf("%d delivery latencies for %d events delivered", got, st.Delivered)
	}
	// An event later than miss_grace is counted missed, then late: the
	// ones that never came are the missed ones less the late ones. On a
	// quiet machine none is late.
	missed, late := m[sse.MetricEventsMissed].Count, m[sse.MetricEventsLate].Count
	if missed-late != st.Failed || st.Failed == 0 {
		t.Errorf("subscribers missed %d events and received %d of them late, the server failed %d deliveries", missed, late, st.Failed)
	}
	// Each send reaches the 40 subscribers of its user.
	if want := 40 * sent.Count; st.Delivered+st.Failed != want {
		t.Errorf("server delivered %d + failed %d, want 40 x %d sends = %d", st.Delivered, st.Failed, sent.Count, want)
	}
	for _, metric := range []string{sse.MetricExtractErrors, sse.MetricEventsDuplicate, sse.MetricDisconnects} {
		if n := m[metric].Count; n != 0 {
			t.Errorf("%s = %d, want 0", metric, n)
		}
	}
	if sum.GaugesMax[sse.GaugeOpenStreams] != 200 {
		t.Errorf("peak open streams %d, want 200", sum.GaugesMax[sse.GaugeOpenStreams])
	}
}

// faultServer cycles through faults, one per connection: a stream closed
// after two events, malformed frames then a close, and a stall.
func faultServer(t *testing.T) (*httptest.Server, *atomic.Int64) {
	var conns atomic.Int64
	srv := httptest.NewServer(nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
		n := conns.Add(1)
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		rc := nethttp.NewResponseController(w)
		send := func(s string) { fmt.Fprint(w, s); rc.Flush() }
		send("retry: 20\n\n")
		switch n % 3 {
		case 1: // closed mid-stream
			send("data: one\n\n")
			send("data: two\n\n")
		case 2: // malformed frames, then closed
			send("nonsense\n\n")
			send("data: \xff\n\n")
			send("data: after\n\n")
		case 0: // a stall
			send("data: then silence\n\n")
			<-r.Context().Done()
		}
	}))
	return srv, &conns
}

// TestFaultsEndToEnd: under a server that closes, garbles and stalls its
// streams, the run completes, each fault is counted by kind, and streams
// reconnect, in-process and isolated. Its subscriptions end with the
// scenario.
func TestFaultsEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("a 3 s end-to-end run per path; skipped with -short")
	}
	protocoltest.Run(t, sse.New(), faultsEndToEnd)
}

func faultsEndToEnd(t *testing.T, path protocoltest.Path, p protocols.Protocol) {
	srv, conns := faultServer(t)
	defer srv.Close()
	sum := runOn(t, fmt.Sprintf(`
target "flaky" {
  protocol = "sse"
  base_url = "%s"
}
scenario "subscribers" {
  executor = "constant-vus"
  vus      = 5
  duration = "3s"
  request "subscribe" {
    path         = "/"
    reconnect    = true
    idle_timeout = "200ms"
  }
}
threshold {
  metric    = "sse_disconnects_stall"
  condition = "count > 0"
}
threshold {
  metric    = "sse_malformed"
  condition = "count > 0"
}
`, srv.URL), nil, path, p)
	m := sum.Metrics
	t.Logf("connections %d; disconnects %d (eof %d, stall %d), reconnects %d, malformed frames %d, events %d",
		conns.Load(), m[sse.MetricDisconnects].Count, m["sse_disconnects_eof"].Count, m["sse_disconnects_stall"].Count,
		m[sse.MetricReconnects].Count, m[sse.MetricMalformed].Count, m[sse.MetricEvents].Count)
	if !sum.Passed {
		t.Errorf("thresholds on fault counts failed: %+v", sum.Thresholds)
	}
	r := sum.Scenarios["subscribers"].Requests["subscribe"]
	if r.Count != 5 || r.Errors != 0 {
		t.Errorf("subscriptions %d, errors %v: want 5 held to the end, reconnecting", r.Count, r.ErrorsByKind)
	}
	if m["sse_disconnects_eof"].Count == 0 || m[sse.MetricReconnects].Count == 0 {
		t.Errorf("eof disconnects %d, reconnects %d: want both", m["sse_disconnects_eof"].Count, m[sse.MetricReconnects].Count)
	}
	if got, want := m[sse.MetricDisconnects].Count, m["sse_disconnects_eof"].Count+m["sse_disconnects_stall"].Count; got != want {
		t.Errorf("disconnects %d, by kind %d", got, want)
	}
	// Every connection but the first of each stream follows a reconnect. A
	// stream stopped by the scenario's end between its reconnect and the
	// server's answer has counted the reconnect without the connection, so
	// each of the 5 streams adds its first connect or nothing (2 of 12 runs
	// ended so, with a difference of 4).
	if diff := m[sse.MetricConnect].Count - m[sse.MetricReconnects].Count; diff < 0 || diff > 5 {
		t.Errorf("connects %d, reconnects %d: want 0 to 5 more connects, one first connect per stream",
			m[sse.MetricConnect].Count, m[sse.MetricReconnects].Count)
	}
}

// TestBadValueIsReportedAtLoad: the config reports a bad SSE value at its
// attribute, before any load is sent. In-process only: the config validates
// with the built-in at load, before any target is isolated.
func TestBadValueIsReportedAtLoad(t *testing.T) {
	reg := protocols.NewRegistry(http.New(), sse.New())
	_, diags := config.Parse(map[string][]byte{"test.hcl": []byte(`
target "n" {
  protocol = "sse"
  base_url = "http://127.0.0.1:1"
}
scenario "s" {
  executor   = "iterations"
  vus        = 1
  iterations = 1
  request "sub" {
    path     = "/s/${vu.id}"
    duration = "soon"
  }
}
`)}, t.TempDir(), config.Options{Protocols: reg})
	if len(diags) != 1 || diags[0].Subject == nil || diags[0].Subject.Start.Line != 12 ||
		!strings.Contains(diags[0].Summary, "duration") || !strings.Contains(diags[0].Detail, `"soon" is not a duration`) {
		t.Fatalf("diagnostics: %v", diags)
	}
}

// TestExampleValidates: examples/sse-notifications.hcl loads. In-process
// only: loading calls no protocol across the wire.
func TestExampleValidates(t *testing.T) {
	reg := protocols.NewRegistry(http.New(), sse.New())
	_, diags := config.Load([]string{filepath.Join("..", "..", "examples", "sse-notifications.hcl")}, config.Options{
		Protocols: reg,
		DemoURL:   func() (string, error) { return "http://127.0.0.1:1", nil },
	})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
}

// abortTest: one subscriber holds its stream for a planned 20 s while a
// sender posts a burst of 10 notifications after a 2 s lead, shorter than
// miss_grace; the server drops some of them, and then nothing more comes.
// The abort threshold on sse_events_missed must end the run.
const abortTest = `
target "api" {
  base_url = "%[1]s"
}

target "notify" {
  protocol = "sse"
  base_url = "%[1]s"
}

scenario "subscriber" {
  executor = "constant-vus"
  vus      = 1
  duration = "%[2]s"
  target   = "notify"

  request "subscribe" {
    path         = "/api/notification/subscribe/1"
    delivery_key = "1"
    id_field     = "id"
    miss_grace   = "300ms"
  }
}

scenario "sender" {
  executor   = "ramping-arrival-rate"
  start_rate = 0
  stages = [
    { duration = "2s", target = 0 },
    { duration = "1ms", target = 50 },
    { duration = "200ms", target = 50 },
  ]
  pre_allocated_vus = 5
  target            = "api"

  request "send" {
    method   = "POST"
    path     = "/api/notification/send"
    let      = { id = "${vu.id}-${vu.iteration}" }
    json     = { userId = 1, id = let.id }
    delivery = { key = "1", id = let.id }
  }
}

threshold {
  metric    = "sse_events_missed"
  condition = "count == 0"
  abort     = true
}
`

// TestMissedEventsAbortASilentRun: the server drops deliveries, then goes
// silent; the missed events are counted while the stream is held, so the
// abort threshold fires and the run ends long before its planned end. In
// the missed count, as many as the server dropped.
func TestMissedEventsAbortASilentRun(t *testing.T) {
	if testing.Short() {
		t.Skip("an end-to-end run of a few seconds per path; skipped with -short")
	}
	protocoltest.Run(t, sse.New(), missedEventsAbortASilentRun)
}

func missedEventsAbortASilentRun(t *testing.T, path protocoltest.Path, p protocols.Protocol) {
	srv, err := demo.Start(context.Background(), "127.0.0.1:0", demo.Options{NotificationDropEvery: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	const planned = 20 * time.Second
	began := time.Now()
	sum := runOn(t, fmt.Sprintf(abortTest, srv.URL(), planned), nil, path, p)
	took := time.Since(began)

	var st demo.NotificationStats
	resp, err := nethttp.Get(srv.URL() + "/api/notification/stats")
	if err != nil {
		t.Fatal(err)
	}
	json.NewDecoder(resp.Body).Decode(&st)
	resp.Body.Close()
	m := sum.Metrics
	sent := sum.Scenarios["sender"].Requests["send"]
	t.Logf("run took %s of a planned %s, aborted %q; sent %d; server delivered %d, dropped %d; stream: events %d, missed %d",
		took.Round(time.Millisecond), planned, sum.Aborted, sent.Count, st.Delivered, st.Dropped, m[sse.MetricEvents].Count, m[sse.MetricEventsMissed].Count)
	if st.Dropped == 0 || st.Delivered+st.Failed != sent.Count {
		t.Fatalf("server delivered %d, failed %d (dropped %d) of %d sends: want some dropped, all accounted", st.Delivered, st.Failed, st.Dropped, sent.Count)
	}
	if sum.Aborted == "" || sum.Passed || took > planned/2 {
		t.Errorf("the run took %s of a planned %s, aborted %q, passed %v: want it aborted by sse_events_missed long before its end",
			took.Round(time.Millisecond), planned, sum.Aborted, sum.Passed)
	}
	if got := m[sse.MetricEventsMissed].Count; got < 1 || got > st.Dropped {
		t.Errorf("missed %d, the server dropped %d: want 1 to all of them", got, st.Dropped)
	}
	if got := m[sse.MetricEvents].Count; got != st.Delivered {
		t.Errorf("events %d, the server delivered %d", got, st.Delivered)
	}
}
