package core

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zclconf/go-cty/cty"

	"github.com/hload/hload/protocols"
)

var errStoppedResponding = errors.New(`plugin "fake" stopped responding`)

// lateProtocol stands for a plugin that stops answering near the end of
// the run: from hangAt on, its calls hang until the scenario's graceful
// stop cancels them, and its failure comes only when the client is closed
// (closeFails), or a moment after those calls ended (lateBy), as a
// watchdog whose failure is delivered while the VUs see their calls end.
type lateProtocol struct {
	failingProtocol
	hangAt     time.Duration
	closeFails bool
	lateBy     time.Duration
}

func (p *lateProtocol) Open(context.Context, cty.Value) (protocols.Client, error) {
	return &lateClient{p: p, failed: make(chan error, 1), start: time.Now()}, nil
}

type lateClient struct {
	p      *lateProtocol
	start  time.Time
	failed chan error
	once   sync.Once
	wg     sync.WaitGroup // the late delivery, which Close waits for
}

func (c *lateClient) Do(ctx context.Context, call protocols.Call, emit func(protocols.Sample)) {
	if c.p.hangAt == 0 || time.Since(c.start) < c.p.hangAt {
		time.Sleep(time.Millisecond)
		emit(protocols.Sample{Metric: protocols.MetricRequest, Time: time.Now(), Value: time.Millisecond, Status: 200})
		return
	}
	<-ctx.Done()
	if c.p.lateBy > 0 {
		c.once.Do(func() {
			c.wg.Go(func() {
				time.Sleep(c.p.lateBy)
				c.failed <- errStoppedResponding
			})
		})
	}
	emit(protocols.Sample{Metric: protocols.MetricRequest, Time: time.Now(), Error: "plugin"})
}

func (c *lateClient) Failed() <-chan error { return c.failed }

func (c *lateClient) Close() error {
	c.wg.Wait()
	if c.p.closeFails {
		c.failed <- errStoppedResponding
		return errStoppedResponding
	}
	return nil
}

// TestLateClientFailureFailsTheRun: a client failure that comes after the
// load, when the last calls have ended or in the client's Close, fails
// the run as one during the load does: in Run's error, the summary and
// the sinks' summary.
func TestLateClientFailureFailsTheRun(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    *lateProtocol
	}{
		{"after the last calls ended", &lateProtocol{hangAt: 200 * time.Millisecond, lateBy: 100 * time.Millisecond}},
		{"in Close", &lateProtocol{closeFails: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.p.name = "fake"
			src := strings.Replace(failingTest, "%s", "", 1)
			src = strings.Replace(src, `duration = "60s"`, "duration = \"300ms\"\n  graceful_stop = \"100ms\"", 1)
			test := loadWith(t, src, tc.p)
			sink := &snapshotSink{}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			sum, err := Run(ctx, test, Options{Protocols: protocols.NewRegistry(tc.p), Sinks: []Sink{sink}})
			if !errors.Is(err, errStoppedResponding) || !strings.Contains(err.Error(), `target "t"`) {
				t.Fatalf("Run = %v, want the client's failure, naming the target", err)
			}
			if sum.Passed || !strings.Contains(sum.Failed, "stopped responding") || sink.sum.Failed != sum.Failed {
				t.Errorf("summary passed %v, failed %q; the sink's failed %q", sum.Passed, sum.Failed, sink.sum.Failed)
			}
		})
	}
}
