package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hload/hload/config"
	"github.com/hload/hload/demo"
	"github.com/hload/hload/metrics"
)

// dashboardEventsTest is a 6 s closed-model run against the demo shop.
const dashboardEventsTest = `
variable "base_url" {}
target "shop" {
  base_url = var.base_url
}
scenario "browse" {
  executor   = "constant-vus"
  vus        = 3
  duration   = "6s"
  think_time = "20ms"
  request "main" {
    weight = 3
    path   = "/"
  }
  request "list" {
    path = "/products"
  }
}
`

// sseEvent is one event of /events as a plain SSE client reads it: an
// interval's (no name), or the run's summary at the end (name "summary").
type sseEvent struct {
	id   int
	name string
	data dashboardEvent // an interval's
	raw  []byte
}

// dashboardEvent is the part of an event's data the tests read.
type dashboardEvent struct {
	ID        int                                 `json:"id"`
	Final     bool                                `json:"final"`
	ElapsedS  float64                             `json:"elapsed_s"`
	Scenarios map[string]*metrics.ScenarioSummary `json:"scenarios"`
}

// readEvents reads the events of an SSE response, by the format's rules
// (fields up to a blank line; id and data), until it ends or stop says
// so; each goes to got.
func readEvents(t *testing.T, body io.Reader, got func(sseEvent) (more bool)) {
	t.Helper()
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	var id, name string
	var data []string
	for sc.Scan() {
		line := sc.Text()
		if line != "" {
			field, value, _ := strings.Cut(line, ":")
			value = strings.TrimPrefix(value, " ")
			switch field {
			case "id":
				id = value
			case "event":
				name = value
			case "data":
				data = append(data, value)
			}
			continue
		}
		if len(data) == 0 {
			continue
		}
		n, err := strconv.Atoi(id)
		if err != nil {
			t.Errorf("an event with id %q", id)
			return
		}
		ev := sseEvent{id: n, name: name, raw: []byte(strings.Join(data, "\n"))}
		if name == "" {
			if err := json.Unmarshal(ev.raw, &ev.data); err != nil {
				t.Errorf("event %d: %v", n, err)
				return
			}
		}
		id, name, data = "", "", nil
		if !got(ev) {
			return
		}
	}
}

// eventLog is what one client read: the intervals' events, in order, and
// the summary event.
type eventLog struct {
	intervals []sseEvent
	summary   []byte
}

// keep keeps ev; it always wants more.
func (l *eventLog) keep(ev sseEvent) bool {
	if ev.name == "summary" {
		l.summary = ev.raw
	} else {
		l.intervals = append(l.intervals, ev)
	}
	return true
}

// urlWriter is a command's stderr that hands on the dashboard's address
// when the command prints it.
type urlWriter struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	sent bool
	url  chan string
}

var dashboardLine = regexp.MustCompile(`live dashboard at (http://\S+/)`)

func (w *urlWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if m := dashboardLine.FindSubmatch(w.buf.Bytes()); m != nil && !w.sent {
		w.sent = true
		w.url <- string(m[1])
	}
	return len(p), nil
}

func (w *urlWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// countingShop is the demo shop behind a count of its own.
func countingShop(t *testing.T) (*httptest.Server, *atomic.Int64) {
	shop := demo.NewHandler(demo.Options{Seed: 1})
	var served atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served.Add(1)
		shop.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, &served
}

// startDashboardRun starts `hload apply --dashboard 127.0.0.1:0` on file
// with args, and returns the dashboard's address and the exit code to come.
func startDashboardRun(t *testing.T, args ...string) (string, <-chan int, *urlWriter) {
	t.Helper()
	stderr := &urlWriter{url: make(chan string, 1)}
	code := make(chan int, 1)
	go func() {
		var stdout bytes.Buffer
		code <- run(append([]string{"apply", "--quiet", "--dashboard", "127.0.0.1:0"}, args...), &stdout, stderr)
	}()
	select {
	case u := <-stderr.url:
		return u, code, stderr
	case c := <-code:
		t.Fatalf("apply exit %d before its dashboard started:\n%s", c, stderr.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("no dashboard 30 s after apply began:\n%s", stderr.String())
	}
	return "", nil, nil
}

// TestDashboardEvents (issue 25, must show 2): three plain SSE clients
// read /events during a 6 s run. One reads from the start: one event per
// interval (the export's series has a point per interval), ids in order,
// cumulative counts that never decrease, and the last equals the
// summary's, which equals the server's own count. One disconnects after
// two events and comes back with Last-Event-ID: it gets every interval
// once. One joins at 3 s: it gets the first intervals too.
func TestDashboardEvents(t *testing.T) {
	srv, served := countingShop(t)
	dir := t.TempDir()
	export := filepath.Join(dir, "result.json")
	file := writeFile(t, dir, "test.hcl", dashboardEventsTest)
	base, exit, stderr := startDashboardRun(t, "--summary-export", export, "--var", "base_url="+srv.URL, file)

	// open opens /events; the clients run on goroutines of their own,
	// so a failure is an error, and the client gives up.
	open := func(lastID int) *http.Response {
		req, err := http.NewRequest("GET", base+"events", nil)
		if err != nil {
			t.Error(err)
			return nil
		}
		if lastID >= 0 {
			req.Header.Set("Last-Event-ID", strconv.Itoa(lastID))
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Error(err)
			return nil
		}
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
			t.Errorf("/events: %s, %q", resp.Status, resp.Header.Get("Content-Type"))
			resp.Body.Close()
			return nil
		}
		return resp
	}

	var wg sync.WaitGroup
	var first, resumed, late eventLog
	reachedThree := make(chan struct{})
	first1 := open(-1)
	if first1 == nil {
		t.FailNow()
	}
	wg.Go(func() {
		defer first1.Body.Close()
		said := false
		readEvents(t, first1.Body, func(ev sseEvent) bool {
			first.keep(ev)
			if !said && ev.name == "" && ev.data.ElapsedS >= 3 {
				said = true
				close(reachedThree)
			}
			return true
		})
		if !said {
			close(reachedThree)
		}
	})
	wg.Go(func() {
		resp := open(-1)
		if resp == nil {
			return
		}
		readEvents(t, resp.Body, func(ev sseEvent) bool { return resumed.keep(ev) && len(resumed.intervals) < 2 })
		resp.Body.Close() // gone for a while
		if len(resumed.intervals) == 0 {
			t.Error("the stream ended before its first event")
			return
		}
		time.Sleep(1500 * time.Millisecond)
		if resp = open(resumed.intervals[len(resumed.intervals)-1].id); resp == nil {
			return
		}
		defer resp.Body.Close()
		readEvents(t, resp.Body, resumed.keep)
	})
	wg.Go(func() {
		<-reachedThree
		resp := open(-1)
		if resp == nil {
			return
		}
		defer resp.Body.Close()
		readEvents(t, resp.Body, late.keep)
	})
	if c := <-exit; c != 0 {
		t.Fatalf("apply exit %d:\n%s", c, stderr.String())
	}
	wg.Wait() // the streams end with the command
	if t.Failed() {
		t.FailNow()
	}

	sum := exportedSummary(t, export)
	intervals := len(sum.Series.TimeS)
	if sum.Series.Merged != 1 || intervals < 6 {
		t.Fatalf("the export's series: %d points of %d intervals", intervals, sum.Series.Merged)
	}
	// Every call is a request the server counted.
	var calls int64
	for _, r := range sum.Scenarios["browse"].Requests {
		calls += r.Count
	}
	if got := served.Load(); got != calls || calls == 0 {
		t.Fatalf("the server served %d requests, the summary counts %d calls", got, calls)
	}

	check := func(name string, evs []sseEvent) {
		t.Helper()
		if len(evs) != intervals {
			t.Fatalf("%s: %d events for %d intervals", name, len(evs), intervals)
		}
		before := map[string]int64{}
		for i, ev := range evs {
			if ev.id != i || ev.data.ID != i {
				t.Fatalf("%s: event %d has id %d (data %d): an interval missed or repeated", name, i, ev.id, ev.data.ID)
			}
			// The export's series has a point per interval, at the same time.
			if got, want := ev.data.ElapsedS, sum.Series.TimeS[i]; fmt.Sprintf("%.3f", got) != fmt.Sprintf("%.3f", want) {
				t.Fatalf("%s: event %d ends at %.3f s, the export's point %d at %.3f s", name, i, got, i, want)
			}
			if ev.data.Final != (i == intervals-1) {
				t.Fatalf("%s: event %d of %d: final %v", name, i, intervals, ev.data.Final)
			}
			for r, fig := range ev.data.Scenarios["browse"].Requests {
				if fig.Count < before[r] {
					t.Fatalf("%s: event %d: %s's count went down from %d to %d", name, i, r, before[r], fig.Count)
				}
				before[r] = fig.Count
			}
		}
		for r, fig := range sum.Scenarios["browse"].Requests {
			if before[r] != fig.Count {
				t.Fatalf("%s: the last event counts %d calls of %s, the summary %d", name, before[r], r, fig.Count)
			}
		}
	}
	check("from the start", first.intervals)
	check("resumed with Last-Event-ID", resumed.intervals)
	check("joined at 3 s", late.intervals)
	// After the last interval, each client got the summary and the report
	// on the stream: the dashboard may end right after.
	for i, raw := range [][]byte{first.summary, resumed.summary, late.summary} {
		var end struct {
			Summary    metrics.Summary `json:"summary"`
			ReportHTML string          `json:"report_html"`
		}
		if err := json.Unmarshal(raw, &end); err != nil {
			t.Fatalf("client %d's summary event: %v (%d bytes)", i, err, len(raw))
		}
		for r, fig := range sum.Scenarios["browse"].Requests {
			if got := end.Summary.Scenarios["browse"].Requests[r]; got == nil || got.Count != fig.Count {
				t.Fatalf("client %d's summary event: %s %+v, the export counts %d", i, r, got, fig.Count)
			}
		}
		if !strings.Contains(end.ReportHTML, "<title>hload report") {
			t.Fatalf("client %d's summary event has no report: %.200q", i, end.ReportHTML)
		}
	}
	if late.intervals[0].data.ElapsedS >= 3 {
		t.Fatalf("the client that joined at 3 s did not get the first intervals: %+v", late.intervals[0])
	}
	t.Logf("%d intervals, %d calls counted by the server and in every client's last event", intervals, calls)
}

// TestDashboardAddressAndToken (issue 25, must show 3): a non-loopback
// --dashboard without a token exits 2 before any load reaches the server;
// with a token, a request without it gets 401, and with it the page.
func TestDashboardAddressAndToken(t *testing.T) {
	srv, served := countingShop(t)
	dir := t.TempDir()
	file := writeFile(t, dir, "test.hcl", strings.Replace(dashboardEventsTest, `"6s"`, `"2s"`, 1))
	for _, addr := range []string{"0.0.0.0:0", ":0", "192.0.2.1:5665", "[::]:0"} {
		var stdout, stderr bytes.Buffer
		code := run([]string{"apply", "--quiet", "--dashboard", addr, "--var", "base_url=" + srv.URL, file}, &stdout, &stderr)
		if code != exitUsage || !strings.Contains(stderr.String(), "not a loopback address") || !strings.Contains(stderr.String(), "--dashboard-token") {
			t.Fatalf("--dashboard %s without a token: exit %d\n%s", addr, code, stderr.String())
		}
	}
	// A port in use is found before any load, too.
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	{
		var stdout, stderr bytes.Buffer
		code := run([]string{"apply", "--quiet", "--dashboard", busy.Addr().String(), "--var", "base_url=" + srv.URL, file}, &stdout, &stderr)
		if code != exitUsage || !strings.Contains(stderr.String(), "--dashboard: ") || !strings.Contains(stderr.String(), "address already in use") {
			t.Fatalf("--dashboard on a port in use: exit %d\n%s", code, stderr.String())
		}
	}
	t.Setenv(envDashboard, "0.0.0.0:0")
	var stdout, stderr bytes.Buffer
	if code := run([]string{"apply", "--quiet", "--var", "base_url=" + srv.URL, file}, &stdout, &stderr); code != exitUsage || !strings.Contains(stderr.String(), envDashboard) {
		t.Fatalf("%s=0.0.0.0:0 without a token: exit %d\n%s", envDashboard, code, stderr.String())
	}
	if n := served.Load(); n != 0 {
		t.Fatalf("the server got %d requests from runs that should not have started", n)
	}

	// With a token, on all addresses; the test reaches it on loopback.
	t.Setenv(envDashboard, "")
	const token = "s3cret-token"
	t.Setenv(envDashboardToken, token)
	stderrW := &urlWriter{url: make(chan string, 1)}
	exit := make(chan int, 1)
	go func() {
		var stdout bytes.Buffer
		exit <- run([]string{"apply", "--quiet", "--dashboard", "0.0.0.0:0", "--dashboard-linger", "3s", "--var", "base_url=" + srv.URL, file}, &stdout, stderrW)
	}()
	var base string
	select {
	case base = <-stderrW.url:
	case c := <-exit:
		t.Fatalf("apply exit %d:\n%s", c, stderrW.String())
	}
	base = strings.Replace(base, "0.0.0.0", "127.0.0.1", 1)
	base = strings.Replace(base, "[::]", "127.0.0.1", 1)
	if strings.Contains(stderrW.String(), token) {
		t.Fatalf("the token is printed:\n%s", stderrW.String())
	}
	get := func(path string, header bool) int {
		t.Helper()
		req, _ := http.NewRequest("GET", base+path, nil)
		if header {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		resp, err := http.DefaultClient.Do(req.WithContext(ctx))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, path := range []string{"", "events", "summary.json", "report.html", "?token=wrong", "events?token=" + token[:len(token)-1]} {
		if code := get(path, false); code != http.StatusUnauthorized {
			t.Errorf("GET /%s without the token: %d, want 401", path, code)
		}
	}
	if code := get("?token="+token, false); code != 200 {
		t.Errorf("GET /?token=...: %d", code)
	}
	if code := get("", true); code != 200 {
		t.Errorf("GET / with Authorization: Bearer: %d", code)
	}
	// It is read-only.
	req, _ := http.NewRequest("POST", base+"?token="+token, strings.NewReader("x"))
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST: %v %v", resp, err)
	}
	// Lingering: the summary is there after the run, for 3 s more.
	deadline := time.Now().Add(30 * time.Second)
	for get("summary.json", true) != 200 {
		if time.Now().After(deadline) {
			t.Fatal("no summary 30 s after the start of a 2 s run")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if c := <-exit; c != 0 {
		t.Fatalf("apply exit %d:\n%s", c, stderrW.String())
	}
}

// TestDashboardNeverShowsASecret: the secrets of sensitiveTest, echoed
// back by the server into every failed call's message, reach none of
// what the dashboard serves: the events, the summary, the report. The
// echo does, redacted.
func TestDashboardNeverShowsASecret(t *testing.T) {
	srv, _ := reflectingServer(t)
	dir := t.TempDir()
	test := sensitiveTest[:strings.Index(sensitiveTest, `sink "csv"`)]
	file := writeFile(t, dir, "test.hcl", test)
	t.Setenv("HLOAD_VAR_env_token", envSecret)
	t.Setenv("HLOAD_TEST_API_TOKEN", apiSecret)
	base, exit, stderr := startDashboardRun(t, "--dashboard-linger", "3s", "--var", "base_url="+srv.URL,
		"--var", "influx_url=http://127.0.0.1:1", "--var", "flag_token="+flagSecret, file)

	resp, err := http.Get(base + "events")
	if err != nil {
		t.Fatal(err)
	}
	var events bytes.Buffer
	sc := bufio.NewScanner(io.TeeReader(resp.Body, &events))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() && !strings.Contains(sc.Text(), `"final":true`) {
	}
	resp.Body.Close()
	outputs := map[string]string{"/events": events.String()}
	for _, path := range []string{"", "summary.json", "report.html"} {
		var body []byte
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			resp, err := http.Get(base + path)
			if err != nil {
				t.Fatal(err)
			}
			body, _ = io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == 200 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("/%s: %s 30 s after the run", path, resp.Status)
			}
		}
		outputs["/"+path] = string(body)
	}
	for name, text := range outputs {
		for _, secret := range secretForms {
			if strings.Contains(text, secret) {
				t.Errorf("%s holds %q:\n%s", name, secret, excerpt(text, secret))
			}
		}
	}
	for _, name := range []string{"/events", "/summary.json"} {
		if !strings.Contains(outputs[name], "500 echo "+config.Redacted) {
			t.Errorf("%s does not show the echoed message, redacted", name)
		}
	}
	// Every call failed: exit 99, after the linger.
	if c := <-exit; c != 99 {
		t.Fatalf("apply exit %d, want 99:\n%s", c, stderr.String())
	}
}
