package protocols

import (
	"context"
	"hash/maphash"
	"sync"
	"time"
)

// Ledger is a run's record of the ids sent per delivery key, so that a
// subscriber (an SSE stream, a queue consumer) can tell which of the ids
// sent for its key it did not receive. The core creates one per run and
// records every call whose request sets delivery = { key, id }; protocols
// find it in the context of Protocol.Open with LedgerFrom.
//
// A send is recorded in two steps: Begin before the call, because a
// subscriber often receives the event before the sender sees its response,
// and Done after it, because only a send that succeeded is expected to be
// delivered. Ids are kept as 64-bit hashes, never as strings, and a key
// keeps only the sends that a watching subscriber has not settled yet, so
// memory follows the subscribers' backlog, not the run's length.
//
// A Ledger is safe for concurrent use.
type Ledger struct {
	seed  maphash.Seed
	start time.Time // the monotonic base of every recorded time

	mu   sync.Mutex
	keys map[string]*ledgerKey
}

// NewLedger returns an empty ledger.
func NewLedger() *Ledger {
	return &Ledger{seed: maphash.MakeSeed(), start: time.Now(), keys: map[string]*ledgerKey{}}
}

// The states of a recorded send.
const (
	sendPending   uint8 = iota // the call is in flight
	sendConfirmed              // the call succeeded: subscribers expect the id
	sendCancelled              // the call failed: nobody expects the id
)

// sendEntry is one recorded send. done is when it was confirmed, in
// nanoseconds since Ledger.start.
type sendEntry struct {
	hash  uint64
	done  int64
	state uint8
}

// ledgerKey holds the sends of one key, numbered from 0 in Begin order.
// entries[i] is send number base+i.
type ledgerKey struct {
	mu      sync.Mutex
	base    uint64
	entries []sendEntry
	byHash  map[uint64]uint64 // id hash -> send number, for entries kept
	watches map[*Watch]struct{}
	// sinceTrim counts Begins since the last trim; trimming is amortised.
	sinceTrim int
}

// trimEvery is how many sends a key records between two attempts to drop
// the sends every watch has settled.
const trimEvery = 256

func (l *Ledger) key(name string) *ledgerKey {
	l.mu.Lock()
	defer l.mu.Unlock()
	k := l.keys[name]
	if k == nil {
		k = &ledgerKey{byHash: map[uint64]uint64{}, watches: map[*Watch]struct{}{}}
		l.keys[name] = k
	}
	return k
}

func (l *Ledger) hash(id []byte) uint64 { return maphash.Bytes(l.seed, id) }

func (l *Ledger) now() int64 { return int64(time.Since(l.start)) }

// Pending is a send recorded by Begin and not yet settled by Done.
type Pending struct {
	l   *Ledger
	k   *ledgerKey
	seq uint64
}

// Begin records that id is about to be sent for key. Call Done on the
// result once the call's outcome is known. Ids should be unique per key:
// a repeated id is matched to its latest send only.
func (l *Ledger) Begin(key, id string) Pending {
	k := l.key(key)
	h := l.hash([]byte(id))
	k.mu.Lock()
	seq := k.base + uint64(len(k.entries))
	k.entries = append(k.entries, sendEntry{hash: h, state: sendPending})
	k.byHash[h] = seq
	k.sinceTrim++
	if k.sinceTrim >= trimEvery {
		k.trim()
	}
	k.mu.Unlock()
	return Pending{l: l, k: k, seq: seq}
}

// Done settles the send: ok means the call succeeded, so the id is now
// expected by every subscriber that watched the key before Begin.
func (p Pending) Done(ok bool) {
	if p.k == nil {
		return
	}
	now := p.l.now()
	p.k.mu.Lock()
	if p.seq >= p.k.base {
		e := &p.k.entries[p.seq-p.k.base]
		e.done = now
		e.state = sendCancelled
		if ok {
			e.state = sendConfirmed
		}
	}
	p.k.mu.Unlock()
}

// trim drops the sends that every watch has settled, or all but those in
// flight when nobody watches; a later watch never looks at earlier sends.
// The caller holds k.mu.
func (k *ledgerKey) trim() {
	k.sinceTrim = 0
	keep := k.base + uint64(len(k.entries))
	for w := range k.watches {
		keep = min(keep, w.cursor)
	}
	if len(k.watches) == 0 {
		// Sends still in flight must stay findable for Done; only a
		// prefix can go, so keep from the first pending one.
		for i := range k.entries {
			if k.entries[i].state == sendPending {
				keep = k.base + uint64(i)
				break
			}
		}
	}
	n := int(keep - k.base)
	if n <= 0 {
		return
	}
	for _, e := range k.entries[:n] {
		if seq, ok := k.byHash[e.hash]; ok && seq < keep {
			delete(k.byHash, e.hash)
		}
	}
	k.entries = append(k.entries[:0], k.entries[n:]...)
	k.base = keep
}

// Watch is one subscriber's view of a key: which of the ids sent for the
// key since it started watching it has received. A Watch is used by one
// goroutine at a time.
type Watch struct {
	l     *Ledger
	k     *ledgerKey
	first uint64 // the first send this watch expects
	// cursor is the first send not yet settled; guarded by k.mu, because
	// trim reads it.
	cursor uint64
	// received holds one bit per send from word*64 on, where word is
	// cursor/64 rounded down at the last settle.
	received []uint64
	word     uint64
}

// Watch starts watching key: every send whose Begin comes after this call
// is expected. Close it when the subscriber ends.
func (l *Ledger) Watch(key string) *Watch {
	k := l.key(key)
	k.mu.Lock()
	defer k.mu.Unlock()
	next := k.base + uint64(len(k.entries))
	w := &Watch{l: l, k: k, first: next, cursor: next, word: next / 64}
	k.watches[w] = struct{}{}
	return w
}

// Receipt says what a received id was.
type Receipt uint8

// The receipts.
const (
	ReceiptUnknown   Receipt = iota // not an id sent for the key since the watch began
	ReceiptFirst                    // expected, and received for the first time
	ReceiptDuplicate                // received before
	ReceiptLate                     // received after it was already counted as missed
)

// Received marks id as received and says what it was.
func (w *Watch) Received(id []byte) Receipt {
	h := w.l.hash(id)
	k := w.k
	k.mu.Lock()
	seq, ok := k.byHash[h]
	cursor := w.cursor
	var state uint8
	if ok && seq >= k.base {
		state = k.entries[seq-k.base].state
	}
	k.mu.Unlock()
	switch {
	case !ok || seq < w.first:
		return ReceiptUnknown
	case seq < cursor:
		// Settled already: it was counted missed unless its send failed.
		if state == sendConfirmed {
			return ReceiptLate
		}
		return ReceiptUnknown
	}
	i := seq - w.word*64
	for uint64(len(w.received))*64 <= i {
		w.received = append(w.received, 0)
	}
	bit := uint64(1) << (i % 64)
	if w.received[i/64]&bit != 0 {
		return ReceiptDuplicate
	}
	w.received[i/64] |= bit
	return ReceiptFirst
}

// Settle counts the expected sends that were confirmed at least grace
// before now and not received, and stops watching them. Sends in flight,
// and those confirmed more recently, wait for a later Settle.
func (w *Watch) Settle(now time.Time, grace time.Duration) (missed int) {
	return w.settle(int64(now.Sub(w.l.start)-grace), false)
}

// Close settles what can be settled as of end, with the same grace, and
// stops watching: sends confirmed in the last grace before end, and sends
// still in flight, are not counted, as they may still have been on their
// way. Close may be called more than once.
func (w *Watch) Close(end time.Time, grace time.Duration) (missed int) {
	if w.k == nil {
		return 0
	}
	missed = w.settle(int64(end.Sub(w.l.start)-grace), true)
	w.k.mu.Lock()
	delete(w.k.watches, w)
	w.k.mu.Unlock()
	w.k = nil
	return missed
}

// settle walks the sends from the cursor. A send confirmed before cutoff
// is final; a pending one or a later one stops the walk, unless closing,
// where they are skipped.
func (w *Watch) settle(cutoff int64, closing bool) (missed int) {
	k := w.k
	if k == nil {
		return 0
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	end := k.base + uint64(len(k.entries))
	seq := max(w.cursor, k.base)
	for ; seq < end; seq++ {
		e := &k.entries[seq-k.base]
		final := e.state == sendCancelled || (e.state == sendConfirmed && e.done <= cutoff)
		if !final {
			if closing {
				continue
			}
			break
		}
		if e.state == sendConfirmed && !w.has(seq) {
			missed++
		}
	}
	w.cursor = seq
	// Drop the bitmap words wholly before the cursor.
	if drop := seq/64 - w.word; drop > 0 {
		if drop >= uint64(len(w.received)) {
			w.received = w.received[:0]
		} else {
			w.received = append(w.received[:0], w.received[drop:]...)
		}
		w.word = seq / 64
	}
	return missed
}

// has reports whether send seq was received; the caller holds k.mu.
func (w *Watch) has(seq uint64) bool {
	i := seq - w.word*64
	if seq < w.word*64 || i/64 >= uint64(len(w.received)) {
		return false
	}
	return w.received[i/64]&(1<<(i%64)) != 0
}

// ledgerContextKey is the context key of the run's ledger.
type ledgerContextKey struct{}

// WithLedger returns ctx carrying l, for Protocol.Open and calls.
func WithLedger(ctx context.Context, l *Ledger) context.Context {
	return context.WithValue(ctx, ledgerContextKey{}, l)
}

// LedgerFrom returns the ledger ctx carries, or nil.
func LedgerFrom(ctx context.Context) *Ledger {
	l, _ := ctx.Value(ledgerContextKey{}).(*Ledger)
	return l
}

// endingContextKey is the context key of the scenario's ending channel.
type endingContextKey struct{}

// WithEnding returns ctx carrying ending, a channel the core closes when
// the scenario stops starting iterations. A call that holds a stream
// until the scenario ends, such as an SSE subscription, ends then as a
// success, instead of being cancelled when the graceful stop runs out.
func WithEnding(ctx context.Context, ending <-chan struct{}) context.Context {
	return context.WithValue(ctx, endingContextKey{}, ending)
}

// Ending returns the channel WithEnding put in ctx, or nil, which never
// closes.
func Ending(ctx context.Context) <-chan struct{} {
	ch, _ := ctx.Value(endingContextKey{}).(<-chan struct{})
	return ch
}
