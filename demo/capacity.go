package demo

import (
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// The capacity endpoint's defaults: 4 workers of 20 ms each serve at most
// 200 requests/s, low enough that the load generator on the same machine is
// never what limits it.
const (
	DefaultCapacityWorkers     = 4
	DefaultCapacityServiceTime = 20 * time.Millisecond
	DefaultCapacityQueue       = 64
)

// CapacityOptions size a Capacity endpoint; zero values take the defaults.
type CapacityOptions struct {
	Workers     int
	ServiceTime time.Duration
	// Queue is how many requests may wait for a worker; beyond it a
	// request is answered 503 at once.
	Queue int
}

// Capacity is an endpoint of known capacity, for a capacity search to find:
// a fixed pool of workers that each serve one request in a fixed service
// time, so that at most Workers / ServiceTime requests/s are served, and a
// bounded queue in front of them. Each worker keeps its own clock: a
// request starts when it arrives or when the worker became free, whichever
// is later, and ends exactly one service time after, so that a late
// wake-up of the server's goroutine does not lower the capacity.
type Capacity struct {
	serviceTime time.Duration
	admitted    chan struct{} // one per request in the pool: queued or served
	workers     chan *capacityWorker

	served, rejected atomic.Int64

	mu          sync.Mutex
	first, last time.Time // the first start and the last end on the workers' clocks
	all         []*capacityWorker
	gaps        time.Duration // the workers' idle time between two of their requests
}

type capacityWorker struct {
	free  time.Time // when its last request ended, on its own clock
	first time.Time // when its first request started; guarded by Capacity.mu
}

// NewCapacity returns a Capacity endpoint.
func NewCapacity(opts CapacityOptions) *Capacity {
	if opts.Workers <= 0 {
		opts.Workers = DefaultCapacityWorkers
	}
	if opts.ServiceTime <= 0 {
		opts.ServiceTime = DefaultCapacityServiceTime
	}
	if opts.Queue <= 0 {
		opts.Queue = DefaultCapacityQueue
	}
	c := &Capacity{
		serviceTime: opts.ServiceTime,
		admitted:    make(chan struct{}, opts.Workers+opts.Queue),
		workers:     make(chan *capacityWorker, opts.Workers),
	}
	for range opts.Workers {
		wk := &capacityWorker{}
		c.all = append(c.all, wk)
		c.workers <- wk
	}
	return c
}

// MaxPerSecond is the endpoint's capacity: workers / service time.
func (c *Capacity) MaxPerSecond() float64 {
	return float64(cap(c.workers)) / c.serviceTime.Seconds()
}

// Served and Rejected count the requests answered 200 and 503.
func (c *Capacity) Served() int64   { return c.served.Load() }
func (c *Capacity) Rejected() int64 { return c.rejected.Load() }

// Busy returns the span from the first request's start to the last one's
// end on the workers' clocks: Served() / Busy() is the throughput the
// pool achieved.
func (c *Capacity) Busy() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.last.Sub(c.first)
}

// Idle returns the workers' idle time, summed over the workers, within
// Busy's span: the time a worker had no request to serve. Workers x Busy()
// is exactly Served() x the service time plus Idle(), so a throughput
// below capacity is the clients' (they kept the workers idle), never the
// pool's.
func (c *Capacity) Idle() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	idle := c.gaps
	for _, wk := range c.all {
		if wk.first.IsZero() {
			idle += c.last.Sub(c.first)
			continue
		}
		idle += wk.first.Sub(c.first) + c.last.Sub(wk.free)
	}
	return idle
}

// ServeHTTP serves GET /capacity: 200 "ok" after one service time on a
// worker, or 503 when the queue is full.
func (c *Capacity) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	arrived := time.Now()
	select {
	case c.admitted <- struct{}{}:
	default:
		c.rejected.Add(1)
		http.Error(w, "capacity: queue full", http.StatusServiceUnavailable)
		return
	}
	defer func() { <-c.admitted }()
	var wk *capacityWorker
	select {
	case wk = <-c.workers:
	case <-r.Context().Done():
		return
	}
	// A request that waited starts when the worker became free on its
	// clock, not when its goroutine woke.
	start := arrived
	if wk.free.After(start) {
		start = wk.free
	}
	var gap time.Duration
	if !wk.free.IsZero() && start.After(wk.free) {
		gap = start.Sub(wk.free)
	}
	end := start.Add(c.serviceTime)
	if wait := time.Until(end); wait > 0 {
		time.Sleep(wait)
	}
	c.note(wk, start, end, gap)
	c.workers <- wk
	c.served.Add(1)
	w.Header().Set("Content-Type", "text/plain")
	_, _ = w.Write([]byte("ok\n"))
}

// note records a request the worker served, gap after its previous one.
func (c *Capacity) note(wk *capacityWorker, start, end time.Time, gap time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	wk.free = end
	if wk.first.IsZero() {
		wk.first = start
	}
	c.gaps += gap
	if c.first.IsZero() || start.Before(c.first) {
		c.first = start
	}
	if end.After(c.last) {
		c.last = end
	}
}
