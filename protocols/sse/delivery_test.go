package sse

import (
	"context"
	"fmt"
	nethttp "net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/zclconf/go-cty/cty"

	"github.com/hload/hload/plugins/protocoltest"
	"github.com/hload/hload/protocols"
	"github.com/hload/hload/protocols/delivery"
)

// What the relay does with an event the test hands it.
const (
	relayDeliver = iota // write it to the stream now
	relayDrop           // never write it
	relayHold           // keep it until relayRelease
	relayRelease        // write every held event
)

type relayCommand struct {
	id     string
	action int
	done   chan struct{} // closed once the server has done it
}

// relay is an SSE server with one subscriber, that the test drives: it
// writes, drops or holds back each event it is handed, and keeps its own
// record of what it did, to check hload's counts against.
type relay struct {
	srv  *httptest.Server
	cmds chan relayCommand

	mu                          sync.Mutex
	delivered, dropped, delayed int       // delayed: held, then written
	lastWrite                   time.Time // when it last wrote or dropped an event
}

func newRelay(t *testing.T) *relay {
	rl := &relay{cmds: make(chan relayCommand)}
	rl.srv = httptest.NewServer(nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		rc := nethttp.NewResponseController(w)
		rc.Flush()
		var held []string
		write := func(id string) {
			fmt.Fprintf(w, "data: {\"id\":%q}\n\n", id)
			rc.Flush()
		}
		for {
			select {
			case <-r.Context().Done():
				return
			case c := <-rl.cmds:
				rl.mu.Lock()
				switch c.action {
				case relayDeliver:
					write(c.id)
					rl.delivered++
				case relayDrop:
					rl.dropped++
				case relayHold:
					held = append(held, c.id)
				case relayRelease:
					for _, id := range held {
						write(id)
					}
					rl.delivered += len(held)
					rl.delayed += len(held)
					held = nil
				}
				rl.lastWrite = time.Now()
				rl.mu.Unlock()
				close(c.done)
			}
		}
	}))
	t.Cleanup(rl.srv.Close)
	return rl
}

// send records id as sent for key in the ledger, as a sender's call does,
// and hands it to the relay.
func (rl *relay) send(l *delivery.Ledger, key, id string, action int) {
	p := l.Begin(key, id)
	rl.do(relayCommand{id: id, action: action})
	p.Done(true)
}

// do has the server carry out c, and returns once it has.
func (rl *relay) do(c relayCommand) {
	c.done = make(chan struct{})
	rl.cmds <- c
	<-c.done
}

func (rl *relay) counts() (delivered, dropped, delayed int, last time.Time) {
	rl.mu.Lock()
	defer rl.mu.Unlock()
	return rl.delivered, rl.dropped, rl.delayed, rl.lastWrite
}

// subscribe opens a target at the relay with a ledger in Open's context,
// and starts one stream on key, held until the returned stop is called. It
// returns once the stream's watch expects the sends begun from then on:
// in-process, when its connect sample is out (the watch begins before it);
// isolated, also when the plugin's mirror follows key in the ledger.
func subscribe(t *testing.T, path protocoltest.Path, p protocols.Protocol, rl *relay, key, grace string) (got *samples, done <-chan struct{}, stop func(), l *delivery.Ledger) {
	t.Helper()
	l = delivery.NewLedger()
	c, err := p.Open(delivery.WithLedger(context.Background(), l), target(map[string]cty.Value{
		"base_url": str(rl.srv.URL),
		"timeout":  str("5s"),
	}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	got = &samples{}
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		c.Do(ctx, protocols.Call{VU: 1, Request: request(map[string]cty.Value{
			"path":         str("/"),
			"delivery_key": str(key),
			"id_field":     str("id"),
			"miss_grace":   str(grace),
		})}, got.emit)
	}()
	stop = func() { cancel(); <-finished }
	t.Cleanup(stop)
	waitFor(t, 10*time.Second, "the stream to connect", func() bool { return got.count(MetricConnect) == 1 })
	if path.Isolated {
		waitFor(t, 10*time.Second, "the plugin to follow the key", func() bool { return l.Followed(key) })
	}
	return got, finished, stop, l
}

// waitFor polls cond every few milliseconds for up to within, and fails
// the test naming what it waited for.
func waitFor(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(within); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("waited %s for %s", within, what)
		}
	}
}

// TestLateEventHoweverLate: events sent, held back by the server until
// they were counted missed, then delivered after 1,000 more sends, are
// counted late, as many as the server delayed; the ledger has dropped
// their sends by then (it keeps only what a stream has not settled).
func TestLateEventHoweverLate(t *testing.T) {
	protocoltest.Run(t, New(), func(t *testing.T, path protocoltest.Path, p protocols.Protocol) {
		rl := newRelay(t)
		got, _, stop, l := subscribe(t, path, p, rl, "k", "100ms")
		const held, before, after = 3, 10, 1000
		for i := range held {
			rl.send(l, "k", fmt.Sprint("held-", i), relayHold)
		}
		for i := range before {
			rl.send(l, "k", fmt.Sprint("before-", i), relayDeliver)
		}
		waitFor(t, 10*time.Second, "the held events to be counted missed", func() bool { return got.count(MetricEventsMissed) >= held })
		for i := range after {
			rl.send(l, "k", fmt.Sprint("after-", i), relayDeliver)
			if i%100 == 99 {
				// Isolated, an event can beat its send's replay to the
				// plugin, which remembers up to 256 such ids per stream
				// (docs/sse.md): keep the sends within that.
				delivered, _, _, _ := rl.counts()
				waitFor(t, 10*time.Second, "the events so far", func() bool { return got.count(MetricEvents) >= delivered })
			}
		}
		rl.do(relayCommand{action: relayRelease})
		delivered, dropped, delayed, _ := rl.counts()
		waitFor(t, 10*time.Second, "every event the server wrote to arrive", func() bool { return got.count(MetricEvents) >= delivered })
		// The late ones arrive last: give the isolated path's next sweep
		// a moment to bring their samples.
		deadline := time.Now().Add(5 * time.Second)
		for got.count(MetricEventsLate) < delayed && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		stop()
		t.Logf("server: delivered %d, delayed %d after %d more sends, dropped %d; stream: events %d, missed %d, late %d, duplicate %d",
			delivered, delayed, after, dropped, got.count(MetricEvents), got.count(MetricEventsMissed), got.count(MetricEventsLate), got.count(MetricEventsDuplicate))
		if delayed != held {
			t.Fatalf("the server delayed %d events, want %d", delayed, held)
		}
		if n := got.count(MetricEventsLate); n != delayed {
			t.Errorf("late events %d, the server delayed %d", n, delayed)
		}
		if n := got.count(MetricEventsMissed); n != delayed+dropped {
			t.Errorf("missed events %d, the server delayed %d and dropped %d", n, delayed, dropped)
		}
		if n := got.count(MetricEvents); n != delivered {
			t.Errorf("events %d, the server delivered %d", n, delivered)
		}
		if n := got.count(MetricEventsDuplicate); n != 0 {
			t.Errorf("duplicate events %d, want 0", n)
		}
	})
}

// TestSilentStreamCountsMissesOnTime: a stream that receives nothing after
// its last event still counts the events the server dropped, while it is
// held, within miss_grace and one interval of the server's last event.
func TestSilentStreamCountsMissesOnTime(t *testing.T) {
	const grace = 200 * time.Millisecond
	protocoltest.Run(t, New(), func(t *testing.T, path protocoltest.Path, p protocols.Protocol) {
		rl := newRelay(t)
		got, done, stop, l := subscribe(t, path, p, rl, "k", grace.String())
		for i := range 20 {
			action := relayDeliver
			if i%4 == 3 {
				action = relayDrop // the last event is dropped too
			}
			rl.send(l, "k", fmt.Sprint("e", i), action)
		}
		delivered, dropped, _, last := rl.counts()
		// The stream is silent from now on. Its misses must show within
		// miss_grace of the last send, plus one interval of the run's
		// output (1 s), which covers the settle tick and, isolated, the
		// plugin's sweep.
		limit := grace + time.Second
		for got.count(MetricEventsMissed) < dropped && time.Since(last) < limit+5*time.Second {
			time.Sleep(5 * time.Millisecond)
		}
		took := time.Since(last)
		missed := got.count(MetricEventsMissed)
		select {
		case <-done:
			t.Fatal("the stream ended on its own: it must be held, silent")
		default:
		}
		stop()
		t.Logf("server: delivered %d, dropped %d; stream: events %d, missed %d, counted %s after the server's last event (miss_grace %s)",
			delivered, dropped, got.count(MetricEvents), missed, took.Round(time.Millisecond), grace)
		if missed != dropped || took > limit {
			t.Errorf("a silent stream counted %d missed %s after the server's last event, want the %d the server dropped within %s",
				missed, took.Round(time.Millisecond), dropped, limit)
		}
		if n := got.count(MetricEvents); n != delivered {
			t.Errorf("events %d, the server delivered %d", n, delivered)
		}
		// Once held to its end, nothing is counted twice.
		if n := got.count(MetricEventsMissed); n != dropped {
			t.Errorf("after the stream ended: missed %d, the server dropped %d", n, dropped)
		}
	})
}
