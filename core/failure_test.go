package core

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/zclconf/go-cty/cty"

	"github.com/hload/hload/config"
	"github.com/hload/hload/protocols"
)

// failingProtocol stands for a plugin: its client answers failAfter calls,
// then reports a failure on Failed and hangs every later call until it is
// cancelled, as a plugin process that died mid-run would leave them.
type failingProtocol struct {
	name      string
	failAfter int64
	opened    atomic.Int64
}

var errPluginDied = errors.New(`plugin "fake" exited: signal: killed`)

func (p *failingProtocol) Describe() protocols.Info {
	return protocols.Info{
		Name:        p.name,
		TargetSpec:  hcldec.ObjectSpec{},
		RequestSpec: hcldec.ObjectSpec{"path": &hcldec.AttrSpec{Name: "path", Type: cty.String}},
	}
}

func (p *failingProtocol) Open(context.Context, cty.Value) (protocols.Client, error) {
	p.opened.Add(1)
	return &failingClient{p: p, failed: make(chan error, 1)}, nil
}

type failingClient struct {
	p      *failingProtocol
	calls  atomic.Int64
	failed chan error
	closed atomic.Bool
}

func (c *failingClient) Do(ctx context.Context, call protocols.Call, emit func(protocols.Sample)) {
	n := c.calls.Add(1)
	if c.p.failAfter == 0 || n <= c.p.failAfter {
		time.Sleep(time.Millisecond)
		emit(protocols.Sample{Metric: protocols.MetricRequest, Time: time.Now(), Value: time.Millisecond, Status: 200})
		return
	}
	if n == c.p.failAfter+1 {
		c.failed <- errPluginDied
	}
	<-ctx.Done()
	emit(protocols.Sample{Metric: protocols.MetricRequest, Time: time.Now(), Error: protocols.ErrInterrupted})
}

func (c *failingClient) Failed() <-chan error { return c.failed }

func (c *failingClient) Close() error { c.closed.Store(true); return nil }

func loadWith(t *testing.T, src string, ps ...protocols.Protocol) *config.Test {
	t.Helper()
	test, diags := config.Parse(map[string][]byte{"test.hcl": []byte(src)}, t.TempDir(), config.Options{
		Protocols: protocols.NewRegistry(ps...),
	})
	if diags.HasErrors() {
		t.Fatalf("config: %s", diags.Error())
	}
	return test
}

const failingTest = `
target "t" {
  protocol = "fake"
  %s
}
scenario "s" {
  executor = "constant-vus"
  vus      = 4
  duration = "60s"
  request "r" {
    path = "/"
  }
}
`

// TestClientFailureEndsTheRun: a Failer that fires stops a 60 s run at
// once; the summary keeps what was measured, the sinks are closed with it,
// and Run's error wraps the client's.
func TestClientFailureEndsTheRun(t *testing.T) {
	p := &failingProtocol{name: "fake", failAfter: 200}
	test := loadWith(t, strings.Replace(failingTest, "%s", "", 1), p)
	sink := &snapshotSink{}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := time.Now()
	sum, err := Run(ctx, test, Options{Protocols: protocols.NewRegistry(p), Sinks: []Sink{sink}, Interval: 100 * time.Millisecond})
	took := time.Since(start)

	if !errors.Is(err, errPluginDied) {
		t.Fatalf("Run error = %v, want one wrapping %v", err, errPluginDied)
	}
	if !strings.Contains(err.Error(), `target "t"`) {
		t.Errorf("error does not name the target: %v", err)
	}
	if took > 5*time.Second {
		t.Errorf("the run took %s after the failure; want it to stop at once", took)
	}
	if sum == nil {
		t.Fatal("no summary")
	}
	if sum.Passed || !strings.Contains(sum.Failed, "exited: signal: killed") {
		t.Errorf("summary passed=%v failed=%q, want a failed run naming the failure", sum.Passed, sum.Failed)
	}
	figures := sum.Scenarios["s"].Requests["r"]
	// Every call that succeeded before the failure is kept; the ones cut
	// short count as interrupted errors.
	if figures.Count-figures.Errors != p.failAfter {
		t.Errorf("count %d, errors %d: want %d successful calls kept", figures.Count, figures.Errors, p.failAfter)
	}
	if sink.sum.Failed != sum.Failed || sink.sum.Scenarios["s"].Requests["r"].Count != figures.Count {
		t.Errorf("the sink was not closed with the summary: %+v", sink.sum)
	}
}

// TestIsolatedTargetUsesOptionsIsolated: a target with isolate = true gets
// its protocol from Options.Isolated, and a run without it is an error.
func TestIsolatedTargetUsesOptionsIsolated(t *testing.T) {
	inProcess := &failingProtocol{name: "fake"}
	isolated := &failingProtocol{name: "fake"}
	src := strings.Replace(failingTest, "%s", "isolate = true", 1)
	src = strings.Replace(src, `duration = "60s"`, `duration = "300ms"`, 1)
	test := loadWith(t, src, inProcess)
	if !test.Targets[0].Isolate {
		t.Fatal("config did not set Target.Isolate")
	}
	var asked *config.Target
	sum, err := Run(context.Background(), test, Options{
		Protocols: protocols.NewRegistry(inProcess),
		Isolated: func(t *config.Target) (protocols.Protocol, error) {
			asked = t
			return isolated, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if asked != test.Targets[0] || isolated.opened.Load() != 1 || inProcess.opened.Load() != 0 {
		t.Errorf("isolated opened %d, in-process opened %d", isolated.opened.Load(), inProcess.opened.Load())
	}
	if n := sum.Scenarios["s"].Requests["r"].Count; n == 0 {
		t.Error("no requests through the isolated protocol")
	}

	_, err = Run(context.Background(), test, Options{Protocols: protocols.NewRegistry(inProcess)})
	if err == nil || !strings.Contains(err.Error(), "isolate = true") {
		t.Errorf("Run without Isolated: %v", err)
	}
}
