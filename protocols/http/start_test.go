package http

import (
	"context"
	nethttp "net/http"
	"testing"
	"time"

	"github.com/hload/hload/protocols"
)

// TestDoTimesFromCallStart checks that the engine times a call from
// Call.Start, the core's clock read, when it is set: against a server that
// notes when it read the request and answers 50 ms later, the latency and
// the time to first byte run from Start, the server's receipt falls
// between Start and the first byte, and the first byte before the end.
func TestDoTimesFromCallStart(t *testing.T) {
	const delay = 50 * time.Millisecond
	received := make(chan time.Time, 1)
	srv := newCountingServer(t, false, false, func(w nethttp.ResponseWriter, r *nethttp.Request) {
		received <- time.Now()
		time.Sleep(delay)
		w.Write([]byte("ok"))
	})
	c := open(t, New(), srv.URL, nil)
	do(t, c, 1, path("/"), false) // connect outside the call timed
	<-received

	for _, before := range []time.Duration{0, 200 * time.Millisecond} {
		start := time.Now().Add(-before)
		var req, ttfb protocols.Sample
		c.Do(context.Background(), protocols.Call{VU: 1, Request: path("/"), Start: start}, func(s protocols.Sample) {
			switch s.Metric {
			case protocols.MetricRequest:
				req = s
			case protocols.MetricTTFB:
				ttfb = s
			}
		})
		got := <-received
		switch {
		case req.Error != "" || req.Status != 200:
			t.Errorf("Start %v ago: %+v", before, req)
		case req.Value < before+delay || ttfb.Value < before+delay:
			t.Errorf("Start %v ago: latency %v, ttfb %v; want both from Start, at least %v", before, req.Value, ttfb.Value, before+delay)
		case !req.Time.Equal(start.Add(req.Value)) || !ttfb.Time.Equal(start.Add(ttfb.Value)):
			t.Errorf("Start %v ago: the samples end at %v and %v after Start, their values are %v and %v", before, req.Time.Sub(start), ttfb.Time.Sub(start), req.Value, ttfb.Value)
		case got.Before(start) || ttfb.Time.Before(got.Add(delay)) || req.Time.Before(ttfb.Time):
			t.Errorf("Start %v ago: the server read the request %v after Start, the first byte came %v after, the end %v", before, got.Sub(start), ttfb.Time.Sub(start), req.Time.Sub(start))
		}
	}
}
