package core

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hload/hload/metrics"
)

// TestInterrupterPhases: during the load the first interrupt stops the
// run gracefully and the second cancels; after it, an interrupt ends the
// wait for the sinks, whatever came before.
func TestInterrupterPhases(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	i := NewInterrupter(cancel)
	if msg := i.Interrupt(); !strings.Contains(msg, "stopping gracefully") || isClosed(ctx.Done()) || !isClosed(i.Stop()) {
		t.Errorf("first: %q, cancelled %v, stopped %v", msg, isClosed(ctx.Done()), isClosed(i.Stop()))
	}
	if msg := i.Interrupt(); !strings.Contains(msg, "cancelling") || !isClosed(ctx.Done()) {
		t.Errorf("second: %q, cancelled %v", msg, isClosed(ctx.Done()))
	}
	abandon := i.loadEnded()
	if isClosed(abandon) {
		t.Fatal("the interrupts during the load abandoned the sinks' flush")
	}
	if msg := i.Interrupt(); !strings.Contains(msg, "no longer waiting for the sinks") || !isClosed(abandon) {
		t.Errorf("after the load: %q, abandoned %v", msg, isClosed(abandon))
	}
	i.Interrupt() // again: no panic on a closed channel
	if (*Interrupter)(nil).loadEnded() != nil {
		t.Error("a nil Interrupter abandons")
	}
}

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// waitingSink's Close waits until it is abandoned, as an InfluxDB sink
// whose server does not take its points.
type waitingSink struct {
	snapshotSink
	closing   chan struct{}
	abandoned chan struct{}
}

func (s *waitingSink) Close(metrics.Summary) error {
	close(s.closing)
	select {
	case <-s.abandoned:
	case <-time.After(time.Minute):
	}
	return nil
}

func (s *waitingSink) Abandon() { close(s.abandoned) }

// TestInterruptWhileSinksClose: an interrupt while a sink's Close waits
// makes it give up; the sinks closed after it, the console among them,
// and the caller get a summary that says the run was interrupted.
func TestInterruptWhileSinksClose(t *testing.T) {
	p := newFaultProtocol()
	_, cancel := context.WithCancel(context.Background())
	defer cancel()
	intr := NewInterrupter(cancel)
	console := &snapshotSink{}
	waiting := &waitingSink{closing: make(chan struct{}), abandoned: make(chan struct{})}
	go func() {
		<-waiting.closing
		intr.Interrupt()
	}()
	start := time.Now()
	sum, err := runFault(t, p, `
scenario "s" {
  executor   = "iterations"
  vus        = 1
  iterations = 3
  request "r" {}
}
`, Options{Sinks: []Sink{console, waiting}, Stop: intr.Stop(), Interrupter: intr})
	if err != nil {
		t.Fatal(err)
	}
	if !sum.Interrupted || !console.sum.Interrupted {
		t.Errorf("summary interrupted %v, the console's %v", sum.Interrupted, console.sum.Interrupted)
	}
	if took := time.Since(start); took > 30*time.Second {
		t.Errorf("the run took %v: the sink's wait was not abandoned", took)
	}
	if n := sum.Scenarios["s"].Requests["r"].Count; n != 3 {
		t.Errorf("%d calls, want 3", n)
	}
}
