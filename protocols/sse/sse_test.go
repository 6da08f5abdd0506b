package sse

import (
	"context"
	"fmt"
	"net"
	nethttp "net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/zclconf/go-cty/cty"

	"github.com/hload/hload/plugins/protocoltest"
	"github.com/hload/hload/protocols"
)

// samples collects what a call emits.
type samples struct {
	mu  sync.Mutex
	all []protocols.Sample
}

func (s *samples) emit(smp protocols.Sample) {
	s.mu.Lock()
	s.all = append(s.all, smp)
	s.mu.Unlock()
}

func (s *samples) count(metric string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, smp := range s.all {
		if smp.Metric == metric {
			n++
		}
	}
	return n
}

func (s *samples) of(metric string) []protocols.Sample {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []protocols.Sample
	for _, smp := range s.all {
		if smp.Metric == metric {
			out = append(out, smp)
		}
	}
	return out
}

func (s *samples) request(t *testing.T) protocols.Sample {
	t.Helper()
	s.checkDeclared(t)
	rs := s.of(protocols.MetricRequest)
	if len(rs) != 1 {
		t.Fatalf("%d request samples, want 1", len(rs))
	}
	return rs[0]
}

// declared is the protocol's Info.Metrics, as a set.
var declared = func() map[string]bool {
	m := map[string]bool{}
	for _, name := range New().Describe().Metrics {
		m[name] = true
	}
	return m
}()

// checkDeclared fails the test for every metric emitted that Info.Metrics
// does not name: a threshold on it would be refused at load.
func (s *samples) checkDeclared(t *testing.T) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, smp := range s.all {
		if smp.Metric != protocols.MetricRequest && !declared[smp.Metric] {
			t.Errorf("metric %q is emitted but not in Info.Metrics", smp.Metric)
		}
	}
}

// open returns a client of a target at baseURL, opened through p: the
// protocol as the test's path reaches it (protocoltest.Run).
func open(t *testing.T, p protocols.Protocol, baseURL string) protocols.Client {
	t.Helper()
	c, err := p.Open(context.Background(), target(map[string]cty.Value{
		"base_url": cty.StringVal(baseURL),
		"timeout":  cty.StringVal("5s"),
	}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// gauger returns c as a protocols.Gauger, as the core reads it.
func gauger(t *testing.T, c protocols.Client) protocols.Gauger {
	t.Helper()
	g, ok := c.(protocols.Gauger)
	if !ok {
		t.Fatalf("client %T reports no gauges", c)
	}
	return g
}

// openStreams reads the open-streams gauge; -1 when the client reported
// none (an isolated client before the plugin's first report).
func openStreams(g protocols.Gauger) int64 {
	n := int64(-1)
	g.Gauges(func(name string, v int64) {
		if !slices.Contains(New().Describe().Gauges, name) {
			panic("gauge " + name + " is not in Info.Gauges")
		}
		if name == GaugeOpenStreams {
			n = v
		}
	})
	return n
}

// waitOpenStreams waits up to within for c's open-streams gauge to read
// want, and fails the test with what it read last if it does not.
func waitOpenStreams(t *testing.T, c protocols.Client, want int64, within time.Duration, what string) {
	t.Helper()
	g := gauger(t, c)
	deadline := time.Now().Add(within)
	for {
		n := openStreams(g)
		if n == want {
			return
		}
		if !time.Now().Before(deadline) {
			t.Fatalf("open streams %s = %d, want %d", what, n, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// gaugeLag is how stale the open-streams gauge may read on path once the
// streams changed. In-process it is the client's own count: none. Isolated,
// the plugin sends its client's gauges at most every 250 ms (plugins/sdk,
// gaugeEvery) and the host reads its last report, which the contract allows
// (protocols.Gauger is read once per 1 s interval); the margin is for -race.
func gaugeLag(path protocoltest.Path) time.Duration {
	if path.Isolated {
		return 5 * time.Second
	}
	return 0
}

// target builds a target value with every attribute of the spec, as the
// config hands it over (Protocol.Open: it conforms to Info.TargetSpec); the
// plugin wire encodes it with the spec's type, so it needs them all.
func target(attrs map[string]cty.Value) cty.Value {
	obj := map[string]cty.Value{}
	for k, spec := range targetSpec() {
		obj[k] = cty.NullVal(hcldec.ImpliedType(spec))
	}
	for k, v := range attrs {
		obj[k] = v
	}
	return cty.ObjectVal(obj)
}

// request builds a request value with every attribute of the spec.
func request(attrs map[string]cty.Value) cty.Value {
	obj := map[string]cty.Value{}
	for k, spec := range requestSpec() {
		obj[k] = cty.NullVal(hcldec.ImpliedType(spec))
	}
	for k, v := range attrs {
		obj[k] = v
	}
	return cty.ObjectVal(obj)
}

func str(s string) cty.Value { return cty.StringVal(s) }

// sseHandler serves a script per connection: n is the connection's number
// from 1, lastID the Last-Event-ID it sent. The script writes frames with
// send, which flushes.
func sseHandler(script func(n int, lastID string, send func(string), r *nethttp.Request)) nethttp.Handler {
	var mu sync.Mutex
	conns := 0
	return nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
		mu.Lock()
		conns++
		n := conns
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		rc := nethttp.NewResponseController(w)
		rc.Flush()
		script(n, r.Header.Get("Last-Event-ID"), func(frame string) {
			fmt.Fprint(w, frame)
			rc.Flush()
		}, r)
	})
}

// holdUntilGone keeps a stream open until the client leaves.
func holdUntilGone(r *nethttp.Request) { <-r.Context().Done() }

func TestStreamMeasures(t *testing.T) {
	protocoltest.Run(t, New(), func(t *testing.T, path protocoltest.Path, p protocols.Protocol) {
		srv := httptest.NewServer(sseHandler(func(_ int, _ string, send func(string), r *nethttp.Request) {
			send(": hello\n\n")
			for i := range 5 {
				send(fmt.Sprintf("id: %d\nevent: note\ndata: {\"id\":\"e%d\",\ndata: \"sentAt\":%d}\n\n", i, i, time.Now().UnixMicro()))
				time.Sleep(5 * time.Millisecond)
			}
			holdUntilGone(r)
		}))
		defer srv.Close()
		c := open(t, p, srv.URL)
		var got samples
		c.Do(context.Background(), protocols.Call{VU: 1, Request: request(map[string]cty.Value{
			"path":          str("/events"),
			"events":        cty.NumberIntVal(5),
			"id_field":      str("id"),
			"sent_at_field": str("sentAt"),
		})}, got.emit)

		req := got.request(t)
		if req.Error != protocols.ErrNone || req.Status != 200 || req.BytesReceived < 200 || req.BytesSent < 50 {
			t.Errorf("request sample %+v: want a success with bytes", req)
		}
		for metric, want := range map[string]int{
			MetricConnect: 1, MetricFirstEvent: 1, MetricEventGap: 4, MetricEvents: 5,
			MetricDeliveryLatency: 5, MetricExtractErrors: 0, MetricMalformed: 0, MetricDisconnects: 0,
		} {
			if n := got.count(metric); n != want {
				t.Errorf("%s: %d samples, want %d", metric, n, want)
			}
		}
		for _, s := range got.of(MetricEventGap) {
			if s.Value <= 0 {
				t.Errorf("event gap %s", s.Value)
			}
		}
		// Read at once in-process; isolated, the plugin's next report.
		waitOpenStreams(t, c, 0, gaugeLag(path), "after the call")
	})
}

// TestOpenStreamsGauge: the open-streams gauge counts the streams held,
// and reads 0 again once they have ended.
func TestOpenStreamsGauge(t *testing.T) {
	protocoltest.Run(t, New(), func(t *testing.T, path protocoltest.Path, p protocols.Protocol) {
		release := make(chan struct{})
		srv := httptest.NewServer(sseHandler(func(_ int, _ string, send func(string), r *nethttp.Request) {
			send("data: x\n\n")
			select {
			case <-release:
				send("data: y\n\n")
				holdUntilGone(r)
			case <-r.Context().Done():
			}
		}))
		defer srv.Close()
		c := open(t, p, srv.URL)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel() // ends the streams if the test fails before release
		const streams = 3
		var wg sync.WaitGroup
		results := make([]samples, streams)
		for i := range streams {
			wg.Go(func() {
				c.Do(ctx, protocols.Call{VU: uint64(i + 1), Request: request(map[string]cty.Value{"events": cty.NumberIntVal(2)})}, results[i].emit)
			})
		}
		waitOpenStreams(t, c, streams, 10*time.Second, "while the streams are held")
		close(release) // each stream gets its second event and ends
		wg.Wait()
		for i := range results {
			if req := results[i].request(t); req.Error != protocols.ErrNone || results[i].count(MetricEvents) != 2 {
				t.Errorf("stream %d ended with %q after %d events, want success after 2", i, req.Error, results[i].count(MetricEvents))
			}
		}
		waitOpenStreams(t, c, 0, gaugeLag(path), "after the streams ended")
	})
}

// TestOpenStreamsGaugeAndEnding: streams held until the scenario ends
// (protocols.WithEnding) end as successes when it does, on both paths, and
// a call after the end connects to nothing.
func TestOpenStreamsGaugeAndEnding(t *testing.T) {
	protocoltest.Run(t, New(), func(t *testing.T, path protocoltest.Path, p protocols.Protocol) {
		srv := httptest.NewServer(sseHandler(func(_ int, _ string, send func(string), r *nethttp.Request) {
			send("data: x\n\n")
			holdUntilGone(r)
		}))
		defer srv.Close()
		c := open(t, p, srv.URL)
		ending := make(chan struct{})
		ctx := protocols.WithEnding(context.Background(), ending)
		const streams = 3
		var wg sync.WaitGroup
		results := make([]samples, streams)
		for i := range streams {
			wg.Go(func() { c.Do(ctx, protocols.Call{VU: uint64(i + 1), Request: request(nil)}, results[i].emit) })
		}
		waitOpenStreams(t, c, streams, 10*time.Second, "while the streams are held")
		close(ending) // the scenario ends: streams end as successes
		wg.Wait()
		for i := range results {
			if req := results[i].request(t); req.Error != protocols.ErrNone {
				t.Errorf("stream %d ended with %q, want success", i, req.Error)
			}
		}
		waitOpenStreams(t, c, 0, gaugeLag(path), "after the scenario ended")
		// A call after the end returns at once.
		var late samples
		c.Do(ctx, protocols.Call{VU: 9, Request: request(nil)}, late.emit)
		if late.count(MetricConnect) != 0 {
			t.Error("a call after the scenario's end connected")
		}
	})
}

// TestFaults: each fault is counted by its kind, the run goes on, and a
// reconnection honours the server's retry field and sends Last-Event-ID.
func TestFaults(t *testing.T) {
	cases := []struct {
		name   string
		script func(n int, lastID string, send func(string), r *nethttp.Request)
		req    map[string]cty.Value
		kind   protocols.ErrorKind // the disconnect reason
		final  protocols.ErrorKind // the request sample's error
		check  func(t *testing.T, got *samples, seen []string)
	}{
		{
			name: "closed without reconnect",
			script: func(_ int, _ string, send func(string), _ *nethttp.Request) {
				send("id: 1\ndata: a\n\n")
			},
			req:   map[string]cty.Value{"duration": str("10s")},
			kind:  ErrEOF,
			final: ErrEOF,
		},
		{
			name: "closed with reconnect honours retry",
			script: func(n int, _ string, send func(string), r *nethttp.Request) {
				if n > 3 {
					send("data: last\n\n")
					holdUntilGone(r)
					return
				}
				send(fmt.Sprintf("retry: 30\nid: %d\ndata: a\n\n", n))
			},
			req:   map[string]cty.Value{"events": cty.NumberIntVal(4), "reconnect": cty.True, "reconnect_delay": str("1h")},
			kind:  ErrEOF,
			final: protocols.ErrNone,
			check: func(t *testing.T, got *samples, seen []string) {
				rs := got.of(MetricReconnects)
				if len(rs) != 3 {
					t.Fatalf("%d reconnects, want 3", len(rs))
				}
				for _, s := range rs {
					if s.Value != 30*time.Millisecond || s.Error != ErrEOF {
						t.Errorf("reconnect %+v: want the server's 30ms retry and reason eof", s)
					}
				}
				if want := []string{"", "1", "2", "3"}; fmt.Sprint(seen) != fmt.Sprint(want) {
					t.Errorf("Last-Event-ID per connection = %q, want %q", seen, want)
				}
			},
		},
		{
			name: "malformed frames are counted and skipped",
			script: func(_ int, _ string, send func(string), r *nethttp.Request) {
				send("garbage line\n\n")
				send("retry: soon\ndata: kept\n\n")
				send("data: \xff\xfe\n\n")
				send("data: fine\n\n")
				holdUntilGone(r)
			},
			req:   map[string]cty.Value{"events": cty.NumberIntVal(3)},
			final: protocols.ErrNone,
			check: func(t *testing.T, got *samples, _ []string) {
				if n := got.count(MetricMalformed); n != 3 {
					t.Errorf("%d malformed frames, want 3", n)
				}
				if n := got.count(MetricEvents); n != 3 {
					t.Errorf("%d events, want 3", n)
				}
			},
		},
		{
			name: "frame over max_event_size",
			script: func(_ int, _ string, send func(string), r *nethttp.Request) {
				send("data: " + strings.Repeat("x", DefaultMaxEventSize+10) + "\n\n")
				holdUntilGone(r)
			},
			req:   map[string]cty.Value{"duration": str("10s")},
			kind:  ErrMalformed,
			final: ErrMalformed,
		},
		{
			name: "stall with reconnect",
			script: func(n int, _ string, send func(string), r *nethttp.Request) {
				send("data: a\n\n")
				holdUntilGone(r)
			},
			req:   map[string]cty.Value{"events": cty.NumberIntVal(3), "idle_timeout": str("100ms"), "reconnect": cty.True, "reconnect_delay": str("10ms")},
			kind:  ErrStall,
			final: protocols.ErrNone,
			check: func(t *testing.T, got *samples, _ []string) {
				if n := got.count(MetricReconnects + "_" + string(ErrStall)); n != 2 {
					t.Errorf("%d stall reconnects, want 2", n)
				}
			},
		},
	}
	protocoltest.Run(t, New(), func(t *testing.T, _ protocoltest.Path, p protocols.Protocol) {
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				var mu sync.Mutex
				var seen []string
				srv := httptest.NewServer(sseHandler(func(n int, lastID string, send func(string), r *nethttp.Request) {
					mu.Lock()
					seen = append(seen, lastID)
					mu.Unlock()
					tc.script(n, lastID, send, r)
				}))
				defer srv.Close()
				c := open(t, p, srv.URL)
				var got samples
				c.Do(context.Background(), protocols.Call{VU: 1, Request: request(tc.req)}, got.emit)
				if req := got.request(t); req.Error != tc.final {
					t.Errorf("request error %q, want %q", req.Error, tc.final)
				}
				if tc.kind != "" {
					ds := got.of(MetricDisconnects)
					if len(ds) == 0 || ds[0].Error != tc.kind {
						t.Errorf("disconnects %+v, want the first with reason %q", ds, tc.kind)
					}
					if got.count(MetricDisconnects+"_"+string(tc.kind)) != len(ds) {
						t.Errorf("per-kind disconnects %d, total %d", got.count(MetricDisconnects+"_"+string(tc.kind)), len(ds))
					}
				}
				if tc.check != nil {
					mu.Lock()
					s := append([]string(nil), seen...)
					mu.Unlock()
					tc.check(t, &got, s)
				}
			})
		}
	})
}

func TestStatusAndReset(t *testing.T) {
	protocoltest.Run(t, New(), func(t *testing.T, _ protocoltest.Path, p protocols.Protocol) {
		refuse := httptest.NewServer(nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
			nethttp.Error(w, "busy", nethttp.StatusServiceUnavailable)
		}))
		defer refuse.Close()
		c := open(t, p, refuse.URL)
		var got samples
		c.Do(context.Background(), protocols.Call{VU: 1, Request: request(map[string]cty.Value{"reconnect": cty.True})}, got.emit)
		if req := got.request(t); req.Status != 503 || req.Error != ErrStatus || got.count(MetricReconnects) != 0 {
			t.Errorf("request %+v, %d reconnects: want status 503, kind status, no reconnect", req, got.count(MetricReconnects))
		}

		reset := httptest.NewServer(nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(200)
			fmt.Fprint(w, "data: a\n\n")
			nethttp.NewResponseController(w).Flush()
			conn, _, err := nethttp.NewResponseController(w).Hijack()
			if err != nil {
				return
			}
			conn.(*net.TCPConn).SetLinger(0) // close with a RST
			conn.Close()
		}))
		defer reset.Close()
		if req := got.request(t); !strings.Contains(req.Message, "answered 503") {
			t.Errorf("request message %q, want why: the server answered 503", req.Message)
		}
		c = open(t, p, reset.URL)
		got = samples{}
		c.Do(context.Background(), protocols.Call{VU: 1, Request: request(map[string]cty.Value{"duration": str("10s")})}, got.emit)
		if req := got.request(t); req.Error != protocols.ErrReset {
			t.Errorf("request error %q, want reset", req.Error)
		}
	})
}

// TestEventsAreEmittedWhileTheStreamIsHeld: a held stream's samples reach
// emit as its events arrive, not when the subscription ends, so that each
// interval's output counts the events received in it; cancelling the call
// then ends it as interrupted.
func TestEventsAreEmittedWhileTheStreamIsHeld(t *testing.T) {
	protocoltest.Run(t, New(), func(t *testing.T, _ protocoltest.Path, p protocols.Protocol) {
		srv := httptest.NewServer(sseHandler(func(_ int, _ string, send func(string), r *nethttp.Request) {
			send("data: a\n\n")
			holdUntilGone(r)
		}))
		defer srv.Close()
		c := open(t, p, srv.URL)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var got samples
		done := make(chan struct{})
		go func() {
			defer close(done)
			c.Do(ctx, protocols.Call{VU: 1, Request: request(nil)}, got.emit)
		}()
		deadline := time.Now().Add(5 * time.Second)
		for got.count(MetricEvents) == 0 && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		n := got.count(MetricEvents)
		select {
		case <-done:
			t.Fatal("the call ended before it was cancelled")
		default:
		}
		cancel()
		<-done
		if n != 1 {
			t.Errorf("%d events emitted while the stream was held, want 1", n)
		}
		if req := got.request(t); req.Error != protocols.ErrInterrupted {
			t.Errorf("request error %q, want interrupted", req.Error)
		}
	})
}

// TestValidateRequest stays in-process: the config calls ValidateRequest on
// the built-in at load, before any target is isolated; it has no wire.
// TestRequestURLAndSentAtUnit: the stream is requested at its path or
// url with query added, as the server reads it, and a send time is read
// in sent_at_unit. The server stamps its event an hour before the call,
// so a unit read wrong puts the latency years off.
func TestRequestURLAndSentAtUnit(t *testing.T) {
	query := func(kv ...string) cty.Value {
		m := map[string]cty.Value{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = str(kv[i+1])
		}
		return cty.MapVal(m)
	}
	cases := []struct {
		name  string
		attrs func(base string) map[string]cty.Value
		unit  time.Duration
		want  string // the request-target the server reads
	}{
		{"path with query, default unit", func(string) map[string]cty.Value {
			return map[string]cty.Value{"path": str("/events"), "query": query("b", "2 3", "a", "1")}
		}, time.Microsecond, "/events?a=1&b=2+3"},
		{"url with its own query, ms", func(base string) map[string]cty.Value {
			return map[string]cty.Value{"url": str(base + "/events?z=9"), "query": query("a", "1"), "sent_at_unit": str("ms")}
		}, time.Millisecond, "/events?a=1&z=9"},
		{"path, us", func(string) map[string]cty.Value {
			return map[string]cty.Value{"path": str("/u"), "sent_at_unit": str("us")}
		}, time.Microsecond, "/u"},
		{"path, ns", func(string) map[string]cty.Value {
			return map[string]cty.Value{"path": str("/n"), "query": query("x", "1"), "sent_at_unit": str("ns")}
		}, time.Nanosecond, "/n?x=1"},
		{"path, s", func(string) map[string]cty.Value {
			return map[string]cty.Value{"path": str("/s"), "sent_at_unit": str("s")}
		}, time.Second, "/s"},
	}
	protocoltest.Run(t, New(), func(t *testing.T, _ protocoltest.Path, p protocols.Protocol) {
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				start := time.Now()
				sent := start.Add(-time.Hour).UnixNano() / int64(tc.unit)
				seen := make(chan string, 1)
				srv := httptest.NewServer(sseHandler(func(_ int, _ string, send func(string), r *nethttp.Request) {
					seen <- r.URL.RequestURI()
					send(fmt.Sprintf("data: {\"id\":\"e1\",\"sentAt\":%d}\n\n", sent))
					holdUntilGone(r)
				}))
				defer srv.Close()
				attrs := tc.attrs(srv.URL)
				attrs["events"] = cty.NumberIntVal(1)
				attrs["sent_at_field"] = str("sentAt")
				var got samples
				open(t, p, srv.URL).Do(context.Background(), protocols.Call{VU: 1, Request: request(attrs)}, got.emit)
				elapsed := time.Since(start)

				if req := got.request(t); req.Error != protocols.ErrNone {
					t.Fatalf("request sample %+v: want a success", req)
				}
				// The server reads the request before it sends the event.
				select {
				case uri := <-seen:
					if uri != tc.want {
						t.Errorf("the server was asked for %q, want %q", uri, tc.want)
					}
				default:
					t.Error("the server read no request")
				}
				lat := got.of(MetricDeliveryLatency)
				// The send time is an hour before start, cut to the unit.
				if len(lat) != 1 || lat[0].Value < time.Hour || lat[0].Value > time.Hour+elapsed+tc.unit {
					t.Errorf("delivery latency samples %v: want one between 1h and 1h+%s", lat, elapsed+tc.unit)
				}
			})
		}
	})
}

func TestValidateRequest(t *testing.T) {
	for _, tc := range []struct {
		attrs map[string]cty.Value
		attr  string
		msg   string
	}{
		{map[string]cty.Value{"duration": str("soon")}, "duration", `duration "soon" is not a duration; write it as "10s"`},
		{map[string]cty.Value{"events": cty.NumberIntVal(0)}, "events", "events must be a whole number from 1"},
		{map[string]cty.Value{"id_regex": str("(")}, "id_regex", "not a valid regular expression"},
		{map[string]cty.Value{"id_regex": str("(a)(b)")}, "id_regex", "at most one capture group"},
		{map[string]cty.Value{"id_field": str("id"), "id_regex": str("x")}, "id_regex", "not both"},
		{map[string]cty.Value{"sent_at_unit": str("minutes")}, "sent_at_unit", `must be "s", "ms", "us" or "ns"`},
		{map[string]cty.Value{"delivery_key": str("u1")}, "delivery_key", "needs id_field or id_regex"},
		{map[string]cty.Value{"url": str("/relative")}, "url", "absolute"},
		{map[string]cty.Value{"url": str("http://h/"), "path": str("/x")}, "path", "not both"},
		{map[string]cty.Value{"miss_grace": str("-1s")}, "miss_grace", "positive duration"},
	} {
		attr, err := New().ValidateRequest(request(tc.attrs))
		if attr != tc.attr || err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%v: ValidateRequest = %q, %v; want %q and %q", tc.attrs, attr, err, tc.attr, tc.msg)
		}
	}
	// A number of seconds is a duration, as for every protocol.
	if attr, err := New().ValidateRequest(request(map[string]cty.Value{"path": str("/s"), "delivery_key": str("k"), "id_field": str("a.b"), "miss_grace": str("0.5")})); err != nil {
		t.Errorf("valid request: %s: %v", attr, err)
	}
}

// TestBadCallSaysWhy: a value computed per call that the decoder refuses
// fails the call as protocol, with the reason in its message, on both
// paths; a stall's reason is in its message too.
func TestBadCallSaysWhy(t *testing.T) {
	protocoltest.Run(t, New(), func(t *testing.T, _ protocoltest.Path, p protocols.Protocol) {
		srv := httptest.NewServer(sseHandler(func(_ int, _ string, send func(string), r *nethttp.Request) {
			send("data: a\n\n")
			holdUntilGone(r)
		}))
		defer srv.Close()
		c := open(t, p, srv.URL)
		var got samples
		c.Do(context.Background(), protocols.Call{VU: 1, Request: request(map[string]cty.Value{"duration": str("soon")})}, got.emit)
		if req := got.request(t); req.Error != protocols.ErrProtocol || !strings.Contains(req.Message, `duration "soon" is not a duration`) {
			t.Errorf("request %q, message %q: want protocol, and why", req.Error, req.Message)
		}
		got = samples{}
		c.Do(context.Background(), protocols.Call{VU: 1, Request: request(map[string]cty.Value{"idle_timeout": str("50ms")})}, got.emit)
		if req := got.request(t); req.Error != ErrStall || req.Message != "nothing arrived for idle_timeout (50ms)" {
			t.Errorf("request %q, message %q: want stall, and why", req.Error, req.Message)
		}
	})
}

// TestValidateTarget: each target value Open refuses, ValidateTarget
// refuses first, at its attribute, with a message that says what to write.
func TestValidateTarget(t *testing.T) {
	for _, tc := range []struct {
		attrs map[string]cty.Value
		attr  string
		msg   string
	}{
		{map[string]cty.Value{"base_url": str("127.0.0.1:8080")}, "base_url", `base_url "127.0.0.1:8080" has no scheme: write "http://127.0.0.1:8080"`},
		{map[string]cty.Value{"base_url": str("localhost:8080")}, "base_url", `has no scheme`},
		{map[string]cty.Value{"base_url": str("ftp://h")}, "base_url", `must be an http:// or https:// URL`},
		{map[string]cty.Value{"base_url": str("http://")}, "base_url", `has no host`},
		{map[string]cty.Value{"base_url": str("")}, "base_url", `base_url is required`},
		{map[string]cty.Value{"base_url": str("http://h"), "timeout": str("fast")}, "timeout", `timeout "fast" is not a duration; write it as "10s"`},
		{map[string]cty.Value{"base_url": str("http://h"), "max_event_size": cty.NumberIntVal(10)}, "max_event_size", `max_event_size must be a whole number from 256`},
		{map[string]cty.Value{"base_url": str("http://h"), "headers": cty.MapVal(map[string]cty.Value{"X": str("a\nb")})}, "headers", `must not contain line breaks`},
	} {
		v := target(tc.attrs)
		attr, err := New().ValidateTarget(v)
		if attr != tc.attr || err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%v: ValidateTarget = %q, %v; want %q and %q", tc.attrs, attr, err, tc.attr, tc.msg)
		}
		if _, err := New().Open(context.Background(), v); err == nil || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%v: Open = %v; want the same refusal, %q", tc.attrs, err, tc.msg)
		}
	}
	if attr, err := New().ValidateTarget(target(map[string]cty.Value{"base_url": str("https://h:8443/api/"), "timeout": str("2s")})); err != nil {
		t.Errorf("valid target: %s: %v", attr, err)
	}
}

// TestInfoMetrics: every metric name the protocol declares is one it can
// emit; what it does emit is checked against the list in every test that
// reads a request sample (checkDeclared).
func TestInfoMetrics(t *testing.T) {
	names := New().Describe().Metrics
	seen := map[string]bool{}
	for _, name := range names {
		if seen[name] {
			t.Errorf("%q is listed twice", name)
		}
		seen[name] = true
	}
	if g := New().Describe().Gauges; !slices.Equal(g, []string{GaugeOpenStreams}) {
		t.Errorf("Info.Gauges = %q, want %q", g, GaugeOpenStreams)
	}
	for _, want := range []string{MetricEvents, MetricEventsMissed, MetricEventsLate, "sse_disconnects_stall", "sse_reconnects_eof", "sse_disconnects_status"} {
		if !seen[want] {
			t.Errorf("Info.Metrics lacks %q", want)
		}
	}
	if seen["sse_reconnects_status"] {
		t.Error("Info.Metrics lists sse_reconnects_status, which is never emitted: a status is not retried")
	}
}

// TestEqualRequestsShareTheirParse: calls whose request values are equal
// share one parsed request, which a held stream keeps, and a call whose
// value differs, in any attribute, gets its own: the server sees each
// call's own path and header, in order.
func TestEqualRequestsShareTheirParse(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	srv := httptest.NewServer(sseHandler(func(_ int, _ string, send func(string), r *nethttp.Request) {
		mu.Lock()
		seen = append(seen, r.URL.Path+" "+r.Header.Get("X-Who"))
		mu.Unlock()
		send("data: x\n\n")
		holdUntilGone(r)
	}))
	defer srv.Close()
	c := open(t, New(), srv.URL).(*Client)
	call := func(path, who string) *streamConfig {
		var got samples
		attrs := map[string]cty.Value{"path": str(path), "events": cty.NumberIntVal(1)}
		if who != "" {
			attrs["headers"] = cty.MapVal(map[string]cty.Value{"X-Who": str(who)})
		}
		c.Do(context.Background(), protocols.Call{VU: 1, Request: request(attrs)}, got.emit)
		if req := got.request(t); req.Error != "" {
			t.Fatalf("%s: %s %s", path, req.Error, req.Message)
		}
		last := c.lastRequest.Load()
		if last == nil {
			t.Fatal("the client keeps no parsed request")
		}
		return last.sc
	}
	first := call("/a", "")
	if again := call("/a", ""); again != first {
		t.Errorf("an equal request was parsed again")
	}
	call("/b", "")
	call("/b", "me")
	call("/a", "")
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"/a ", "/a ", "/b ", "/b me", "/a "}; fmt.Sprintf("%q", seen) != fmt.Sprintf("%q", want) {
		t.Errorf("the server saw %q, want %q", seen, want)
	}
}
