package demo

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// TestCapacityThroughput keeps the pool busy with more clients than
// workers and checks, on the pool's own clock, that it served at its
// capacity (workers / service time) and not faster, and that every
// request the clients sent is in its count. Where it served slower, the
// workers' own record of their idle time (clients too slow to keep them
// busy, as on a loaded machine) accounts for all of it.
func TestCapacityThroughput(t *testing.T) {
	c := NewCapacity(CapacityOptions{Workers: 4, ServiceTime: 20 * time.Millisecond, Queue: 64})
	srv := httptest.NewServer(c)
	defer srv.Close()
	const clients, each = 12, 20
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok := 0
	for range clients {
		wg.Go(func() {
			for range each {
				resp, err := http.Get(srv.URL)
				if err != nil {
					t.Error(err)
					return
				}
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					mu.Lock()
					ok++
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	if c.Served() != clients*each || int64(ok) != c.Served() || c.Rejected() != 0 {
		t.Fatalf("served %d, rejected %d, clients got %d OK; want %d served", c.Served(), c.Rejected(), ok, clients*each)
	}
	got := float64(c.Served()) / c.Busy().Seconds()
	const workers, service = 4, 20 * time.Millisecond
	idle := c.Idle()
	idleShare := idle.Seconds() / (workers * c.Busy().Seconds())
	t.Logf("served %d in %s on the pool's clock: %.1f requests/s, capacity %.0f; the workers idle %.1f%% of it",
		c.Served(), c.Busy(), got, c.MaxPerSecond(), 100*idleShare)
	// Never faster than its capacity, and busy for exactly one service
	// time per request: the rest is the idle time the workers saw.
	if got > c.MaxPerSecond()*1.001 {
		t.Errorf("throughput %.1f requests/s on the pool's clock, more than its capacity %.0f", got, c.MaxPerSecond())
	}
	if busy, work := workers*c.Busy()-idle, time.Duration(c.Served())*service; busy-work > time.Millisecond || work-busy > time.Millisecond {
		t.Errorf("the workers were busy %v, but served %d requests of %v: %v", busy, c.Served(), service, work)
	}
	// 12 clients for 4 workers keep them mostly busy, even on a loaded
	// machine; a pool that let them idle half the time was not tested.
	if idleShare > 0.5 {
		t.Errorf("the workers idled %.0f%% of the time", 100*idleShare)
	}
}

// TestCapacityQueueBound: beyond its workers and queue, a request is
// answered 503 at once and counted.
func TestCapacityQueueBound(t *testing.T) {
	c := NewCapacity(CapacityOptions{Workers: 1, ServiceTime: 200 * time.Millisecond, Queue: 2})
	srv := httptest.NewServer(c)
	defer srv.Close()
	const n = 10
	codes := make(chan int, n)
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			resp, err := http.Get(srv.URL)
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
			codes <- resp.StatusCode
		})
	}
	wg.Wait()
	close(codes)
	count := map[int]int64{}
	for code := range codes {
		count[code]++
	}
	// 10 at once: 1 served at once, 2 queued, 7 rejected; a client whose
	// request came after the first was served may be admitted as well.
	if count[200] != c.Served() || count[503] != c.Rejected() || count[200]+count[503] != n || c.Rejected() == 0 || c.Served() < 3 {
		t.Errorf("clients got %v; the endpoint served %d and rejected %d", count, c.Served(), c.Rejected())
	}
}
