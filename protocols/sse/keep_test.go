package sse

import (
	"context"
	"fmt"
	nethttp "net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zclconf/go-cty/cty"

	"github.com/hload/hload/plugins/protocoltest"
	"github.com/hload/hload/protocols"
)

// kept runs one subscription with the given KeepBody and KeepHeaders, and
// returns its request sample with the body and headers copied during
// emit, as a capture reads them. Every other sample must carry neither.
func kept(t *testing.T, c protocols.Client, attrs map[string]cty.Value, keepBody, keepHeaders bool) protocols.Sample {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var req []protocols.Sample
	c.Do(ctx, protocols.Call{VU: 1, Request: request(attrs), KeepBody: keepBody, KeepHeaders: keepHeaders}, func(s protocols.Sample) {
		if s.Metric != protocols.MetricRequest {
			if s.Body != nil || s.Headers != nil {
				t.Errorf("%s sample carries a body or headers", s.Metric)
			}
			return
		}
		if s.Body != nil {
			s.Body = append([]byte{}, s.Body...)
		}
		if s.Headers != nil {
			h := make(map[string][]string, len(s.Headers))
			for k, v := range s.Headers {
				h[k] = slices.Clone(v)
			}
			s.Headers = h
		}
		req = append(req, s)
	})
	if len(req) != 1 {
		t.Fatalf("%d request samples", len(req))
	}
	return req[0]
}

// TestKeepBodyAndHeaders: a subscription's request sample hands back the
// data of the last event it received and the headers of the last response,
// each only when the call asks, on both paths. The events come on two
// connections, the first lost after its event, so "last" means the last
// of the whole subscription; the last event's data has two lines, and the
// frame buffer it was parsed in is reused by later frames.
func TestKeepBodyAndHeaders(t *testing.T) {
	protocoltest.Run(t, New(), func(t *testing.T, _ protocoltest.Path, p protocols.Protocol) {
		var conns atomic.Int64
		srv := httptest.NewServer(nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
			n := conns.Add(1)
			w.Header().Set("Content-Type", "text/event-stream")
			w.Header().Set("X-Stream", fmt.Sprint("conn-", n))
			w.Header().Add("Set-Cookie", "a=1")
			w.Header().Add("Set-Cookie", fmt.Sprint("b=", n))
			w.WriteHeader(200)
			rc := nethttp.NewResponseController(w)
			if r.URL.Path == "/quiet" {
				fmt.Fprint(w, ": nothing but a comment\n\n")
				rc.Flush()
				<-r.Context().Done()
				return
			}
			if r.Header.Get("Last-Event-ID") == "" {
				// The first connection: one event, then lost.
				fmt.Fprint(w, "id: 1\ndata: {\"order\":\"first\"}\n\n")
				rc.Flush()
				return
			}
			fmt.Fprint(w, "id: 2\ndata: {\"order\":\ndata: \"o-42\"}\n\n: a comment after it\n\nretry: 5\n\n")
			rc.Flush()
			<-r.Context().Done()
		}))
		defer srv.Close()
		c := open(t, p, srv.URL)
		stream := map[string]cty.Value{
			"events": cty.NumberIntVal(2), "reconnect": cty.True, "reconnect_delay": str("10ms"),
		}

		for _, tc := range []struct{ body, headers bool }{{true, true}, {true, false}, {false, true}, {false, false}} {
			t.Run(fmt.Sprintf("keep_body=%v,keep_headers=%v", tc.body, tc.headers), func(t *testing.T) {
				before := conns.Load()
				s := kept(t, c, stream, tc.body, tc.headers)
				if s.Error != "" || s.Status != 200 {
					t.Fatalf("request sample %+v", s)
				}
				if conns.Load()-before != 2 {
					t.Fatalf("the server saw %d connections, want 2", conns.Load()-before)
				}
				wantBody := "{\"order\":\n\"o-42\"}"
				if !tc.body {
					wantBody = ""
				}
				if string(s.Body) != wantBody || (s.Body == nil) == tc.body {
					t.Errorf("body %q, want %q", s.Body, wantBody)
				}
				if !tc.headers {
					if s.Headers != nil {
						t.Errorf("headers %v, not asked for", s.Headers)
					}
					return
				}
				// The second connection's, which the server numbered.
				want := map[string]string{
					"X-Stream":     fmt.Sprint("conn-", before+2),
					"Set-Cookie":   fmt.Sprint("a=1 | b=", before+2),
					"Content-Type": "text/event-stream",
				}
				for name, v := range want {
					if got := strings.Join(s.Headers[name], " | "); got != v {
						t.Errorf("%s = %q, want %q", name, got, v)
					}
				}
			})
		}

		// A stream that got no event has no body to capture from; its
		// headers are there.
		quiet := map[string]cty.Value{"path": str("/quiet"), "duration": str("100ms")}
		s := kept(t, c, quiet, true, true)
		if s.Error != "" || s.Body != nil || len(s.Headers["X-Stream"]) != 1 {
			t.Errorf("a stream without events: error %q, body %q, headers %v", s.Error, s.Body, s.Headers)
		}
	})
}
