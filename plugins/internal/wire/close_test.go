package wire

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/zclconf/go-cty/cty"

	"github.com/hload/hload/protocols"
)

// stuckCloser is a protocol whose clients' Close never returns until the
// test ends: a plugin that stopped responding after its last call.
type stuckCloser struct {
	*fake
	release chan struct{}
}

func (p stuckCloser) Open(ctx context.Context, target cty.Value) (protocols.Client, error) {
	c, err := p.fake.Open(ctx, target)
	return stuckClient{c, p.release}, err
}

type stuckClient struct {
	protocols.Client
	release chan struct{}
}

func (c stuckClient) Close() error {
	<-c.release
	return c.Client.Close()
}

// TestCloseOfStuckPlugin: a plugin that does not answer its client's
// Close within the close timeout fails, as a hang during the load does:
// Close returns the error, Failed delivers it for the run, and the
// Remote says the plugin hung, so the host kills it without asking.
func TestCloseOfStuckPlugin(t *testing.T) {
	p := stuckCloser{&fake{do: func(_ context.Context, _ protocols.Call, emit func(protocols.Sample)) { okSample(emit) }}, make(chan struct{})}
	defer close(p.release)
	h, err := newHarness(p, RemoteOptions{Name: "stuck"})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	h.closeTimeout = 100 * time.Millisecond
	c, err := h.Open(context.Background(), testTarget)
	if err != nil {
		t.Fatal(err)
	}
	if got := collect(context.Background(), c, protocols.Call{VU: 1, Request: request("/")}); len(got) != 1 || got[0].Error != "" {
		t.Fatalf("call: %+v", got)
	}
	if h.Hung() {
		t.Fatal("hung before anything hung")
	}
	start := time.Now()
	err = c.Close()
	took := time.Since(start)
	want := `plugin "stuck" stopped responding: its client did not close within 100ms`
	var perr *PluginError
	if !errors.As(err, &perr) || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("Close = %v, want %q", err, want)
	}
	select {
	case ferr := <-c.(protocols.Failer).Failed():
		if ferr != err {
			t.Errorf("Failed delivered %v, want Close's error", ferr)
		}
	default:
		t.Error("Failed delivered nothing")
	}
	if !h.Hung() {
		t.Error("Hung is false after the close timed out")
	}
	// Bounded by the close timeout, with room for a busy machine.
	if took > 10*h.closeTimeout {
		t.Errorf("Close took %v with a close timeout of %v", took, h.closeTimeout)
	}
}
