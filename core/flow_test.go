package core

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hload/hload/config"
	"github.com/hload/hload/metrics"
	"github.com/hload/hload/protocols"
	"github.com/hload/hload/protocols/delivery"
	hloadhttp "github.com/hload/hload/protocols/http"
)

// journeyResult is a run's summary.
type journeyResult struct {
	sum *metrics.Summary
}

// flow returns the figures of a flow, failing the test when there are none.
func (j journeyResult) flow(t *testing.T, scenario, name string) *metrics.FlowFigures {
	t.Helper()
	f := j.sum.Scenarios[scenario].Flows[name]
	if f == nil {
		t.Fatalf("no figures of flow %q in scenario %q: %v", name, scenario, j.sum.Scenarios[scenario].Flows)
	}
	return f
}

// request returns the figures of a request, failing the test when there
// are none.
func (j journeyResult) request(t *testing.T, scenario, name string) *metrics.RequestFigures {
	t.Helper()
	r := j.sum.Scenarios[scenario].Requests[name]
	if r == nil {
		t.Fatalf("no figures of request %q in scenario %q", name, scenario)
	}
	return r
}

// runJourney runs a test through Run's lifecycle, as Run does, with the
// setup's backoff shortened to backoff (when not zero), and returns its
// summary.
func runJourney(t *testing.T, test *config.Test, backoff time.Duration, sinks ...Sink) journeyResult {
	t.Helper()
	return runJourneyWith(t, test, backoff, Options{Sinks: sinks})
}

// runJourneyWith is runJourney with Options.
func runJourneyWith(t *testing.T, test *config.Test, backoff time.Duration, opts Options) journeyResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ctx = delivery.WithLedger(ctx, delivery.NewLedger())
	opts.Protocols = protocols.NewRegistry(hloadhttp.New())
	r, err := openRun(ctx, test, opts)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	defer r.close()
	if backoff > 0 {
		for _, sc := range r.scenarios {
			sc.setupBackoff = backoff
		}
	}
	if _, err := r.startSinks(); err != nil {
		t.Fatal(err)
	}
	r.runScenarios()
	r.drain()
	sum := r.summarise()
	if err := r.closeSinks(sum); err != nil {
		t.Fatal(err)
	}
	return journeyResult{sum: sum}
}

// shop is a loopback shop that checks every value a journey carries: a
// token issued at login, a product id listed to that token, a cart named
// in a header of the list, the session cookie set at login, the status of
// the list, and the order id of the last order, sent with the next list.
type shop struct {
	*httptest.Server
	mu        sync.Mutex
	logins    map[string]int      // by user
	tokens    map[string]string   // token -> user
	last      map[string]string   // token -> last order id
	listed    map[string][]string // token -> product ids listed
	cart      map[string]string   // token -> cart of the last list
	lists     int
	orders    int
	bad       []string // what was wrong with a request, the first few
	badCount  int
	nextID    int64
	nextToken int
}

func newShop(t *testing.T) *shop {
	s := &shop{logins: map[string]int{}, tokens: map[string]string{}, last: map[string]string{},
		listed: map[string][]string{}, cart: map[string]string{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /login", s.login)
	mux.HandleFunc("GET /list", s.list)
	mux.HandleFunc("POST /buy/{product}", s.buy)
	s.Server = httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

func (s *shop) wrong(format string, args ...any) {
	s.badCount++
	if len(s.bad) < 5 {
		s.bad = append(s.bad, fmt.Sprintf(format, args...))
	}
}

func (s *shop) login(w http.ResponseWriter, r *http.Request) {
	var in struct{ User string }
	json.NewDecoder(r.Body).Decode(&in)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.logins[in.User]++
	s.nextToken++
	token := fmt.Sprintf("tok-%d", s.nextToken)
	s.tokens[token] = in.User
	s.last[token] = "none"
	// Another cookie first: the capture must pick the one it names.
	http.SetCookie(w, &http.Cookie{Name: "theme", Value: "dark"})
	http.SetCookie(w, &http.Cookie{Name: "session", Value: "sess-" + token})
	json.NewEncoder(w).Encode(map[string]string{"token": token, "last": "none"})
}

// auth returns the request's token, or "" after noting it as wrong. The
// caller holds mu.
func (s *shop) auth(r *http.Request) string {
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if _, known := s.tokens[token]; !ok || !known {
		s.wrong("%s %s: token %q was never issued", r.Method, r.URL.Path, token)
		return ""
	}
	return token
}

func (s *shop) list(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lists++
	token := s.auth(r)
	if token == "" {
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	if got, want := r.URL.Query().Get("last"), s.last[token]; got != want {
		s.wrong("list by %s: last order %q, the last order of that token was %q", token, got, want)
	}
	// Above 2^53, where a float64 would round it.
	s.nextID++
	id := strconv.FormatInt(9007199254740993+2*s.nextID, 10)
	s.listed[token] = append(s.listed[token], id)
	cart := fmt.Sprintf("cart-%d", s.nextID)
	s.cart[token] = cart
	w.Header().Set("X-Cart", cart)
	fmt.Fprintf(w, `{"items":[{"id":%s,"name":"p"}]}`, id)
}

func (s *shop) buy(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.orders++
	token := s.auth(r)
	if token == "" {
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	product := r.PathValue("product")
	if listed := s.listed[token]; len(listed) == 0 || listed[len(listed)-1] != product {
		s.wrong("order by %s of product %q, which is not the last one listed to it", token, product)
	}
	if got := r.Header.Get("X-Cart"); got != s.cart[token] {
		s.wrong("order by %s with cart %q, want %q", token, got, s.cart[token])
	}
	if got := r.Header.Get("X-Session"); got != "sess-"+token {
		s.wrong("order by %s with session %q", token, got)
	}
	if got := r.Header.Get("X-List-Status"); got != "200" {
		s.wrong("order by %s with list status %q", token, got)
	}
	order := fmt.Sprintf("o-%d", s.orders)
	s.last[token] = order
	fmt.Fprintf(w, "<p>Thank you. order=%s</p>", order)
}

const journeyHCL = loopbackTarget + `scenario "shop" {
  executor = "constant-vus"
  vus      = 4
  duration = "1s"
  setup {
    request "login" {
      method = "POST"
      path   = "/login"
      json   = { user = "vu-${vu.id}" }
      capture {
        token   = json("token")
        last    = json("last")
        session = cookie("session")
      }
    }
  }
  flow "order" {
    request "list" {
      path    = "/list"
      query   = { last = vu.vars.last }
      headers = { Authorization = "Bearer ${vu.vars.token}" }
      capture {
        product = json("items.0.id")
        cart    = header("x-cart")
        status  = status()
      }
    }
    request "buy" {
      method = "POST"
      path   = "/buy/${vu.vars.product}"
      headers = {
        Authorization = "Bearer ${vu.vars.token}"
        X-Cart        = vu.vars.cart
        X-Session     = vu.vars.session
        X-List-Status = "${vu.vars.status}"
      }
      capture {
        last = regex("order=(o-[0-9]+)")
      }
    }
  }
}
`

// TestJourneyCarriesCaptures: values captured by setup (json, cookie) reach
// every iteration, values captured by a step (json, header, status) reach
// the next step, and a value captured by the last step (regex) reaches the
// first step of the VU's next iteration. The shop checks each one, and
// counts what it received.
func TestJourneyCarriesCaptures(t *testing.T) {
	s := newShop(t)
	res := runJourney(t, loadTest(t, journeyHCL, map[string]string{"base_url": s.URL}), 0)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.badCount > 0 {
		t.Errorf("the shop found %d wrong requests, such as %q", s.badCount, s.bad)
	}
	if len(s.logins) != 4 {
		t.Errorf("the shop saw logins of %d users, want 4: %v", len(s.logins), s.logins)
	}
	for user, n := range s.logins {
		if n != 1 {
			t.Errorf("%s logged in %d times", user, n)
		}
	}
	order := res.flow(t, "shop", "order")
	list, buy := res.request(t, "shop", "list"), res.request(t, "shop", "buy")
	if buy.Count != int64(s.orders) || list.Count != int64(s.lists) || s.orders < 20 {
		t.Errorf("hload counted %d lists and %d orders, the shop %d and %d", list.Count, buy.Count, s.lists, s.orders)
	}
	if order.Completed != int64(s.orders) || order.Failed != 0 || list.Errors+buy.Errors != 0 {
		t.Errorf("flow order: %+v; list errors %v, buy errors %v; the shop took %d orders", order, list.ErrorsByKind, buy.ErrorsByKind, s.orders)
	}
	if setup := res.flow(t, "shop", metrics.SetupFlow); setup.Completed != 4 || setup.Failed != 0 {
		t.Errorf("flow setup: %+v, want 4 completed", setup)
	}
	t.Logf("the shop took %d logins, %d lists, %d orders; hload counted %d orders in %d flows", len(s.logins), s.lists, s.orders, buy.Count, order.Count)
}

// failingList answers a list with its items left out every 5th time, and
// checks that no order follows such a list from the same VU.
type failingList struct {
	*httptest.Server
	mu       sync.Mutex
	lists    int
	omitted  int
	orders   int
	after    int             // orders that followed an omitted list
	lastGone map[string]bool // by VU: its last list had no items
}

func newFailingList(t *testing.T) *failingList {
	f := &failingList{lastGone: map[string]bool{}}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		vu := r.Header.Get("X-VU")
		f.mu.Lock()
		defer f.mu.Unlock()
		switch r.URL.Path {
		case "/list":
			f.lists++
			gone := f.lists%5 == 0
			f.lastGone[vu] = gone
			if gone {
				f.omitted++
				w.Write([]byte(`{"items":[]}`))
				return
			}
			w.Write([]byte(`{"items":[{"id":7}]}`))
		case "/buy":
			f.orders++
			if f.lastGone[vu] {
				f.after++
			}
		}
	}))
	t.Cleanup(f.Close)
	return f
}

// TestFailedCaptureStopsTheFlow: a list without the captured field fails
// with the kind capture and a message naming the capture, and ends its
// flow: the server never gets an order after such a list. With
// on_failure = "continue" the flow goes on, and is still counted failed.
func TestFailedCaptureStopsTheFlow(t *testing.T) {
	for _, tc := range []struct {
		name, onFailure string
		stops           bool
	}{
		{"stop by default", "", true},
		{"continue", `on_failure = "continue"`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFailingList(t)
			test := loadTest(t, loopbackTarget+`scenario "shop" {
  executor   = "iterations"
  vus        = 3
  iterations = 40
  flow "order" {
    request "list" {
      path    = "/list"
      headers = { X-VU = "${vu.id}" }
      capture {
        product = json("items.0.id")
      }
      `+tc.onFailure+`
    }
    request "buy" {
      method  = "POST"
      path    = "/buy"
      headers = { X-VU = "${vu.id}" }
    }
  }
}
`, map[string]string{"base_url": f.URL})
			res := runJourney(t, test, 0)
			f.mu.Lock()
			defer f.mu.Unlock()
			list, buy := res.request(t, "shop", "list"), res.request(t, "shop", "buy")
			order := res.flow(t, "shop", "order")
			if f.lists != 120 || f.omitted != 24 {
				t.Fatalf("the server got %d lists and left the items out of %d, want 120 and 24", f.lists, f.omitted)
			}
			if got := list.ErrorsByKind[string(errCapture)]; got != int64(f.omitted) || list.Errors != got {
				t.Errorf("list: %d capture errors (%d errors in all), the server left the field out %d times", got, list.Errors, f.omitted)
			}
			msgs := list.ErrorMessages[string(errCapture)]
			if want := `capture "product": json path "items.0.id" found nothing`; len(msgs) != 1 || msgs[0] != want {
				t.Errorf("messages %q, want [%q]", msgs, want)
			}
			if order.Failed != int64(f.omitted) || order.FailedByKind[string(errCapture)] != int64(f.omitted) ||
				order.Completed != int64(f.lists-f.omitted) {
				t.Errorf("flow order: %+v; the server left the field out of %d lists of %d", order, f.omitted, f.lists)
			}
			wantOrders := f.lists
			if tc.stops {
				wantOrders = f.lists - f.omitted
				if f.after != 0 {
					t.Errorf("%d orders came after a list whose capture failed", f.after)
				}
			} else if f.after != f.omitted {
				t.Errorf("%d orders came after a failed list, want all %d", f.after, f.omitted)
			}
			if f.orders != wantOrders || buy.Count != int64(f.orders) {
				t.Errorf("the server got %d orders, hload counted %d, want %d", f.orders, buy.Count, wantOrders)
			}
			t.Logf("lists %d, left out %d, orders %d, orders after a failed capture %d; flow %d completed, %d failed %v",
				f.lists, f.omitted, f.orders, f.after, order.Completed, order.Failed, order.FailedByKind)
		})
	}
}

// timedServer answers /a after 20 ms and /b after 30 ms, and keeps, by
// its own clock, when each flow's a arrived and its b was answered.
type timedServer struct {
	*countingServer
	mu    sync.Mutex
	spans map[string]*[2]time.Time // by VU and iteration
}

func newTimedServer(t *testing.T) *timedServer {
	ts := &timedServer{spans: map[string]*[2]time.Time{}}
	ts.countingServer = newCountingServer(t, func(w http.ResponseWriter, r *http.Request) {
		key := r.Header.Get("X-Flow")
		switch r.URL.Path {
		case "/a":
			ts.mark(key, 0)
			time.Sleep(20 * time.Millisecond)
		case "/b":
			time.Sleep(30 * time.Millisecond)
			defer ts.mark(key, 1)
		}
		w.Write([]byte("ok"))
	})
	return ts
}

func (ts *timedServer) mark(key string, i int) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.spans[key] == nil {
		ts.spans[key] = new([2]time.Time)
	}
	ts.spans[key][i] = time.Now()
}

// meanSpan is the mean time, in milliseconds, from the arrival of a flow's
// first request to the answer of its last, as the server saw them.
func (ts *timedServer) meanSpan() (float64, int) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	var total time.Duration
	n := 0
	for _, sp := range ts.spans {
		if !sp[0].IsZero() && !sp[1].IsZero() {
			total += sp[1].Sub(sp[0])
			n++
		}
	}
	return float64(total) / float64(time.Millisecond) / float64(max(1, n)), n
}

// meanThink is the mean think time the flows took, in milliseconds: from
// the end of each a to the start of the b of the same iteration, as the
// raw records time them. A think time is a timer, which the Go runtime on
// Linux wakes up to about a millisecond late, more on a busy machine.
func meanThink(t *testing.T, rec *rawRecorder) float64 {
	t.Helper()
	rec.rawMu.Lock()
	defer rec.rawMu.Unlock()
	type key struct{ vu, iteration uint64 }
	ends := map[key]time.Time{}
	for _, r := range rec.raw {
		if r.Request == "a" {
			ends[key{r.VU, r.Iteration}] = r.Time
		}
	}
	var total time.Duration
	n := 0
	for _, r := range rec.raw {
		if end, ok := ends[key{r.VU, r.Iteration}]; ok && r.Request == "b" {
			total += r.Time.Add(-r.Latency).Sub(end)
			n++
		}
	}
	if n == 0 {
		t.Fatal("no raw records of a flow's two steps")
	}
	return float64(total) / float64(time.Millisecond) / float64(n)
}

// flowSteps is the flow of two steps, a and b, with think time between.
const flowSteps = `
  flow "f" {
    think_time = "%s"
    request "a" {
      path    = "/a"
      headers = { X-Flow = "${vu.id}/${vu.iteration}" }
    }
    request "b" {
      path    = "/b"
      headers = { X-Flow = "${vu.id}/${vu.iteration}" }
    }
  }
`

// TestFlowDurationIsStepsPlusThinkTime: a flow's duration is its steps'
// latencies plus the think time between them: against a server that
// takes 20 ms and 30 ms, with 40 ms of think time, the mean flow duration
// is within 1 ms of the mean latencies of the two requests of the same
// run plus the mean think time the raw records show. It also holds what
// the server saw of each flow, from the first request's arrival to the
// last one's answer.
func TestFlowDurationIsStepsPlusThinkTime(t *testing.T) {
	srv := newTimedServer(t)
	test := loadTest(t, loopbackTarget+`scenario "s" {
  executor   = "iterations"
  vus        = 2
  iterations = 12
`+fmt.Sprintf(flowSteps, "40ms")+`}
`, map[string]string{"base_url": srv.URL})
	rec := &rawRecorder{}
	res := runJourney(t, test, 0, rec)
	f := res.flow(t, "s", "f")
	a, b := res.request(t, "s", "a"), res.request(t, "s", "b")
	if f.Completed != 24 || srv.count("/b") != 24 || a.Count != 24 || b.Count != 24 {
		t.Fatalf("flow %+v, a %d, b %d; the server got %d of b, want 24 of each", f, a.Count, b.Count, srv.count("/b"))
	}
	think := meanThink(t, rec)
	steps := a.Latency.Mean + think + b.Latency.Mean
	if d := f.Duration.Mean - steps; math.Abs(d) > 1 || think < 40 {
		t.Errorf("mean flow duration %.3f ms, the steps' mean latencies plus think time %.3f ms (think %.3f): %.3f ms apart",
			f.Duration.Mean, steps, think, d)
	}
	span, n := srv.meanSpan()
	if n != 24 || span > f.Duration.Mean*1.001 {
		t.Errorf("the server saw %d flows take %.3f ms on average, longer than hload's %.3f ms", n, span, f.Duration.Mean)
	}
	t.Logf("flow duration mean %.3f ms = a %.3f + think %.3f + b %.3f = %.3f, %+.3f ms; the server saw %.3f ms; p50 %.3f, max %.3f",
		f.Duration.Mean, a.Latency.Mean, think, b.Latency.Mean, steps, f.Duration.Mean-steps, span, f.Duration.P50, f.Duration.Max)
}

// TestOpenModelFlowFromPlannedStart: in the open model a flow is timed
// from its planned start. One VU gets flows faster than it can run them,
// so they start late; the flow duration is then the first step's response
// time (from the planned start), the think time and the second step's
// latency, and it exceeds the service times by the start lateness.
func TestOpenModelFlowFromPlannedStart(t *testing.T) {
	srv := newTimedServer(t)
	test := loadTest(t, loopbackTarget+`scenario "s" {
  executor          = "constant-arrival-rate"
  rate              = 20
  duration          = "1s"
  pre_allocated_vus = 1
  max_vus           = 1
  max_queue_wait    = "10s"
`+fmt.Sprintf(flowSteps, "10ms")+`}
`, map[string]string{"base_url": srv.URL})
	rec := &rawRecorder{}
	res := runJourney(t, test, 0, rec)
	f := res.flow(t, "s", "f")
	a, b := res.request(t, "s", "a"), res.request(t, "s", "b")
	if f.Completed != b.Count || int64(srv.count("/b")) != b.Count || f.Completed < 5 {
		t.Fatalf("flow %+v; hload counted %d of b, the server %d", f, b.Count, srv.count("/b"))
	}
	late := a.Metrics[metrics.MetricStartLateness]
	service := a.Metrics[metrics.MetricServiceTime]
	if b.Metrics[metrics.MetricStartLateness].Count != 0 {
		t.Errorf("the second step has a start lateness: only the flow's start is planned")
	}
	if late.Mean < 50 {
		t.Fatalf("the flows started %.3f ms late on average: too few to tell", late.Mean)
	}
	think := meanThink(t, rec)
	steps := a.Latency.Mean + think + b.Latency.Mean
	if d := f.Duration.Mean - steps; math.Abs(d) > 1 {
		t.Errorf("mean flow duration %.3f ms, the first step's response time plus think time plus the second's %.3f ms: %.3f ms apart",
			f.Duration.Mean, steps, d)
	}
	served := service.Mean + think + b.Latency.Mean
	if d := f.Duration.Mean - served - late.Mean; math.Abs(d) > 1 {
		t.Errorf("mean flow duration %.3f ms, service times plus think time %.3f ms, start lateness %.3f ms: %.3f ms unaccounted",
			f.Duration.Mean, served, late.Mean, d)
	}
	if span, _ := srv.meanSpan(); span+late.Mean > f.Duration.Mean*1.001 {
		t.Errorf("the server saw flows take %.3f ms after starting %.3f ms late, hload's flow duration is %.3f ms",
			span, late.Mean, f.Duration.Mean)
	}
	t.Logf("%d flows; duration mean %.3f ms; a's response time %.3f (service %.3f, late %.3f), think %.3f, b %.3f",
		f.Completed, f.Duration.Mean, a.Latency.Mean, service.Mean, late.Mean, think, b.Latency.Mean)
}

// TestStartedFlowFinishesInGracefulStop: a flow in its think time between
// steps when the scenario ends finishes within the graceful stop; one
// whose graceful stop runs out sends no more steps and fails as
// interrupted.
func TestStartedFlowFinishesInGracefulStop(t *testing.T) {
	for _, tc := range []struct {
		name, graceful string
		finishes       bool
	}{
		{"finishes", "5s", true},
		{"interrupted", "50ms", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newCountingServer(t, nil)
			test := loadTest(t, loopbackTarget+`scenario "s" {
  executor      = "constant-vus"
  vus           = 3
  duration      = "100ms"
  graceful_stop = "`+tc.graceful+`"
  flow "f" {
    think_time = "400ms"
    request "a" {
      path = "/a"
    }
    request "b" {
      path = "/b"
    }
  }
}
`, map[string]string{"base_url": srv.URL})
			res := runJourney(t, test, 0)
			f := res.flow(t, "s", "f")
			sentA, sentB := srv.count("/a"), srv.count("/b")
			if sentA != 3 {
				t.Fatalf("the server got %d of a, want one per VU", sentA)
			}
			if tc.finishes {
				if sentB != 3 || f.Completed != 3 {
					t.Errorf("the server got %d of b, %d flows completed; want every started flow to finish", sentB, f.Completed)
				}
				return
			}
			if b := res.request(t, "s", "b"); sentB != 0 || b.Count != 0 || f.Failed != 3 || f.FailedByKind[string(protocols.ErrInterrupted)] != 3 {
				t.Errorf("the server got %d of b, hload tried %d; flow %+v; want no b and 3 flows interrupted", sentB, b.Count, f)
			}
		})
	}
}

// TestFlowStepsShareTheRow: an iteration takes one row of each feeder its
// steps use, so both steps of a flow send the same row, and consecutive
// iterations walk the rows.
func TestFlowStepsShareTheRow(t *testing.T) {
	var mu sync.Mutex
	last := map[string]string{} // by VU: the row of its last a
	mismatched, rows := 0, map[string]bool{}
	srv := newCountingServer(t, func(w http.ResponseWriter, r *http.Request) {
		vu, row := r.Header.Get("X-VU"), r.URL.Query().Get("row")
		mu.Lock()
		defer mu.Unlock()
		if r.URL.Path == "/a" {
			last[vu] = row
			rows[row] = true
		} else if last[vu] != row {
			mismatched++
		}
	})
	dir := t.TempDir()
	var csv strings.Builder
	csv.WriteString("id\n")
	for i := range 50 {
		fmt.Fprintf(&csv, "%d\n", i)
	}
	if err := os.WriteFile(filepath.Join(dir, "rows.csv"), []byte(csv.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	test, diags := config.Load([]string{writeHCL(t, dir, loopbackTarget+`data "csv" "rows" {
  path = "rows.csv"
  mode = "unique"
}
scenario "s" {
  executor   = "iterations"
  vus        = 2
  iterations = 25
  flow "f" {
    request "a" {
      path    = "/a"
      query   = { row = data.rows.id }
      headers = { X-VU = "${vu.id}" }
    }
    request "b" {
      path    = "/b"
      query   = { row = data.rows.id }
      headers = { X-VU = "${vu.id}" }
    }
  }
}
`)}, config.Options{
		Protocols: protocols.NewRegistry(hloadhttp.New()),
		Vars:      map[string]string{"base_url": srv.URL},
	})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	res := runJourney(t, test, 0)
	mu.Lock()
	defer mu.Unlock()
	if mismatched != 0 || len(rows) != 50 || srv.count("/b") != 50 {
		t.Errorf("%d b sent another row than their a; %d distinct rows of 50; %d of b", mismatched, len(rows), srv.count("/b"))
	}
	if f := res.flow(t, "s", "f"); f.Completed != 50 {
		t.Errorf("flow: %+v, want 50 completed", f)
	}
}

// TestMixWeighsFlowsAndRequests: the picker weighs flows and bare
// requests together, exactly over each cycle: 300 iterations of a flow of
// weight 2 and a request of weight 1 are 200 runs of the flow, each
// sending both its steps, and 100 of the request, as the server counts.
func TestMixWeighsFlowsAndRequests(t *testing.T) {
	srv := newCountingServer(t, nil)
	test := loadTest(t, loopbackTarget+`scenario "s" {
  executor   = "iterations"
  vus        = 3
  iterations = 100
  flow "f" {
    weight = 2
    request "a" {
      path = "/a"
    }
    request "b" {
      path = "/b"
    }
  }
  request "home" {
    path = "/home"
  }
}
`, map[string]string{"base_url": srv.URL})
	res := runJourney(t, test, 0)
	if a, b, home := srv.count("/a"), srv.count("/b"), srv.count("/home"); a != 200 || b != 200 || home != 100 {
		t.Errorf("the server got %d of a, %d of b and %d of home, want 200, 200 and 100", a, b, home)
	}
	if f := res.flow(t, "s", "f"); f.Completed != 200 || res.sum.Scenarios["s"].Iterations != 300 {
		t.Errorf("flow f: %+v in %d iterations, want 200 completed in 300", f, res.sum.Scenarios["s"].Iterations)
	}
	if _, ok := res.sum.Scenarios["s"].Flows["home"]; ok {
		t.Errorf("a bare request has flow figures")
	}
}

// TestFailedCaptureStillDelivered: a capture that finds nothing fails its
// request, but the send went through, as the protocol said: the ledger
// still expects its id, so a subscriber that never receives it counts it
// missed. Ten ids are received; the other thirty are missed.
func TestFailedCaptureStillDelivered(t *testing.T) {
	p := &sendProtocol{accepted: map[string]bool{}}
	test := loadWith(t, `
target "t" { protocol = "send" }
scenario "s" {
  executor   = "iterations"
  vus        = 2
  iterations = 20
  request "r" {
    status   = 200
    id       = "${vu.id}-${vu.iteration}"
    delivery = { key = "k", id = "${vu.id}-${vu.iteration}" }
    capture {
      trace = header("X-Trace")
    }
  }
}
`, p)
	l := delivery.NewLedger()
	w := l.Watch("k")
	sum, err := Run(delivery.WithLedger(context.Background(), l), test, Options{Protocols: protocols.NewRegistry(p)})
	if err != nil {
		t.Fatal(err)
	}
	r := sum.Scenarios["s"].Requests["r"]
	if r.Count != 40 || r.ErrorsByKind[string(errCapture)] != 40 || len(p.accepted) != 40 {
		t.Fatalf("%d calls, errors %v, %d accepted: want 40 calls, each accepted and each failing its capture", r.Count, r.ErrorsByKind, len(p.accepted))
	}
	for i := range 10 {
		if got := w.Received([]byte(fmt.Sprintf("1-%d", i))); got != delivery.ReceiptFirst {
			t.Fatalf("id 1-%d: receipt %v, want the first receipt of an expected id", i, got)
		}
	}
	if missed := w.Close(time.Now().Add(time.Hour), 0); missed != 30 {
		t.Errorf("%d expected ids missed, want the 30 accepted and not received", missed)
	}
}

// TestEvalFailureStopsTheFlow: a step whose expressions fail at run time
// (here a captured object put in a path) fails with the kind eval and
// stops its flow, which fails with that kind; the server never gets the
// next step. A step that says to go on lets the flow go on.
func TestEvalFailureStopsTheFlow(t *testing.T) {
	for _, tc := range []struct {
		name, onFailure string
		wantC           int
	}{
		{"stop", "", 0},
		{"continue", `on_failure = "continue"`, 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newCountingServer(t, func(w http.ResponseWriter, r *http.Request) {
				w.Write([]byte(`{"user":{"name":"ann"}}`))
			})
			test := loadTest(t, loopbackTarget+`scenario "s" {
  executor   = "iterations"
  vus        = 2
  iterations = 5
  flow "f" {
    request "a" {
      path = "/a"
      capture {
        user = json("user")
      }
    }
    request "b" {
      path = "/b/${vu.vars.user}"
      `+tc.onFailure+`
    }
    request "c" {
      path = "/c"
    }
  }
}
`, map[string]string{"base_url": srv.URL})
			res := runJourney(t, test, 0)
			b, f := res.request(t, "s", "b"), res.flow(t, "s", "f")
			if srv.count("/a") != 10 || b.Count != 10 || b.ErrorsByKind["eval"] != 10 || len(b.ErrorMessages["eval"]) == 0 {
				t.Errorf("the server got %d of a; b: %d calls, errors %v, messages %v; want 10 eval errors with a reason",
					srv.count("/a"), b.Count, b.ErrorsByKind, b.ErrorMessages)
			}
			if srv.count("/c") != tc.wantC || f.Failed != 10 || f.FailedByKind["eval"] != 10 {
				t.Errorf("the server got %d of c, want %d; flow %+v, want 10 failed of kind eval", srv.count("/c"), tc.wantC, f)
			}
		})
	}
}
