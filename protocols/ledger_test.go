package protocols

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"
)

func send(l *Ledger, key, id string, ok bool) {
	l.Begin(key, id).Done(ok)
}

func TestLedgerCountsMissedIDs(t *testing.T) {
	l := NewLedger()
	send(l, "u1", "before", true) // sent before the watch: not expected
	w := l.Watch("u1")
	other := l.Watch("u2")
	for i := range 10 {
		send(l, "u1", fmt.Sprint("e", i), i != 9) // e9's call failed
	}
	send(l, "u2", "x", true)

	for _, id := range []string{"e0", "e2", "e4", "e9"} {
		if got := w.Received([]byte(id)); got != ReceiptFirst {
			t.Errorf("Received(%s) = %d, want first", id, got)
		}
	}
	if got := w.Received([]byte("e2")); got != ReceiptDuplicate {
		t.Errorf("second Received(e2) = %d, want duplicate", got)
	}
	for _, id := range []string{"before", "x", "never-sent"} {
		if got := w.Received([]byte(id)); got != ReceiptUnknown {
			t.Errorf("Received(%s) = %d, want unknown", id, got)
		}
	}
	// e1, e3, e5, e6, e7, e8 were confirmed and not received; e9 failed.
	if got := w.Close(time.Now().Add(time.Hour), 0); got != 6 {
		t.Errorf("missed = %d, want 6", got)
	}
	if got := other.Close(time.Now().Add(time.Hour), 0); got != 1 {
		t.Errorf("u2 missed = %d, want 1", got)
	}
}

func TestLedgerGraceAndPending(t *testing.T) {
	l := NewLedger()
	w := l.Watch("k")
	send(l, "k", "old", true)
	inFlight := l.Begin("k", "flying")
	// Nothing is settled while the grace has not passed.
	if got := w.Settle(time.Now(), time.Hour); got != 0 {
		t.Fatalf("Settle within grace = %d, want 0", got)
	}
	// The pending send stops a Settle walk; "old" is settled before it.
	if got := w.Settle(time.Now().Add(time.Hour), 0); got != 1 {
		t.Fatalf("Settle = %d, want 1 (old)", got)
	}
	if got := w.Received([]byte("old")); got != ReceiptLate {
		t.Errorf("Received(old) after it was counted missed = %d, want late", got)
	}
	// At Close a send still in flight is not counted, nor one confirmed
	// within the grace before the end.
	send(l, "k", "recent", true)
	if got := w.Close(time.Now(), time.Minute); got != 0 {
		t.Errorf("Close = %d, want 0", got)
	}
	inFlight.Done(true)
	if got := w.Close(time.Now(), 0); got != 0 {
		t.Errorf("second Close = %d, want 0", got)
	}
}

// TestLedgerMemoryFollowsBacklog checks that a key keeps only what a watch
// has not settled, and nothing once nobody watches.
func TestLedgerMemoryFollowsBacklog(t *testing.T) {
	l := NewLedger()
	w := l.Watch("k")
	for i := range 10_000 {
		id := fmt.Sprint(i)
		send(l, "k", id, true)
		w.Received([]byte(id))
		if i%100 == 99 {
			if got := w.Settle(time.Now().Add(time.Second), 0); got != 0 {
				t.Fatalf("missed %d", got)
			}
		}
	}
	k := l.key("k")
	k.mu.Lock()
	kept, index := len(k.entries), len(k.byHash)
	k.mu.Unlock()
	// What is kept is the unsettled backlog (up to 100 sends) plus what
	// the amortised trim has not dropped yet (under trimEvery sends).
	if bound := 100 + trimEvery; kept > bound || index > bound {
		t.Errorf("key keeps %d entries and %d hashes with a settled watch, want at most %d", kept, index, bound)
	}
	if len(w.received) > 100/64+2 {
		t.Errorf("watch keeps %d bitmap words", len(w.received))
	}
	w.Close(time.Now(), 0)
	for i := range trimEvery {
		send(l, "k", fmt.Sprint("after", i), true)
	}
	k.mu.Lock()
	kept = len(k.entries)
	k.mu.Unlock()
	if kept >= trimEvery {
		t.Errorf("key keeps %d entries with no watch", kept)
	}
}

func TestLedgerConcurrent(t *testing.T) {
	l := NewLedger()
	const senders, perSender, watchers = 4, 500, 4
	ws := make([]*Watch, watchers)
	for i := range ws {
		ws[i] = l.Watch("k")
	}
	ids := make(chan string, senders*perSender)
	var wg sync.WaitGroup
	for s := range senders {
		wg.Go(func() {
			for i := range perSender {
				id := fmt.Sprint(s, "-", i)
				p := l.Begin("k", id)
				ids <- id
				p.Done(true)
			}
		})
	}
	wg.Wait()
	close(ids)
	var all []string
	for id := range ids {
		all = append(all, id)
	}
	var rw sync.WaitGroup
	for i, w := range ws {
		rw.Go(func() {
			for j, id := range all {
				if j%watchers != i { // each watcher misses 3 in 4
					continue
				}
				w.Received([]byte(id))
				w.Settle(time.Now(), time.Hour)
			}
		})
	}
	rw.Wait()
	total := 0
	for _, w := range ws {
		total += w.Close(time.Now().Add(time.Hour), 0)
	}
	if want := (watchers - 1) * senders * perSender; total != want {
		t.Errorf("missed = %d, want %d", total, want)
	}
}

func TestLedgerAndEndingInContext(t *testing.T) {
	ctx := context.Background()
	if LedgerFrom(ctx) != nil || Ending(ctx) != nil {
		t.Fatal("empty context carries a ledger or an ending")
	}
	l := NewLedger()
	ch := make(chan struct{})
	ctx = WithEnding(WithLedger(ctx, l), ch)
	if LedgerFrom(ctx) != l {
		t.Error("LedgerFrom did not return the ledger")
	}
	close(ch)
	select {
	case <-Ending(ctx):
	default:
		t.Error("Ending did not return the channel")
	}
}
