package delivery

import (
	"context"
	"fmt"
	"runtime"
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

func TestLedgerInContext(t *testing.T) {
	ctx := context.Background()
	if LedgerFrom(ctx) != nil {
		t.Fatal("empty context carries a ledger")
	}
	l := NewLedger()
	ctx = WithLedger(ctx, l)
	if LedgerFrom(ctx) != l {
		t.Error("LedgerFrom did not return the ledger")
	}
}

// TestLedgerFollow: a follower sees every later Begin and Done of its key,
// in order, with the ids; not the sends begun before it followed, not
// another key's, and nothing once stopped.
func TestLedgerFollow(t *testing.T) {
	l := NewLedger()
	early := l.Begin("k", "before") // begun before the follow: never seen
	var steps []SendStep
	stop := l.Follow("k", func(s SendStep) { steps = append(steps, s) })
	a := l.Begin("k", "a")
	send(l, "other", "x", true) // another key: not seen
	b := l.Begin("k", "b")
	early.Done(true)
	b.Done(false)
	a.Done(true)
	want := []SendStep{
		{Number: 1, ID: "a"},
		{Number: 2, ID: "b"},
		{Number: 2, Done: true},
		{Number: 1, Done: true, OK: true},
	}
	if fmt.Sprint(steps) != fmt.Sprint(want) {
		t.Errorf("steps = %+v, want %+v", steps, want)
	}
	stop()
	send(l, "k", "after", true)
	if len(steps) != len(want) {
		t.Errorf("steps after stop: %+v", steps[len(want):])
	}
	if k := l.key("k"); k.followers != nil {
		t.Errorf("followers left after stop: %d", len(k.followers))
	}
	stop() // twice is fine
}

// TestLedgerFollowOrderConcurrent: with senders racing, each follower sees
// the key's Begins numbered in order and each Done after its Begin.
func TestLedgerFollowOrderConcurrent(t *testing.T) {
	l := NewLedger()
	var mu sync.Mutex
	var steps []SendStep
	stop := l.Follow("k", func(s SendStep) {
		mu.Lock()
		steps = append(steps, s)
		mu.Unlock()
	})
	defer stop()
	const senders, perSender = 4, 500
	var wg sync.WaitGroup
	for s := range senders {
		wg.Go(func() {
			for i := range perSender {
				send(l, "k", fmt.Sprint(s, "-", i), i%2 == 0)
			}
		})
	}
	wg.Wait()
	begun := map[uint64]bool{}
	next, dones := uint64(0), 0
	for _, s := range steps {
		switch {
		case !s.Done:
			if s.Number != next || s.ID == "" {
				t.Fatalf("Begin %+v, want number %d", s, next)
			}
			begun[s.Number] = true
			next++
		case !begun[s.Number]:
			t.Fatalf("Done of send %d before its Begin", s.Number)
		default:
			delete(begun, s.Number)
			dones++
		}
	}
	if next != senders*perSender || dones != senders*perSender {
		t.Errorf("%d Begins and %d Dones, want %d of each", next, dones, senders*perSender)
	}
}

// TestLedgerUnfollowedKeyIsUnaffected: following one key costs another
// key's sends nothing, not even an allocation.
func TestLedgerUnfollowedKeyIsUnaffected(t *testing.T) {
	l := NewLedger()
	calls := 0
	stop := l.Follow("followed", func(SendStep) { calls++ })
	defer stop()
	w := l.Watch("quiet")
	send(l, "quiet", "warm", true) // the key exists, its slices are grown
	allocs := testing.AllocsPerRun(1000, func() { l.Begin("quiet", "id").Done(true) })
	if allocs != 0 || calls != 0 {
		t.Errorf("a send on an unfollowed key: %v allocations, %d follower calls; want none", allocs, calls)
	}
	if l.key("quiet").followers != nil {
		t.Error("an unfollowed key has followers")
	}
	w.Close(time.Now(), 0)
}

// mirrorOf returns a mirror ledger and the keys it asked to follow.
func mirrorOf() (*Ledger, *[]string) {
	var followed []string
	return NewMirrorLedger(func(key string) { followed = append(followed, key) }), &followed
}

// TestMirrorFollowsWatchedKeys: a mirror asks once for each key, when it is
// first watched.
func TestMirrorFollowsWatchedKeys(t *testing.T) {
	m, followed := mirrorOf()
	ws := []*Watch{m.Watch("u1"), m.Watch("u1"), m.Watch("u2")}
	if fmt.Sprint(*followed) != "[u1 u2]" {
		t.Errorf("followed %v, want [u1 u2]", *followed)
	}
	for _, w := range ws {
		w.Close(time.Now(), 0)
	}
	m.Watch("u1").Close(time.Now(), 0)
	if len(*followed) != 2 {
		t.Errorf("followed %v: a key is asked for once", *followed)
	}
	if NewLedger().follow != nil {
		t.Error("the run's ledger asks to follow")
	}
}

// TestMirrorEarlyReceipt: an id received before its send is replayed into
// the mirror counts as received when the send arrives: not missed, not
// unknown, and a second receipt is a duplicate. An id whose send never
// comes is not counted. The run's own ledger keeps its semantics: there,
// an id received before its Begin is unknown.
func TestMirrorEarlyReceipt(t *testing.T) {
	m, _ := mirrorOf()
	w := m.Watch("k")
	if got := w.Received([]byte("e1")); got != ReceiptEarly {
		t.Fatalf("Received(e1) before its send = %d, want early", got)
	}
	if got := w.Received([]byte("e1")); got != ReceiptDuplicate {
		t.Errorf("Received(e1) twice before its send = %d, want duplicate", got)
	}
	w.Received([]byte("stray")) // never sent
	m.BeginAt("k", []byte("e1"), time.Now()).Done(true)
	m.BeginAt("k", []byte("e2"), time.Now()).Done(true) // never received
	if got := w.Received([]byte("e1")); got != ReceiptDuplicate {
		t.Errorf("Received(e1) after its send = %d, want duplicate", got)
	}
	if got := w.Close(time.Now().Add(time.Hour), 0); got != 1 {
		t.Errorf("missed = %d, want 1 (e2)", got)
	}

	// Settle matches too, before it counts: here nothing follows the
	// early receipt but the send.
	w = m.Watch("k")
	w.Received([]byte("e3"))
	m.BeginAt("k", []byte("e3"), time.Now()).Done(true)
	if got := w.Settle(time.Now().Add(time.Hour), 0); got != 0 {
		t.Errorf("Settle after an early receipt = %d missed, want 0", got)
	}
	w.Close(time.Now(), 0)

	l := NewLedger()
	w = l.Watch("k")
	if got := w.Received([]byte("e1")); got != ReceiptUnknown {
		t.Errorf("run's ledger: Received before Begin = %d, want unknown", got)
	}
	send(l, "k", "e1", true)
	if got := w.Close(time.Now().Add(time.Hour), 0); got != 1 {
		t.Errorf("run's ledger: missed = %d, want 1: it does not remember unknown ids", got)
	}
}

// TestMirrorEarlyReceiptsAreBounded: a watch remembers at most maxEarly
// early ids, the latest, and none after earlyFor.
func TestMirrorEarlyReceiptsAreBounded(t *testing.T) {
	m, _ := mirrorOf()
	w := m.Watch("k")
	const n = 10 * maxEarly
	for i := range n {
		w.Received(fmt.Appendf(nil, "e%d", i))
		if len(w.early) > maxEarly || len(w.earlyOrder) > 2*maxEarly {
			t.Fatalf("after %d receipts: %d early ids, %d in order", i+1, len(w.early), len(w.earlyOrder))
		}
	}
	// The oldest were forgotten, the latest kept.
	m.BeginAt("k", []byte("e0"), time.Now()).Done(true)
	m.BeginAt("k", fmt.Appendf(nil, "e%d", n-1), time.Now()).Done(true)
	if got := w.Settle(time.Now().Add(time.Hour), 0); got != 1 {
		t.Errorf("missed = %d, want 1: e0 forgotten, the latest matched", got)
	}
	// Once earlyFor has passed (the ledger's clock is moved back), the
	// next settle forgets them all.
	m.start = m.start.Add(-earlyFor)
	w.Settle(time.Now(), 0)
	if len(w.early) != 0 || len(w.earlyOrder) != 0 {
		t.Errorf("after earlyFor: %d early ids, %d in order; want none", len(w.early), len(w.earlyOrder))
	}
	m.BeginAt("k", fmt.Appendf(nil, "e%d", n-2), time.Now()).Done(true)
	if got := w.Close(time.Now().Add(time.Hour), 0); got != 1 {
		t.Errorf("missed = %d, want 1: an early id forgotten is not matched", got)
	}
}

// TestMirrorWatchIgnoresSendsBegunBefore: a replayed send that began
// before a watch did is not expected by it, as in the run's ledger, even
// when it reaches the mirror after the watch; a watch that began earlier
// expects it.
func TestMirrorWatchIgnoresSendsBegunBefore(t *testing.T) {
	m, _ := mirrorOf()
	before := time.Now()
	older := m.Watch("k")
	time.Sleep(time.Millisecond) // the wall clock must tell the two apart
	begun := time.Now()
	time.Sleep(time.Millisecond)
	newer := m.Watch("k")
	m.BeginAt("k", []byte("a"), begun).Done(true) // after older, before newer
	m.BeginAt("k", []byte("b"), time.Now()).Done(true)
	m.BeginAt("k", []byte("c"), before).Done(true) // out of order: after b, so expected
	for _, id := range []string{"a", "b", "c"} {
		if got := older.Received([]byte(id)); got != ReceiptFirst {
			t.Errorf("older watch: Received(%s) = %d, want first", id, got)
		}
	}
	if got := newer.Received([]byte("a")); got == ReceiptFirst {
		t.Errorf("newer watch: Received(a), begun before it, = first")
	}
	end := time.Now().Add(time.Hour)
	if got := newer.Close(end, 0); got != 2 {
		t.Errorf("newer watch missed %d, want 2 (b, c): not a", got)
	}
	if got := older.Close(end, 0); got != 0 {
		t.Errorf("older watch missed %d, want 0", got)
	}
}

// TestLedgerLateHoweverLate: an id counted missed is late when it arrives,
// even after so many later sends that the key has dropped its send; a
// second copy is a duplicate; an id received in time and again after its
// settle is a duplicate, not late.
func TestLedgerLateHoweverLate(t *testing.T) {
	l := NewLedger()
	w := l.Watch("k")
	send(l, "k", "held", true)
	send(l, "k", "on-time", true)
	w.Received([]byte("on-time"))
	if got := w.Settle(time.Now().Add(time.Hour), 0); got != 1 {
		t.Fatalf("Settle = %d missed, want 1 (held)", got)
	}
	const later = 1000
	for i := range later {
		id := fmt.Sprint("e", i)
		send(l, "k", id, true)
		w.Received([]byte(id))
		if i%100 == 99 {
			w.Settle(time.Now().Add(time.Hour), 0)
		}
	}
	k := l.key("k")
	k.mu.Lock()
	_, kept := k.byHash[l.hash([]byte("held"))]
	k.mu.Unlock()
	if kept {
		t.Fatalf("the key still holds the send of held after %d more: the test does not reach the trimmed case", later)
	}
	for _, c := range []struct {
		id   string
		want Receipt
	}{{"held", ReceiptLate}, {"held", ReceiptDuplicate}, {"on-time", ReceiptUnknown}, {"e999", ReceiptDuplicate}, {"never", ReceiptUnknown}} {
		if got := w.Received([]byte(c.id)); got != c.want {
			t.Errorf("Received(%s) after %d later sends = %d, want %d", c.id, later, got, c.want)
		}
	}
	if got := w.Close(time.Now().Add(time.Hour), 0); got != 0 {
		t.Errorf("Close = %d missed, want 0", got)
	}
}

// TestLedgerMissedIDsAreBounded: a watch remembers at most two generations
// of missed ids, the latest: the latest missedGeneration are still late,
// the oldest are forgotten.
func TestLedgerMissedIDsAreBounded(t *testing.T) {
	l := NewLedger()
	w := l.Watch("k")
	const n = 3*missedGeneration + 7
	for i := range n {
		send(l, "k", fmt.Sprint(i), true)
		if i%1000 == 999 {
			w.Settle(time.Now().Add(time.Hour), 0)
		}
	}
	if got := w.Settle(time.Now().Add(time.Hour), 0); got != n%1000 {
		t.Fatalf("last Settle = %d, want %d", got, n%1000)
	}
	if kept := len(w.missed.cur) + len(w.missed.prev); kept > 2*missedGeneration || kept < missedGeneration {
		t.Errorf("the watch keeps %d missed ids of %d, want %d to %d", kept, n, missedGeneration, 2*missedGeneration)
	}
	if got := w.Received([]byte("0")); got != ReceiptUnknown {
		t.Errorf("Received(the oldest miss) = %d, want unknown: forgotten", got)
	}
	for i := n - missedGeneration; i < n; i += 997 {
		if got := w.Received(fmt.Append(nil, i)); got != ReceiptLate {
			t.Fatalf("Received(%d), one of the latest %d misses, = %d, want late", i, missedGeneration, got)
		}
	}
	w.Close(time.Now(), 0)
	if w.missed.cur != nil || w.missed.prev != nil {
		t.Error("a closed watch keeps its missed ids")
	}
}

// BenchmarkMissedSetMemory reports the heap a full missedSet holds (two
// generations), in bytes per missed id, for docs/sse.md:
//
//	go test -run '^$' -bench MissedSetMemory ./protocols/delivery
func BenchmarkMissedSetMemory(b *testing.B) {
	var before, after runtime.MemStats
	sets := make([]missedSet, b.N)
	runtime.GC()
	runtime.ReadMemStats(&before)
	for n := range sets {
		for i := range uint64(2 * missedGeneration) {
			sets[n].add(i*0x9e3779b97f4a7c15 + uint64(n))
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(b.N*2*missedGeneration), "B/id")
	runtime.KeepAlive(sets)
}
