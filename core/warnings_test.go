package core

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/zclconf/go-cty/cty"

	"github.com/hload/hload/config"
	"github.com/hload/hload/metrics"
	"github.com/hload/hload/protocols"
)

// faultProtocol fails the calls its request asks to fail, with the kind
// and message the request names, and counts its calls itself, so that the
// tests compare hload's figures with counts hload did not write. A call
// with ignore_cancel = true waits for release whatever its context says,
// as a protocol that ignores cancellation would.
type faultProtocol struct {
	calls   atomic.Int64
	failed  atomic.Int64
	release chan struct{}
	hanging atomic.Int64
}

func newFaultProtocol() *faultProtocol { return &faultProtocol{release: make(chan struct{})} }

func (p *faultProtocol) Describe() protocols.Info {
	return protocols.Info{
		Name:       "fault",
		TargetSpec: hcldec.ObjectSpec{},
		RequestSpec: hcldec.ObjectSpec{
			"kind":          &hcldec.AttrSpec{Name: "kind", Type: cty.String},
			"message":       &hcldec.AttrSpec{Name: "message", Type: cty.String},
			"ignore_cancel": &hcldec.AttrSpec{Name: "ignore_cancel", Type: cty.Bool},
		},
	}
}

func (p *faultProtocol) Open(context.Context, cty.Value) (protocols.Client, error) { return p, nil }

func (p *faultProtocol) Do(ctx context.Context, call protocols.Call, emit func(protocols.Sample)) {
	p.calls.Add(1)
	start := time.Now()
	if v := protocols.Attr(call.Request, "ignore_cancel"); !v.IsNull() && v.True() {
		p.hanging.Add(1)
		<-p.release
	}
	s := protocols.Sample{Metric: protocols.MetricRequest, Status: 200}
	if kind, _ := protocols.StringAttr(call.Request, "kind"); kind != "" {
		p.failed.Add(1)
		s.Status = 0
		s.Error = protocols.ErrorKind(kind)
		s.Message, _ = protocols.StringAttr(call.Request, "message")
	}
	s.Time = time.Now()
	s.Value = s.Time.Sub(start)
	emit(s)
}

func (p *faultProtocol) Close() error { return nil }

func runFault(t *testing.T, p *faultProtocol, src string, opts Options) (*metrics.Summary, error) {
	t.Helper()
	test := loadWith(t, "target \"t\" { protocol = \"fault\" }\n"+src, p)
	opts.Protocols = protocols.NewRegistry(p)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return Run(ctx, test, opts)
}

// TestErrorMessagesReachSummary: the first three distinct messages of each
// error kind are kept per request, in the summary and its JSON, however
// many calls fail.
func TestErrorMessagesReachSummary(t *testing.T) {
	p := newFaultProtocol()
	sum, err := runFault(t, p, `
scenario "s" {
  executor   = "iterations"
  vus        = 4
  iterations = 250
  request "bad" {
    weight  = 4
    kind    = "protocol"
    message = "value ${vu.iteration % 5} is not a duration"
  }
  request "slow" {
    weight  = 1
    kind    = "timeout"
    message = "no answer within 2s"
  }
}
`, Options{})
	if err != nil {
		t.Fatal(err)
	}
	reqs := sum.Scenarios["s"].Requests
	bad, slow := reqs["bad"], reqs["slow"]
	if bad.Errors+slow.Errors != p.failed.Load() || bad.Count+slow.Count != p.calls.Load() {
		t.Fatalf("summary errors %d of %d calls, the protocol failed %d of %d",
			bad.Errors+slow.Errors, bad.Count+slow.Count, p.failed.Load(), p.calls.Load())
	}
	msgs := bad.ErrorMessages["protocol"]
	if len(msgs) != metrics.MessagesPerKind || len(slices.Compact(slices.Sorted(slices.Values(msgs)))) != len(msgs) {
		t.Errorf("bad: kept %q, want %d distinct messages", msgs, metrics.MessagesPerKind)
	}
	for _, m := range msgs {
		if !strings.HasSuffix(m, " is not a duration") {
			t.Errorf("bad: message %q is not one the protocol gave", m)
		}
	}
	if got := slow.ErrorMessages; len(got) != 1 || !slices.Equal(got["timeout"], []string{"no answer within 2s"}) {
		t.Errorf("slow: kept %q, want the one timeout message", got)
	}
	data, err := json.Marshal(sum)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `"error_messages":{"timeout":["no answer within 2s"]}`) {
		t.Errorf("summary JSON lacks slow's error_messages:\n%s", data)
	}
	t.Logf("%d calls, %d failed; bad kept %q", p.calls.Load(), p.failed.Load(), msgs)
}

// TestEveryCallFailed: a request whose every call fails is named live and
// in the summary, and a run whose every call failed does not pass, unless
// a threshold on errors held (it must allow 100 %).
func TestEveryCallFailed(t *testing.T) {
	const scenario = `
scenario "s" {
  executor   = "iterations"
  vus        = 2
  iterations = 5
  request "r" {
    kind    = "connection_refused"
    message = "dial tcp 127.0.0.1:1: connect: connection refused"
  }
}
`
	for _, tc := range []struct {
		name      string
		threshold string
		passed    bool
	}{
		{"no threshold", "", false},
		{"latency threshold held", "threshold {\n metric = \"latency\"\n condition = \"p95 < 10s\"\n}\n", false},
		{"errors allowed", "threshold {\n metric = \"errors\"\n condition = \"rate <= 100%\"\n}\n", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newFaultProtocol()
			live := &snapshotSink{}
			sum, err := runFault(t, p, scenario+tc.threshold, Options{Sinks: []Sink{live}})
			if err != nil {
				t.Fatal(err)
			}
			r := sum.Scenarios["s"].Requests["r"]
			if r.Count != p.calls.Load() || r.Errors != p.failed.Load() || r.Count != 10 {
				t.Fatalf("summary %d errors of %d calls, protocol %d of %d, want 10 of 10", r.Errors, r.Count, p.failed.Load(), p.calls.Load())
			}
			if sum.Passed != tc.passed {
				t.Errorf("passed = %v, want %v; warnings %q", sum.Passed, tc.passed, sum.Warnings)
			}
			want := `scenario "s", request "r": every call failed (10 of 10: connection_refused 10): dial tcp 127.0.0.1:1: connect: connection refused`
			if !slices.Contains(sum.Warnings, want) {
				t.Errorf("warnings %q lack %q", sum.Warnings, want)
			}
			var said []string
			for _, snap := range live.snaps {
				said = append(said, withoutGenerator(snap.Warnings)...)
			}
			if len(said) != 1 || !strings.HasPrefix(said[0], `scenario "s", request "r": every call so far failed`) {
				t.Errorf("live warnings %q, want the request named once", said)
			}
		})
	}
}

// TestUniqueFeederRanOutIsWarned: a unique feeder that runs out ends its
// scenario before the plan; the run says so live and in the summary, with
// the iterations done and planned.
func TestUniqueFeederRanOutIsWarned(t *testing.T) {
	us, url := newUserServer(t)
	test := loadFeederTest(t, url, "unique", 300, `
scenario "signup" {
  executor   = "iterations"
  vus        = 3
  iterations = 200
  request "r" {
    path  = "/signup"
    query = { user = data.users.name }
  }
}`)
	live := &snapshotSink{}
	sum := runTest(t, test, Options{Sinks: []Sink{live}})
	us.mu.Lock()
	served := len(us.order)
	us.mu.Unlock()
	if served != 300 || sum.Scenarios["signup"].Iterations != 300 {
		t.Fatalf("server saw %d, summary %d iterations; want the 300 rows", served, sum.Scenarios["signup"].Iterations)
	}
	want := `scenario "signup": data feeder "users" (mode unique) ran out of rows: the scenario ended at 300 of 600 planned iterations`
	if !slices.Contains(sum.Warnings, want) {
		t.Errorf("warnings %q lack %q", sum.Warnings, want)
	}
	var said []string
	for _, snap := range live.snaps {
		said = append(said, withoutGenerator(snap.Warnings)...)
	}
	if len(said) != 1 || !strings.HasPrefix(said[0], `scenario "signup": data feeder "users" (mode unique) ran out of rows: the scenario ended at `) {
		t.Errorf("live warnings %q, want the feeder named once", said)
	}

	// A scenario that runs for a time says how far into it the rows ran
	// out.
	_, url = newUserServer(t)
	timed := loadFeederTest(t, url, "unique", 50, `
scenario "timed" {
  executor = "constant-vus"
  vus      = 2
  duration = "20s"
  request "r" {
    path  = "/timed"
    query = { user = data.users.name }
  }
}`)
	start := time.Now()
	sum = runTest(t, timed, Options{})
	want = `scenario "timed": data feeder "users" (mode unique) ran out of rows: the scenario ended after 50 iterations, `
	found := false
	for _, w := range sum.Warnings {
		found = found || strings.HasPrefix(w, want) && strings.HasSuffix(w, " into its planned 20s")
	}
	if !found || time.Since(start) > 10*time.Second {
		t.Errorf("after %v, warnings %q lack %q ... into its planned 20s", time.Since(start), sum.Warnings, want)
	}
}

// TestCallsIgnoringCancellation: calls that go on after the graceful stop
// ran out and they were cancelled do not hold the run forever: it ends
// cancelWait later, counts them and names their request and target.
func TestCallsIgnoringCancellation(t *testing.T) {
	p := newFaultProtocol()
	var once sync.Once
	release := func() { once.Do(func() { close(p.release) }) }
	defer release()
	type result struct {
		sum *metrics.Summary
		err error
	}
	done := make(chan result, 1)
	live := &snapshotSink{}
	start := time.Now()
	go func() {
		sum, err := runFault(t, p, `
scenario "s" {
  executor      = "constant-vus"
  vus           = 3
  duration      = "200ms"
  graceful_stop = "100ms"
  request "stuck" {
    ignore_cancel = true
  }
}
`, Options{Sinks: []Sink{live}})
		done <- result{sum, err}
	}()
	var res result
	select {
	case res = <-done:
	case <-time.After(10 * time.Second):
		release()
		t.Fatalf("the run did not end 10 s after its calls were cancelled (%d calls hang)", p.hanging.Load())
	}
	took := time.Since(start)
	if res.err != nil {
		t.Fatal(res.err)
	}
	hanging := p.hanging.Load()
	want := fmt.Sprintf(`scenario "s": %d calls ignored cancellation (%d of request "stuck" (target "t", protocol "fault")): still running 1s after the graceful stop ran out and they were cancelled`, hanging, hanging)
	found := false
	for _, w := range res.sum.Warnings {
		found = found || strings.HasPrefix(w, want)
	}
	if hanging != 3 || !found {
		t.Errorf("the protocol holds %d calls; warnings %q lack %q", hanging, res.sum.Warnings, want)
	}
	if n := res.sum.Scenarios["s"].Requests["stuck"].Count; n != 0 {
		t.Errorf("summary counts %d calls that never returned", n)
	}
	last := withoutGenerator(live.snaps[len(live.snaps)-1].Warnings)
	if len(last) != 1 || !strings.HasPrefix(last[0], want) {
		t.Errorf("last snapshot's warnings %q lack %q", last, want)
	}
	// What the calls report once released is dropped, not recorded into
	// a summary already out.
	release()
	t.Logf("ended %v after start (200ms + 100ms graceful stop + %v); %d calls ignored cancellation", took.Round(time.Millisecond), cancelWait, hanging)
}

// TestLastIntervalRate: calls held until their scenario ends all finish
// within milliseconds after the last tick. The run's last snapshot then
// puts its rate over itself and the interval before it, a real length,
// not over its few milliseconds.
func TestLastIntervalRate(t *testing.T) {
	p := &sendProtocol{accepted: map[string]bool{}}
	var calls atomic.Int64
	counting := &countingProtocol{Protocol: p, calls: &calls}
	test := loadWith(t, `
target "t" { protocol = "send" }
scenario "s" {
  executor = "constant-vus"
  vus      = 40
  duration = "1s"
  request "r" {
    hold = true
  }
}
`, counting)
	live := &snapshotSink{}
	sum, err := Run(context.Background(), test, Options{Protocols: protocols.NewRegistry(counting), Sinks: []Sink{live},
		Interval: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if n := sum.Scenarios["s"].Requests["r"].Count; n != calls.Load() || n != 40 {
		t.Fatalf("summary %d calls, protocol %d, want 40", n, calls.Load())
	}
	var total int64
	for _, snap := range live.snaps {
		total += snap.Series[0].Count
	}
	last := live.snaps[len(live.snaps)-1]
	if !last.Final || total != 40 {
		t.Fatalf("last snapshot final %v; snapshots add up to %d calls, want 40", last.Final, total)
	}
	f := last.Series[0]
	length := last.End.Sub(last.Start)
	over := last.End.Sub(last.RateStart)
	t.Logf("last snapshot: %d calls in %v; rate %.1f/s over %v", f.Count, length.Round(time.Microsecond), f.RPS, over.Round(time.Millisecond))
	// 40 calls over the run's second: a rate of 40 to 80 a second. Over a
	// few milliseconds they would read as thousands.
	if f.RPS > 100 {
		t.Errorf("last interval: %d calls in %v read as %.0f/s", f.Count, length, f.RPS)
	}
	if len(live.snaps) > 1 {
		prev := live.snaps[len(live.snaps)-2]
		if length < 500*time.Millisecond && !last.RateStart.Equal(prev.Start) {
			t.Errorf("a last interval of %v has its rate from %v, want the previous interval's start", length, last.RateStart.Sub(prev.Start))
		}
	}
}

// countingProtocol counts the calls of the protocol it wraps.
type countingProtocol struct {
	protocols.Protocol
	calls *atomic.Int64
}

func (c *countingProtocol) Open(ctx context.Context, v cty.Value) (protocols.Client, error) {
	client, err := c.Protocol.Open(ctx, v)
	return &countingClient{Client: client, calls: c.calls}, err
}

type countingClient struct {
	protocols.Client
	calls *atomic.Int64
}

func (c *countingClient) Do(ctx context.Context, call protocols.Call, emit func(protocols.Sample)) {
	c.calls.Add(1)
	c.Client.Do(ctx, call, emit)
}

// closeFailingSink fails on Close, as a CSV file on a full disk does.
type closeFailingSink struct{ snapshotSink }

var errDiskFull = errors.New("write out.csv: no space left on device")

func (s *closeFailingSink) Close(metrics.Summary) error { return errDiskFull }

// TestSinkFailureFailsSummary: a sink that fails at the end makes the
// summary say so, with passed false, before the sinks closed after it (the
// console, first in the list, is closed last) and the caller get it.
func TestSinkFailureFailsSummary(t *testing.T) {
	p := newFaultProtocol()
	first, failing := &snapshotSink{}, &closeFailingSink{}
	sum, err := runFault(t, p, `
scenario "s" {
  executor   = "iterations"
  vus        = 1
  iterations = 3
  request "r" {}
}
`, Options{Sinks: []Sink{first, failing}})
	if !errors.Is(err, errDiskFull) {
		t.Fatalf("Run's error = %v, want the sink's", err)
	}
	if sum.Passed || !slices.Equal(sum.SinkErrors, []string{errDiskFull.Error()}) {
		t.Errorf("summary passed %v, sink errors %q; want false and the sink's error", sum.Passed, sum.SinkErrors)
	}
	if first.sum.Passed || len(first.sum.SinkErrors) != 1 {
		t.Errorf("the sink closed last got passed %v, sink errors %q", first.sum.Passed, first.sum.SinkErrors)
	}
	if n := sum.Scenarios["s"].Requests["r"].Count; n != 3 || p.calls.Load() != 3 {
		t.Errorf("summary %d calls, protocol %d, want 3", n, p.calls.Load())
	}
}

// TestEvalErrorsReachSummary: an expression that fails at run time for
// some rows (jsondecode of a bad value) is an error of kind eval, never
// sent; its message is kept with the other kinds' and the summary warns,
// with the counts.
func TestEvalErrorsReachSummary(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "rows.csv"), []byte("payload\n1\n2\nx\n4\ny\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := newFaultProtocol()
	test, diags := config.Load([]string{writeHCL(t, dir, `
data "csv" "rows" {
  path = "rows.csv"
  mode = "sequential"
}
target "t" { protocol = "fault" }
scenario "s" {
  executor   = "iterations"
  vus        = 1
  iterations = 10
  request "r" {
    message = tostring(jsondecode(data.rows.payload))
  }
}
`)}, config.Options{Protocols: protocols.NewRegistry(p)})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	sum, err := Run(context.Background(), test, Options{Protocols: protocols.NewRegistry(p)})
	if err != nil {
		t.Fatal(err)
	}
	r := sum.Scenarios["s"].Requests["r"]
	if r.Count != 10 || r.ErrorsByKind["eval"] != 4 || p.calls.Load() != 6 {
		t.Fatalf("summary %d calls, errors %v; the protocol got %d: want 10, eval 4, and the 6 good rows sent", r.Count, r.ErrorsByKind, p.calls.Load())
	}
	msgs := r.ErrorMessages["eval"]
	if len(msgs) == 0 || !strings.Contains(msgs[0], "jsondecode") {
		t.Errorf("eval messages %q, want the expression's error", msgs)
	}
	want := `scenario "s", request "r": expressions failed at run time in 4 of 10 calls: `
	found := false
	for _, w := range sum.Warnings {
		found = found || strings.HasPrefix(w, want)
	}
	if !found {
		t.Errorf("warnings %q lack %q", sum.Warnings, want)
	}
	t.Logf("eval messages kept: %q", msgs)
}

// withoutGenerator leaves out the warnings that hload itself was
// saturated: on a busy test machine they may join any run's warnings,
// and the tests that count warnings are about others.
func withoutGenerator(warnings []string) []string {
	var out []string
	for _, w := range warnings {
		if !strings.HasPrefix(w, "hload is saturated") && !strings.HasPrefix(w, "hload was saturated") {
			out = append(out, w)
		}
	}
	return out
}
