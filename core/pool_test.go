package core

import (
	"context"
	"crypto/sha256"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/zclconf/go-cty/cty"

	"github.com/hload/hload/protocols"
	hloadhttp "github.com/hload/hload/protocols/http"
)

// connServer is a loopback HTTP server that counts what it accepts: the
// connections and the requests.
type connServer struct {
	*httptest.Server
	mu       sync.Mutex
	conns    int
	requests int
}

// newConnServer starts it; idle, when not zero, closes a keep-alive
// connection that waited that long for its next request, as Node's
// servers do after 5 s and nginx after keepalive_timeout.
func newConnServer(t *testing.T, idle time.Duration) *connServer {
	cs := &connServer{}
	cs.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cs.mu.Lock()
		cs.requests++
		cs.mu.Unlock()
		w.Write([]byte("ok"))
	}))
	cs.Config.IdleTimeout = idle
	cs.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			cs.mu.Lock()
			cs.conns++
			cs.mu.Unlock()
		}
	}
	cs.Start()
	t.Cleanup(cs.Close)
	return cs
}

func (cs *connServer) counts() (conns, requests int) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return cs.conns, cs.requests
}

func openPoolTest(rate, preAllocated, maxVUs int, d time.Duration) string {
	return loopbackTarget + `scenario "open" {
  executor          = "constant-arrival-rate"
  rate              = ` + strconv.Itoa(rate) + `
  duration          = "` + d.String() + `"
  pre_allocated_vus = ` + strconv.Itoa(preAllocated) + `
  max_vus           = ` + strconv.Itoa(maxVUs) + `
  request "r" {
    path = "/r"
  }
}
`
}

// TestOpenModelKeepsConnectionsWarm: 200 iterations/s for 2 s on a pool
// of 50 VUs, against a server that closes a connection idle for 100 ms.
// The next iteration goes to the VU freed last, so a few VUs run them all
// and their connections never idle that long: the server accepts the 50
// connections of the pre-allocated VUs, and few more. A pool that handed
// iterations to the VU idle longest would use each VU every 250 ms, after
// the server closed its connection, and reconnect on nearly every one of
// the 400 iterations.
func TestOpenModelKeepsConnectionsWarm(t *testing.T) {
	srv := newConnServer(t, 100*time.Millisecond)
	test := loadTest(t, openPoolTest(200, 50, 50, 2*time.Second), map[string]string{"base_url": srv.URL})
	sum := runTest(t, test, Options{})
	conns, requests := srv.counts()
	r := sum.Scenarios["open"].Requests["r"]
	if int64(requests) != r.Count || r.Count < 380 {
		t.Fatalf("server count %d, summary count %d; want the same, about 400", requests, r.Count)
	}
	// A VU that a busy machine held past a start runs now and then, and
	// its connection may have been closed meanwhile: some room for that.
	if int64(conns) > 50+r.Count/8 {
		t.Errorf("the server accepted %d connections for %d requests from 50 VUs; want about 50: the pool cycled through its VUs", conns, r.Count)
	}
	t.Logf("%d requests, %d connections accepted", requests, conns)
}

// TestOpenModelConnectsBeforeTheFirstIteration: the pre-allocated VUs
// open their connections before the pacer starts: all 30 have connected
// when the first call is made, by the client's own record of the order,
// and the server accepts those 30 and no more at a rate a few VUs serve.
// Each connect takes 5 ms more, as over a real network, so that a pacer
// that started before them would make its first calls first.
func TestOpenModelConnectsBeforeTheFirstIteration(t *testing.T) {
	srv := newConnServer(t, 0)
	test := loadTest(t, openPoolTest(1000, 30, 30, time.Second), map[string]string{"base_url": srv.URL})
	log := &connectLog{}
	sum := runTest(t, test, Options{Protocols: protocols.NewRegistry(loggedConnects{hloadhttp.New(), log})})
	conns, requests := srv.counts()
	// The pool cannot grow past its 30 VUs: on a slow machine (the race
	// pass) some iterations find them all busy and are dropped, and
	// counted. What is checked is the order of the connects and the
	// first call, and what the server accepted.
	sc := sum.Scenarios["open"]
	if r := sc.Requests["r"]; int64(requests) != r.Count || r.Count+sc.DroppedIterations != 1000 || r.Count < 500 {
		t.Fatalf("server count %d, summary count %d, dropped %d; want the same count, 1,000 planned in all, most run",
			requests, r.Count, sc.DroppedIterations)
	}
	log.mu.Lock()
	defer log.mu.Unlock()
	if log.atFirstCall != 30 || conns != 30 {
		t.Errorf("%d VUs had connected at the first call, and the server accepted %d connections in all; want 30 and 30", log.atFirstCall, conns)
	}
}

// connectLog records how many Connect calls had returned when the first
// Do began.
type connectLog struct {
	mu          sync.Mutex
	connected   int
	called      bool
	atFirstCall int
}

// loggedConnects is a protocol whose clients log into a connectLog.
type loggedConnects struct {
	protocols.Protocol
	log *connectLog
}

func (p loggedConnects) Open(ctx context.Context, target cty.Value) (protocols.Client, error) {
	c, err := p.Protocol.Open(ctx, target)
	if err != nil {
		return nil, err
	}
	return loggedClient{c, p.log}, nil
}

type loggedClient struct {
	protocols.Client
	log *connectLog
}

func (c loggedClient) Connect(ctx context.Context, vu uint64) error {
	time.Sleep(5 * time.Millisecond)
	err := c.Client.(protocols.Connector).Connect(ctx, vu)
	c.log.mu.Lock()
	c.log.connected++
	c.log.mu.Unlock()
	return err
}

func (c loggedClient) Do(ctx context.Context, call protocols.Call, emit func(protocols.Sample)) {
	c.log.mu.Lock()
	if !c.log.called {
		c.log.called, c.log.atFirstCall = true, c.log.connected
	}
	c.log.mu.Unlock()
	c.Client.Do(ctx, call, emit)
}

// TestOpenModelPoolGrowsWhileIterationsWait: 500 iterations/s against a
// server that takes 20 ms, from a pool of 1 VU that may grow to 100. By
// Little's law about 10 VUs are busy at once; the pool grows for the
// iterations that wait, so every one runs, and the server accepts about
// as many connections as VUs were needed, not max_vus.
func TestOpenModelPoolGrowsWhileIterationsWait(t *testing.T) {
	srv := newConnServer(t, 0)
	srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		srv.mu.Lock()
		srv.requests++
		srv.mu.Unlock()
		time.Sleep(20 * time.Millisecond)
		w.Write([]byte("ok"))
	})
	test := loadTest(t, openPoolTest(500, 1, 100, time.Second), map[string]string{"base_url": srv.URL})
	sum := runTest(t, test, Options{})
	conns, requests := srv.counts()
	sc := sum.Scenarios["open"]
	if r := sc.Requests["r"]; int64(requests) != r.Count || r.Count+sc.DroppedIterations != 500 || sc.DroppedIterations > 5 {
		t.Fatalf("server count %d, summary count %d, dropped %d; want the same count, all of 500 run", requests, r.Count, sc.DroppedIterations)
	}
	// A busy machine holds some calls longer, and the pool grows for
	// them too; max_vus (100) would mean it grew for no wait.
	if conns < 8 || conns > 50 {
		t.Errorf("the server accepted %d connections; want about 10, the VUs 20 ms calls at 500/s keep busy", conns)
	}
	t.Logf("%d requests, %d connections accepted, %d dropped", requests, conns, sc.DroppedIterations)
}

// TestOpenModelPoolDoesNotGrowForItsOwnCPU: 2,000 iterations/s, each
// burning about 2 ms of hload's CPU before its call (4 cores' worth), from a
// pool of 2 VUs that may grow to 400. The load needs more CPU than the
// machine has, so the iterations wait for VUs that wait to run, not on the
// server: more VUs would start none sooner. The pool stays small, and
// the server accepts a few dozen connections; a pool that grew for every
// waiting iteration would open hundreds.
func TestOpenModelPoolDoesNotGrowForItsOwnCPU(t *testing.T) {
	srv := newConnServer(t, 0)
	test := loadTest(t, openPoolTest(2000, 2, 400, time.Second), map[string]string{"base_url": srv.URL})
	sum := runTest(t, test, Options{Protocols: protocols.NewRegistry(cpuBurner{hloadhttp.New()})})
	conns, requests := srv.counts()
	sc := sum.Scenarios["open"]
	if r := sc.Requests["r"]; int64(requests) != r.Count || r.Count+sc.DroppedIterations != 2000 {
		t.Fatalf("server count %d, summary count %d, dropped %d; want the same count, 2,000 planned in all", requests, r.Count, sc.DroppedIterations)
	}
	if conns > 100 {
		t.Errorf("the server accepted %d connections for %d requests: the pool grew for iterations that waited for hload's CPU", conns, requests)
	}
	t.Logf("%d requests, %d connections accepted, %d dropped", requests, conns, sc.DroppedIterations)
}

// cpuBurner is a protocol whose calls each burn about 2 ms of CPU (on
// this machine's cores; more on slower ones) before they are made.
type cpuBurner struct{ protocols.Protocol }

func (p cpuBurner) Open(ctx context.Context, target cty.Value) (protocols.Client, error) {
	c, err := p.Protocol.Open(ctx, target)
	if err != nil {
		return nil, err
	}
	return burningClient{c}, nil
}

type burningClient struct{ protocols.Client }

func (c burningClient) Do(ctx context.Context, call protocols.Call, emit func(protocols.Sample)) {
	var buf [4096]byte
	for range 720 {
		sum := sha256.Sum256(buf[:])
		buf[0] ^= sum[0]
	}
	c.Client.Do(ctx, call, emit)
}
