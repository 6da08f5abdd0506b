package influxdb

import (
	"context"
	"errors"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"

	http2 "github.com/influxdata/influxdb-client-go/v2/api/http"
)

// recordWriter is the part of the client's api.WriteAPIBlocking the sink
// uses: one HTTP write, no retry of its own. Tests substitute a fake.
type recordWriter interface {
	WriteRecord(ctx context.Context, line ...string) error
}

// The client's asynchronous api.WriteAPI batches and retries by itself, but
// it discards batches whose retry time ran out or that overflow its retry
// buffer with only a log line, so it cannot say exactly how many points were
// lost. The queue below owns buffering and retries instead, and counts every
// point: accepted = written + rejected + unsent, offered = accepted + dropped.

// chunk is a batch of encoded points, each ending in a newline.
type chunk struct {
	buf []byte
	n   int
}

// queue holds the accepted points that InfluxDB has not confirmed yet, up
// to limit, including the batch being sent. Producers (Write, and WriteRaw
// from many VUs) append under a mutex and never wait for the network; a
// point that would exceed the bound is refused and counted as dropped.
type queue struct {
	limit int // points
	batch int // points per write

	mu          sync.Mutex
	chunks      []*chunk // waiting, oldest first; only the last one grows
	free        []*chunk
	points      int // accepted and not yet written, rejected or given up
	peak        int // the most points held at once
	closed      bool
	counts      Counts
	onFirstDrop func() // called once, outside the lock, at the first drop

	wake chan struct{} // capacity 1: there is something to send
}

// Counts are the sink's end-of-run figures, in points.
type Counts struct {
	Written  int64 // confirmed by InfluxDB
	Retried  int64 // among Written, those that had failed an attempt before (each point counted once)
	Dropped  int64 // refused because the buffer was full; never accepted
	Rejected int64 // refused by InfluxDB as invalid (4xx); not retried
	Unsent   int64 // still buffered when Close gave up waiting for InfluxDB
}

func newQueue(limit, batch int) *queue {
	return &queue{limit: limit, batch: batch, wake: make(chan struct{}, 1)}
}

// push copies one encoded point into the queue and reports whether it was
// accepted. It never blocks on the network.
func (q *queue) push(p []byte) bool {
	q.mu.Lock()
	if q.closed || q.points >= q.limit {
		q.counts.Dropped++
		first := q.counts.Dropped == 1
		f := q.onFirstDrop
		q.mu.Unlock()
		if first && f != nil {
			f()
		}
		return false
	}
	var c *chunk
	if n := len(q.chunks); n > 0 && q.chunks[n-1].n < q.batch {
		c = q.chunks[n-1]
	} else {
		c = q.newChunk()
		q.chunks = append(q.chunks, c)
	}
	c.buf = append(c.buf, p...)
	c.n++
	q.points++
	q.peak = max(q.peak, q.points)
	full := c.n == q.batch
	q.mu.Unlock()
	if full {
		q.signal()
	}
	return true
}

func (q *queue) newChunk() *chunk {
	if n := len(q.free); n > 0 {
		c := q.free[n-1]
		q.free = q.free[:n-1]
		return c
	}
	return &chunk{}
}

// signal wakes the sender without waiting.
func (q *queue) signal() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// take removes the oldest batch for sending; its points stay counted in
// q.points until settle. It returns nil when nothing waits, and whether the
// queue is closed, in one step: nil and closed means it is drained for good.
func (q *queue) take() (c *chunk, closed bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.chunks) == 0 {
		return nil, q.closed
	}
	c = q.chunks[0]
	q.chunks[0] = nil
	q.chunks = q.chunks[1:]
	return c, q.closed
}

// topUp moves waiting batches into c while the result stays within the
// batch size, so that a batch being retried carries the points that
// arrived meanwhile: after an outage the backlog goes out in few writes.
func (q *queue) topUp(c *chunk) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.chunks) > 0 && c.n+q.chunks[0].n <= q.batch {
		next := q.chunks[0]
		q.chunks[0] = nil
		q.chunks = q.chunks[1:]
		c.buf = append(c.buf, next.buf...)
		c.n += next.n
		next.buf, next.n = next.buf[:0], 0
		if len(q.free) < 4 {
			q.free = append(q.free, next)
		}
	}
}

// outcome is what became of a batch.
type outcome int

const (
	written outcome = iota
	rejected
	unsent
)

// settle records what became of a taken batch and recycles it; retried
// of its points had failed an attempt before.
func (q *queue) settle(c *chunk, o outcome, retried int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := int64(c.n)
	q.points -= c.n
	switch o {
	case written:
		q.counts.Written += n
	case rejected:
		q.counts.Rejected += n
	case unsent:
		q.counts.Unsent += n
	}
	if o == written {
		q.counts.Retried += int64(retried)
	}
	// Very large batches (raw points at a high rate) are not kept, so
	// a burst does not pin its memory for the rest of the run.
	if cap(c.buf) <= 4<<20 && len(q.free) < 4 {
		c.buf, c.n = c.buf[:0], 0
		q.free = append(q.free, c)
	}
}

// close refuses further points and wakes the sender so it drains.
func (q *queue) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	q.signal()
}

// pending is how many accepted points wait for InfluxDB.
func (q *queue) pending() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.points
}

func (q *queue) snapshot() (Counts, int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.counts, q.peak
}

// Retry timing. The first retry comes soon, so a brief blip costs little;
// the wait doubles up to retryMax so that a long outage is not hammered,
// and a recovered server is noticed within retryMax.
const (
	retryFirst = 250 * time.Millisecond
	retryMax   = 2 * time.Second
	// flushEvery bounds how long a partial batch waits (raw points only:
	// every interval's points wake the sender themselves).
	flushEvery = time.Second
)

// sender is the one goroutine that writes batches to InfluxDB.
type sender struct {
	q       *queue
	w       recordWriter
	timeout time.Duration // per HTTP write

	// abort is cancelled when Close stops waiting; a write or backoff in
	// progress then ends at once.
	abort context.Context
	// events reports outages and rejections as they happen.
	events func(e sendEvent)
	done   chan struct{}
}

type sendEvent struct {
	kind     string // "failing", "recovered" or "rejected"
	err      error
	points   int
	duration time.Duration // of the outage, for "recovered"
}

func (s *sender) run() {
	defer close(s.done)
	tick := time.NewTicker(flushEvery)
	defer tick.Stop()
	for {
		c, closed := s.q.take()
		if c != nil {
			s.send(c)
			continue
		}
		if closed {
			return // drained: every accepted point is settled
		}
		select {
		case <-s.q.wake:
		case <-tick.C:
		case <-s.abort.Done():
		}
	}
}

// send writes one batch until InfluxDB confirms or rejects it, or Close
// gives up. While it retries, producers keep filling the queue up to its
// bound.
func (s *sender) send(c *chunk) {
	var failingSince time.Time
	failed := 0 // the first failed points of c have failed an attempt
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			s.q.topUp(c)
		}
		ctx, cancel := context.WithTimeout(s.abort, s.timeout)
		err := s.w.WriteRecord(ctx, string(c.buf))
		cancel()
		if err == nil {
			s.q.settle(c, written, failed)
			if attempt > 0 {
				s.events(sendEvent{kind: "recovered", duration: time.Since(failingSince)})
			}
			return
		}
		failed = c.n
		if s.abort.Err() != nil {
			s.q.settle(c, unsent, failed)
			return
		}
		if permanent(err) {
			s.q.settle(c, rejected, failed)
			s.events(sendEvent{kind: "rejected", err: err, points: c.n})
			return
		}
		if attempt == 0 {
			failingSince = time.Now()
			s.events(sendEvent{kind: "failing", err: err})
		}
		wait := backoff(attempt, err)
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-s.abort.Done():
			t.Stop()
		}
	}
}

// backoff is the wait before retry attempt+1: exponential with jitter, or
// what the server asked for in Retry-After.
func backoff(attempt int, err error) time.Duration {
	var he *http2.Error
	if errors.As(err, &he) && he.RetryAfter > 0 {
		return min(time.Duration(he.RetryAfter)*time.Second, 4*retryMax)
	}
	d := retryFirst << min(attempt, 8)
	d = min(d, retryMax)
	// ±20 % so that several hload instances do not retry in step.
	return d - d/5 + time.Duration(rand.Int64N(int64(d/5)*2+1))
}

// permanent reports whether InfluxDB refused the batch itself, so a retry
// would fail the same way. Network errors, timeouts, 408, 429 and 5xx are
// worth retrying; other 4xx (bad line protocol, a field type conflict,
// no such bucket, no permission) are not.
func permanent(err error) bool {
	var he *http2.Error
	if !errors.As(err, &he) || he.StatusCode == 0 {
		return false
	}
	switch {
	case he.StatusCode == http.StatusRequestTimeout, he.StatusCode == http.StatusTooManyRequests:
		return false
	case he.StatusCode >= 400 && he.StatusCode < 500:
		return true
	}
	return false
}
