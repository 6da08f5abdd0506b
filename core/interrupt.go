package core

import (
	"context"
	"sync"
)

// Interrupter turns the user's interrupts (Ctrl-C, SIGTERM), which the CLI
// hands over one at a time, into what each means at the point the run is
// at. During the load, the first stops the run gracefully, as at its
// planned end, and the second cancels the calls in flight. Once the load
// has ended, an interrupt ends at once the wait for what is left: sinks
// still flushing (an InfluxDB that does not take its points) give up what
// they hold, and the run counts as interrupted. It holds no signal
// handling: the CLI owns that.
type Interrupter struct {
	cancel context.CancelFunc

	mu      sync.Mutex
	count   int  // interrupts during the load
	ending  bool // the load has ended
	stop    chan struct{}
	abandon chan struct{}
}

// NewInterrupter returns an Interrupter whose second interrupt during the
// load calls cancel, which should cancel the context the run was given.
func NewInterrupter(cancel context.CancelFunc) *Interrupter {
	return &Interrupter{cancel: cancel, stop: make(chan struct{}), abandon: make(chan struct{})}
}

// Stop is closed by the first interrupt during the load; it is what
// Options.Stop should be.
func (i *Interrupter) Stop() <-chan struct{} { return i.stop }

// Interrupt acts on one interrupt and says what it did, for the user.
func (i *Interrupter) Interrupt() string {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.ending {
		select {
		case <-i.abandon:
			return "already no longer waiting"
		default:
			close(i.abandon)
		}
		return "no longer waiting for the sinks to flush; what they still hold is lost"
	}
	i.count++
	switch i.count {
	case 1:
		close(i.stop)
		return "stopping gracefully; press Ctrl-C again to cancel requests in flight"
	case 2:
		i.cancel()
		return "cancelling the requests in flight"
	}
	return "already cancelling the requests in flight"
}

// loadEnded makes later interrupts end the wait for what is left, and
// returns the channel they close. A nil Interrupter's is nil: no
// interrupt comes.
func (i *Interrupter) loadEnded() <-chan struct{} {
	if i == nil {
		return nil
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	i.ending = true
	return i.abandon
}
