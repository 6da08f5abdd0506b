package core

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zclconf/go-cty/cty"

	"github.com/hload/hload/protocols"
)

// startProtocol's client checks each call's Start against its own clock
// as Do begins, and against the call's planned start.
type startProtocol struct {
	failingProtocol
	mu    sync.Mutex
	calls int
	bad   []string
}

func (p *startProtocol) Open(context.Context, cty.Value) (protocols.Client, error) {
	return &startClient{p: p}, nil
}

type startClient struct{ p *startProtocol }

func (c *startClient) Do(_ context.Context, call protocols.Call, emit func(protocols.Sample)) {
	entered := time.Now()
	c.p.mu.Lock()
	c.p.calls++
	switch {
	case call.Start.IsZero():
		c.p.bad = append(c.p.bad, "Start is zero")
	case call.Start.After(entered):
		c.p.bad = append(c.p.bad, "Start is after Do began")
	case call.Start.Before(call.Planned):
		c.p.bad = append(c.p.bad, "Start is before the planned start")
	}
	c.p.mu.Unlock()
	end := time.Now()
	emit(protocols.Sample{Metric: protocols.MetricRequest, Time: end, Value: end.Sub(call.Start), Status: 200})
}

func (c *startClient) Close() error { return nil }

// TestCallStartIsTheCoresClock checks that the core hands every call the
// time it read just before Do, in the closed and the open model, so that a
// protocol can time the call from it: set, not after Do began, and not
// before the planned start.
func TestCallStartIsTheCoresClock(t *testing.T) {
	for _, tc := range []struct{ name, executor string }{
		{"closed", `executor = "constant-vus"
  vus      = 4
  duration = "200ms"`},
		{"open", `executor = "constant-arrival-rate"
  rate     = 500
  duration = "200ms"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &startProtocol{failingProtocol: failingProtocol{name: "fake"}}
			src := strings.Replace(failingTest, "%s", "", 1)
			src = strings.Replace(src, `executor = "constant-vus"
  vus      = 4
  duration = "60s"`, tc.executor, 1)
			test := loadWith(t, src, p)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if _, err := Run(ctx, test, Options{Protocols: protocols.NewRegistry(p)}); err != nil {
				t.Fatal(err)
			}
			p.mu.Lock()
			defer p.mu.Unlock()
			if p.calls == 0 || len(p.bad) > 0 {
				t.Errorf("%d calls; %d wrong, the first: %v", p.calls, len(p.bad), p.bad[:min(1, len(p.bad))])
			}
		})
	}
}
