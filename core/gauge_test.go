package core

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zclconf/go-cty/cty"

	"github.com/hload/hload/protocols"
)

// gaugeProtocol's clients hold one "open" level per call in flight, as an
// SSE client holds its streams.
type gaugeProtocol struct{ failingProtocol }

func (p *gaugeProtocol) Open(context.Context, cty.Value) (protocols.Client, error) {
	return &gaugeClient{}, nil
}

type gaugeClient struct{ open atomic.Int64 }

func (c *gaugeClient) Do(ctx context.Context, call protocols.Call, emit func(protocols.Sample)) {
	c.open.Add(1)
	defer c.open.Add(-1)
	select {
	case <-ctx.Done():
	case <-time.After(300 * time.Millisecond):
	}
	emit(protocols.Sample{Metric: protocols.MetricRequest, Time: time.Now(), Value: time.Millisecond})
}

func (c *gaugeClient) Gauges(report func(string, int64)) { report("open", c.open.Load()) }
func (c *gaugeClient) Close() error                      { return nil }

// TestGaugesReachSnapshots: two targets' clients report the same gauge;
// each snapshot holds their sum, and the summary its peak. The clients are
// read one after another, not at one instant: a VU that went from a call
// on one target to the next on the other between two reads would count
// twice (seen in CI: 4 of 3, at the 600 ms when every VU switched). The
// think time keeps each VU out of calls for 100 ms between them, far
// longer than a snapshot's reads take.
func TestGaugesReachSnapshots(t *testing.T) {
	p := &gaugeProtocol{failingProtocol{name: "fake"}}
	test := loadWith(t, `
target "a" { protocol = "fake" }
target "b" { protocol = "fake" }
scenario "s" {
  executor   = "constant-vus"
  vus        = 3
  duration   = "1200ms"
  think_time = "100ms"
  request "a" { target = "a" }
  request "b" { target = "b" }
}
`, p)
	sink := &snapshotSink{}
	sum, err := Run(context.Background(), test, Options{Protocols: protocols.NewRegistry(p), Sinks: []Sink{sink}, Interval: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, s := range sink.snaps {
		if v, ok := s.Gauges["open"]; ok {
			seen++
			if v < 0 || v > 3 {
				t.Errorf("snapshot at %s: open = %d, want 0..3 (3 VUs)", s.Elapsed, v)
			}
		}
	}
	if seen == 0 {
		t.Errorf("no snapshot carried the gauge: %+v", sink.snaps)
	}
	if sum.GaugesMax["open"] != 3 {
		t.Errorf("summary gauges_max = %v, want open = 3", sum.GaugesMax)
	}
}
