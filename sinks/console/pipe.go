package console

import (
	"errors"
	"io"
	"sync/atomic"
	"syscall"
)

// closedPipe passes writes through until the reader goes away (a broken
// pipe, as after `hload apply ... | head -1`), then drops them. Nobody
// reads the console any more, and its lines are no result of the run:
// the run goes on, and its files and exports are still written.
type closedPipe struct {
	w      io.Writer
	closed atomic.Bool
}

func (p *closedPipe) Write(b []byte) (int, error) {
	if p.closed.Load() {
		return len(b), nil
	}
	n, err := p.w.Write(b)
	if errors.Is(err, syscall.EPIPE) {
		p.closed.Store(true)
		return len(b), nil
	}
	return n, err
}
