package csv

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
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
//
// The file holds whole rows only: a write that stops part-way (a full
// disk) is cut back to the end of its last whole row, so the rows the
// error counts as written are exactly the rows in the file. After each
// write the spool checks that the file is still the one at its path: a
// file deleted with its folder, or replaced, holds rows nobody will read,
// and they all count as lost.
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
	headers  int64 // rows among accepted that are the header, not data
	// gone says the file at name is no longer the one written: every
	// row is lost.
	gone bool

	// The writer's own: the bytes of whole rows in the file, where a cut
	// row is cut back to, and the file as opened, to tell it from what
	// is at its path later.
	size   int64
	opened os.FileInfo

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
	if st, ok := out.(stater); ok {
		s.opened, _ = st.Stat()
	}
	go s.run()
	return s
}

// stater and truncater are what an *os.File offers besides writes: the
// spool uses them when the file has them, and tests' fakes need not.
type (
	stater    interface{ Stat() (os.FileInfo, error) }
	truncater interface{ Truncate(size int64) error }
)

// header adds the file's header row, which the counts of rows in errors
// leave out.
func (s *spool) header(p []byte) {
	s.mu.Lock()
	s.headers++
	s.mu.Unlock()
	s.append(p, 1)
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
// the first error, with how many data rows it cost. It is safe to call
// more than once.
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
	rows := s.accepted - s.headers
	if s.gone {
		return fmt.Errorf("%w: all %d rows are lost", s.err, rows)
	}
	if lost := rows - s.dataWritten(); lost > 0 {
		return fmt.Errorf("%w (%d of %d rows not written; the file holds the other %d, each whole)", s.err, lost, rows, s.dataWritten())
	}
	return s.err
}

// dataWritten is the data rows in the file. s.mu must be held.
func (s *spool) dataWritten() int64 {
	return max(0, s.written-s.headers)
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
			s.write(batch, rows)
		}
		if closing {
			break
		}
	}
	if err := s.out.Close(); err != nil {
		s.setErr(fmt.Errorf("closing %s: %w", s.name, err))
	}
}

// write writes one batch of whole rows. A write that fails part-way is cut
// back to its last whole row, so the file never ends in a partial one.
func (s *spool) write(batch []byte, rows int64) {
	n, err := s.out.Write(batch)
	if err == nil {
		s.size += int64(n)
		s.mu.Lock()
		s.written += rows
		s.mu.Unlock()
		s.checkOnDisk()
		return
	}
	whole, complete := wholeRows(batch[:n])
	s.size += int64(whole)
	s.mu.Lock()
	s.written += complete
	s.mu.Unlock()
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err // the path is named once, below
	}
	err = fmt.Errorf("writing %s: %w", s.name, err)
	if whole < n {
		t, ok := s.out.(truncater)
		if !ok {
			err = fmt.Errorf("%w; its last row is cut off", err)
		} else if terr := t.Truncate(s.size); terr != nil {
			err = fmt.Errorf("%w; its last row is cut off (cutting it back failed: %v)", err, terr)
		}
	}
	s.setErr(err)
	s.checkOnDisk()
}

// checkOnDisk fails the spool when the file at its path is no longer the
// one it writes: deleted (with its folder, say) or replaced. An open file
// takes writes even then, and they would be lost without a word.
func (s *spool) checkOnDisk() {
	if s.opened == nil || !s.opened.Mode().IsRegular() {
		return // a fake, or a device such as /dev/null
	}
	now, err := os.Stat(s.name)
	if err == nil && os.SameFile(s.opened, now) {
		return
	}
	what := "was replaced by another file during the run"
	if errors.Is(err, os.ErrNotExist) {
		what = "was deleted during the run, or its folder was"
	}
	s.mu.Lock()
	s.gone = true
	s.mu.Unlock()
	s.setErr(fmt.Errorf("%s %s", s.name, what))
}

// wholeRows returns how many bytes of p are whole rows, and how many rows
// that is. A row ends at a newline outside quotes: a quoted field may hold
// newlines, and a doubled quote inside one toggles twice.
func wholeRows(p []byte) (bytes int, rows int64) {
	quoted := false
	for i, c := range p {
		switch {
		case c == '"':
			quoted = !quoted
		case c == '\n' && !quoted:
			bytes = i + 1
			rows++
		}
	}
	return bytes, rows
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
