// Package dashboard is hload's live dashboard: `hload apply --dashboard
// ADDR` serves, for the life of the run, a page with the HTML report's
// charts that it updates every interval, a Server-Sent Events stream of
// the intervals (/events), and at the end the summary (/summary.json)
// and the HTML report (/report.html).
//
// It is a core.Sink and a core.Watcher: it reads the interval snapshots
// every sink gets, with the run so far the core adds for a watcher, and
// nothing else. A viewer never slows the run: Write only queues the
// event, and a viewer that stops reading is dropped after viewerTimeout.
package dashboard

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/r3labs/sse/v2"

	"github.com/hload/hload/core"
	"github.com/hload/hload/metrics"
	"github.com/hload/hload/sinks/html"
	"github.com/hload/hload/sinks/series"
)

// stream is the one SSE stream the server has: the run's intervals.
const stream = "run"

// viewerTimeout is how long a write to one viewer may block before the
// viewer is dropped: a viewer that reads nothing holds the stream's
// fan-out only that long, once (see viewerWriter).
const viewerTimeout = 2 * time.Second

// queued is how many events may wait for the fan-out; at one event per
// interval it is never full unless the fan-out stopped for an hour.
const queued = 4096

// Options configure a dashboard.
type Options struct {
	// Addr is where it listens, host:port.
	Addr string
	// Token, when set, is required by every request: as a Bearer
	// Authorization header, or the token query parameter (a browser's
	// EventSource sends no header). Without it Addr must be loopback.
	Token string
	// Plans are the run's scenarios as planned (core.Plan): the stage
	// boundaries and the planned load the charts draw.
	Plans []core.ScenarioPlan
	// Series returns the run's series at its end, for the summary and
	// the report (the collector the summary export reads too); nil for
	// none.
	Series func() *metrics.IntervalSeries
}

// CheckAddr checks that addr is host:port and, without a token, that the
// host is loopback: the dashboard shows a run's figures, targets and
// errors to whoever can reach it. Its errors leave naming addr to the
// caller, which says where it came from (a flag, a variable).
func CheckAddr(addr, token string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("not host:port (for example 127.0.0.1:5665): %v", err)
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return fmt.Errorf("port %q is not a number from 0 to 65535", port)
	}
	if token != "" {
		return nil
	}
	if !isLoopback(host) {
		return errors.New("not a loopback address: anyone who reaches it would see the run; set --dashboard-token (or HLOAD_DASHBOARD_TOKEN) to serve it there, or listen on 127.0.0.1")
	}
	return nil
}

func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Sink is the dashboard. It implements core.Sink and core.Watcher.
type Sink struct {
	opts   Options
	ln     net.Listener
	srv    *http.Server
	events *sse.Server
	page   []byte
	// viewers are those reading /events now.
	viewers atomic.Int64

	fanned chan struct{} // closed when the fan-out has published all
	run    metrics.RunInfo

	mu      sync.Mutex
	queue   chan *sse.Event // events for the fan-out, in order; nil after Shutdown
	next    int             // the next event's id
	summary []byte          // the summary JSON, once the run has ended
	report  []byte          // the HTML report, once the run has ended
	lost    int             // events the queue had no room for
}

var (
	_ core.Sink    = (*Sink)(nil)
	_ core.Watcher = (*Sink)(nil)
)

// Listen checks the address (CheckAddr), listens on it and starts
// serving, before any load: a port in use or a refused address fails the
// command, not the run's end.
func Listen(opts Options) (*Sink, error) {
	if err := CheckAddr(opts.Addr, opts.Token); err != nil {
		return nil, err
	}
	var page bytes.Buffer
	if err := html.RenderLive(&page); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", opts.Addr)
	if err != nil {
		return nil, err
	}
	s := &Sink{opts: opts, ln: ln, page: page.Bytes(), queue: make(chan *sse.Event, queued), fanned: make(chan struct{})}
	s.events = sse.New()
	// Every event is kept, so a viewer that joins late gets the run from
	// its start, and one that comes back gets what it missed.
	s.events.AutoReplay = true
	// Unbuffered: Publish returns once the stream has taken the event, so
	// after the last one, closing the stream loses none (its fan-out ends
	// the event it is on before it sees the close). The queue in front
	// keeps the run from waiting on it.
	s.events.BufferSize = 0
	s.events.OnSubscribe = func(string, *sse.Subscriber) { s.viewers.Add(1) }
	s.events.OnUnsubscribe = func(string, *sse.Subscriber) { s.viewers.Add(-1) }
	s.events.CreateStream(stream)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", s.servePage)
	mux.HandleFunc("GET /events", s.serveEvents)
	mux.HandleFunc("GET /summary.json", s.serveEnd("summary", "application/json", "",
		func(s *Sink) []byte { return s.summary }))
	mux.HandleFunc("GET /report.html", s.serveEnd("report", "text/html; charset=utf-8", `attachment; filename="hload-report.html"`,
		func(s *Sink) []byte { return s.report }))
	s.srv = &http.Server{Handler: s.guard(mux), ReadHeaderTimeout: 10 * time.Second}
	go s.srv.Serve(ln)
	// The queue is handed over here: Shutdown may clear s.queue before
	// this goroutine first runs.
	go s.fanOut(s.queue)
	return s, nil
}

// URL is the page's address.
func (s *Sink) URL() string { return "http://" + s.ln.Addr().String() + "/" }

// Viewers is how many viewers read /events now.
func (s *Sink) Viewers() int { return int(s.viewers.Load()) }

// WatchesRunSoFar asks the core for the run so far in every snapshot.
func (s *Sink) WatchesRunSoFar() {}

// Start notes the run.
func (s *Sink) Start(_ context.Context, run metrics.RunInfo) error {
	s.run = run
	return nil
}

// event is the data of one /events event: the interval's own figures
// and the run so far.
type event struct {
	// ID is the event's id, its SSE id too: 0 for the first interval.
	ID int `json:"id"`
	// Final marks the run's last interval; the summary and the report
	// follow at /summary.json and /report.html.
	Final    bool    `json:"final"`
	ElapsedS float64 `json:"elapsed_s"`
	// Interval is the interval as one point of the summary export's
	// series: requests/s, errors/s, latency percentiles, planned load,
	// VUs, protocol metrics, gauges, hload's own CPU and the warnings said.
	Interval *metrics.IntervalSeries `json:"interval"`
	// Capacity is where each capacity search stands.
	Capacity map[string]metrics.CapacityProgress `json:"capacity,omitempty"`
	// Warnings are those said in this interval.
	Warnings []string `json:"warnings,omitempty"`
	// The run so far, in the shape of the summary export, as of SoFarS
	// seconds: the core rebuilds it only while that takes under 1 % of
	// the run's time, so with many requests it may be a few intervals old.
	SoFarS     float64                             `json:"so_far_s"`
	RunID      string                              `json:"run_id"`
	Passed     bool                                `json:"passed"`
	Aborted    string                              `json:"aborted,omitempty"`
	Scenarios  map[string]*metrics.ScenarioSummary `json:"scenarios"`
	Metrics    map[string]metrics.MetricFigures    `json:"metrics"`
	Thresholds []metrics.ThresholdResult           `json:"thresholds"`
	Generator  *metrics.GeneratorFigures           `json:"generator,omitempty"`
}

// summaryEvent is the data of the stream's last event, named "summary":
// the summary export and the HTML report, once the run has ended.
type summaryEvent struct {
	Summary    json.RawMessage `json:"summary"`
	ReportHTML string          `json:"report_html"`
}

// Write queues the interval's event. It never blocks: a full queue (the
// fan-out stopped for thousands of intervals) loses the event, and the
// summary says so.
func (s *Sink) Write(snap metrics.Snapshot) error {
	data, err := s.eventData(snap)
	if err != nil {
		return fmt.Errorf("dashboard: %w", err)
	}
	s.enqueue(&sse.Event{Data: data})
	return nil
}

// enqueue hands ev to the fan-out without waiting: a full queue loses it,
// and Close says so.
func (s *Sink) enqueue(ev *sse.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case s.queue <- ev:
	default:
		s.lost++
	}
}

func (s *Sink) eventData(snap metrics.Snapshot) ([]byte, error) {
	// A collector of its own per interval: the interval as one point,
	// drawn by the same code as the report's series.
	c := series.New(s.opts.Plans)
	if err := c.Start(context.Background(), s.run); err != nil {
		return nil, err
	}
	if err := c.Write(snap); err != nil {
		return nil, err
	}
	s.mu.Lock()
	id := s.next
	s.next++
	s.mu.Unlock()
	ev := event{ID: id, Final: snap.Final, ElapsedS: snap.Elapsed.Seconds(), Interval: c.Series(),
		Capacity: snap.Capacity, Warnings: snap.Warnings}
	if so := snap.SoFar; so != nil {
		ev.SoFarS, ev.RunID, ev.Passed, ev.Aborted = so.DurationS, so.RunID, so.Passed, so.Aborted
		ev.Scenarios, ev.Metrics, ev.Thresholds, ev.Generator = so.Scenarios, so.Metrics, so.Thresholds, so.Generator
	}
	return json.Marshal(ev)
}

// fanOut publishes the queued events in order, until the queue closes.
func (s *Sink) fanOut(queue <-chan *sse.Event) {
	defer close(s.fanned)
	for ev := range queue {
		s.events.Publish(stream, ev)
	}
}

// Close keeps the summary and the report for /summary.json and
// /report.html. The server goes on until Shutdown.
func (s *Sink) Close(sum metrics.Summary) error {
	if s.opts.Series != nil {
		sum.Series = s.opts.Series()
	}
	data, err := series.IndentJSON(sum)
	if err != nil {
		return fmt.Errorf("dashboard: %w", err)
	}
	var report bytes.Buffer
	if err := html.Render(&report, &sum); err != nil {
		return fmt.Errorf("dashboard: %w", err)
	}
	// The page gets both on the stream too: with no --dashboard-linger the
	// server ends right after this, before a page could ask for them.
	// Marshal compacts the indented summary onto the event's one line.
	end, err := json.Marshal(summaryEvent{Summary: data, ReportHTML: report.String()})
	if err != nil {
		return fmt.Errorf("dashboard: %w", err)
	}
	s.enqueue(&sse.Event{Event: []byte("summary"), Data: end})
	s.mu.Lock()
	s.summary, s.report = append(data, '\n'), report.Bytes()
	lost := s.lost
	s.mu.Unlock()
	if lost > 0 {
		return fmt.Errorf("dashboard: %d interval(s) were not published: its viewers stopped reading for that long", lost)
	}
	return nil
}

// Shutdown ends the stream and the server: the viewers' connections
// close, and a browser's page keeps what it shows.
func (s *Sink) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	q := s.queue
	s.queue = nil
	s.mu.Unlock()
	if q != nil {
		close(q)
		select {
		case <-s.fanned:
		case <-ctx.Done():
		}
	}
	s.events.Close()
	err := s.srv.Shutdown(ctx)
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return s.srv.Close()
	}
	return err
}

// guard lets through only reads, with the token when there is one.
func (s *Sink) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Cache-Control", "no-store")
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "the dashboard is read-only", http.StatusMethodNotAllowed)
			return
		}
		if s.opts.Token != "" && !s.authorized(r) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="hload dashboard"`)
			http.Error(w, "this dashboard needs its token: ?token=... or Authorization: Bearer ...", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (s *Sink) authorized(r *http.Request) bool {
	got := r.URL.Query().Get("token")
	if h := r.Header.Get("Authorization"); strings.HasPrefix(h, "Bearer ") {
		got = strings.TrimPrefix(h, "Bearer ")
	}
	return subtle.ConstantTimeCompare([]byte(got), []byte(s.opts.Token)) == 1
}

func (s *Sink) servePage(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Write(s.page)
}

// serveEvents serves the stream with r3labs/sse. Two things it does its
// own way are set right here:
//   - Its event log numbers events from 0 and replays, to a viewer that
//     comes back with Last-Event-ID N, the events from N on: N again,
//     which that viewer already has. It is asked for those after N.
//   - It writes to a viewer with no deadline, and its fan-out waits for
//     every viewer: one that reads nothing would hold every viewer. A
//     write that blocks viewerTimeout fails here, which ends the viewer's
//     request and drops it.
func (s *Sink) serveEvents(w http.ResponseWriter, r *http.Request) {
	r2 := r.Clone(r.Context())
	if last := r.Header.Get("Last-Event-ID"); last != "" {
		n, err := strconv.Atoi(last)
		if err != nil || n < 0 {
			http.Error(w, "Last-Event-ID must be the id of an event this stream sent", http.StatusBadRequest)
			return
		}
		r2.Header.Set("Last-Event-ID", strconv.Itoa(n+1))
	}
	q := r2.URL.Query()
	q.Set("stream", stream)
	r2.URL.RawQuery = q.Encode()
	s.events.ServeHTTP(viewerWriter{w, http.NewResponseController(w)}, r2)
}

// viewerWriter gives every write and flush to one viewer a deadline.
type viewerWriter struct {
	http.ResponseWriter
	rc *http.ResponseController
}

func (v viewerWriter) Write(b []byte) (int, error) {
	v.rc.SetWriteDeadline(time.Now().Add(viewerTimeout))
	return v.ResponseWriter.Write(b)
}

func (v viewerWriter) Flush() {
	v.rc.SetWriteDeadline(time.Now().Add(viewerTimeout))
	v.rc.Flush()
}

// serveEnd serves what the run's end brings (the summary, the report),
// picked from the sink under its lock: 503 until the run has ended.
func (s *Sink) serveEnd(what, contentType, disposition string, pick func(*Sink) []byte) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		data := pick(s)
		s.mu.Unlock()
		if data == nil {
			http.Error(w, "the run has not ended: the "+what+" comes at its end", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", contentType)
		if disposition != "" {
			w.Header().Set("Content-Disposition", disposition)
		}
		w.Write(data)
	}
}
