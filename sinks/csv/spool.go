package csv

import (
	"fmt"
	"io"
	"sync"
	"time"
)

// spool hands rows from the run's goroutines to one writer goroutine that
// owns the file. Producers append encoded rows to a pending batch under a
// mutex; the writer swaps the whole batch out and writes it with one call.
// Measured against a buffered channel of records (BenchmarkWriteRaw*), this
// costs a short critical section and a memcpy per row instead of a channel
// operation, and the file gets one write syscall per batch instead of one
// per row.
//
// The writer takes a batch once it holds flushSize bytes, at least once a
// second while rows wait, and at close. When the pending batch reaches limit
// bytes, producers block until the writer catches up: a slow disk slows the
// run down rather than losing rows. After a write error nothing more reaches
// the file; rows are still counted, so the error returned by close says how
// many were not written.
type spool struct {
	name      string // file path, for error messages
	out       io.WriteCloser
	flushSize int
	limit     int

	mu       sync.Mutex
	hasRoom  sync.Cond // signalled when the writer takes a batch
	pending  []byte
	rows     int64 // rows in pending
	idle     bool  // the writer is waiting on wake
	closed   bool
	waiting  int   // producers blocked on hasRoom
	accepted int64 // rows handed to the spool, written or not
	written  int64 // rows the file accepted
	late     int64 // rows offered after close; the sink's caller broke the contract
	err      error // the first write error

	wake chan struct{} // capacity 1; wakes an idle writer
	done chan struct{} // closed when the writer has written everything and closed out
}

// spoolFlushEvery bounds how long rows may wait while the run is quiet, so
// that `tail -f` on the file shows progress.
const spoolFlushEvery = time.Second

func newSpool(name string, out io.WriteCloser, flushSize, limit int) *spool {
	s := &spool{
		name:      name,
		out:       out,
		flushSize: flushSize,
		limit:     limit,
		wake:      make(chan struct{}, 1),
		done:      make(chan struct{}),
	}
	s.hasRoom.L = &s.mu
	go s.run()
	return s
}

// append adds rows encoded rows held in p. It copies p, so the caller may
// reuse it. It blocks while the pending batch is full.
func (s *spool) append(p []byte, rows int64) {
	s.mu.Lock()
	for len(s.pending) >= s.limit && !s.closed && s.err == nil {
		s.waiting++
		s.hasRoom.Wait()
		s.waiting--
	}
	switch {
	case s.closed:
		s.late += rows
	case s.err != nil:
		// Counted as accepted and never written: close reports the gap.
		s.accepted += rows
	default:
		s.pending = append(s.pending, p...)
		s.rows += rows
		s.accepted += rows
		if s.idle {
			s.idle = false
			s.wakeWriter()
		}
	}
	s.mu.Unlock()
}

// wakeWriter wakes the writer without blocking: a token already waiting
// wakes it just as well.
func (s *spool) wakeWriter() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// failed returns the first write error, if any.
func (s *spool) failed() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// close writes everything accepted before it, closes the file and returns
// the first error. It is safe to call more than once.
func (s *spool) close() error {
	s.mu.Lock()
	if !s.closed {
		s.closed = true
		s.idle = false
		s.wakeWriter()
		s.hasRoom.Broadcast()
	}
	s.mu.Unlock()
	<-s.done

	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err == nil {
		if s.late > 0 {
			return fmt.Errorf("writing %s: %d rows arrived after close and were not written", s.name, s.late)
		}
		return nil
	}
	if lost := s.accepted - s.written; lost > 0 {
		return fmt.Errorf("%w (%d of %d rows not written)", s.err, lost, s.accepted)
	}
	return s.err
}

// run is the writer goroutine. It is deliberately not tied to the run's
// context: an interrupted run must still be written out, and close is what
// ends it.
func (s *spool) run() {
	defer close(s.done)
	tick := time.NewTicker(spoolFlushEvery)
	defer tick.Stop()

	var batch []byte // the spare buffer, swapped with pending
	for {
		s.mu.Lock()
		for !s.closed && len(s.pending) < s.flushSize {
			s.idle = true
			s.mu.Unlock()
			due := false
			select {
			case <-s.wake:
			case <-tick.C:
				due = true
			}
			s.mu.Lock()
			if due && len(s.pending) > 0 {
				break
			}
		}
		s.idle = false
		batch, s.pending = s.pending, batch[:0]
		rows := s.rows
		s.rows = 0
		closing := s.closed // producers add nothing once closed
		if s.waiting > 0 {
			s.hasRoom.Broadcast()
		}
		ok := s.err == nil
		s.mu.Unlock()

		if ok && len(batch) > 0 {
			if _, err := s.out.Write(batch); err != nil {
				s.setErr(fmt.Errorf("writing %s: %w", s.name, err))
			} else {
				s.mu.Lock()
				s.written += rows
				s.mu.Unlock()
			}
		}
		if closing {
			break
		}
	}
	if err := s.out.Close(); err != nil {
		s.setErr(fmt.Errorf("closing %s: %w", s.name, err))
	}
}

// setErr remembers err if it is the first.
func (s *spool) setErr(err error) {
	if err == nil {
		return
	}
	s.mu.Lock()
	if s.err == nil {
		s.err = err
		// Producers blocked on a full batch must not wait for a writer
		// that will no longer write.
		s.hasRoom.Broadcast()
	}
	s.mu.Unlock()
}
