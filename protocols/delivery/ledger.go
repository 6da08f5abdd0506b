// Package delivery holds a run's ledger of sent delivery ids, which
// subscribers (SSE streams, queue consumers) match what they receive
// against, to count missed, late and duplicate events.
package delivery

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
// memory follows the subscribers' backlog, not the run's length. Each
// watch also remembers the ids it counted missed (up to a bound, see
// missedSet), so that one arriving later is late however late it comes.
//
// A subscriber in another process (an isolated protocol) watches a mirror
// of the run's ledger (NewMirrorLedger). The mirror asks for the keys its
// subscribers watch, and the run's ledger hands their sends over, through
// Follow, to be replayed into the mirror with BeginAt and Done.
//
// A Ledger is safe for concurrent use.
type Ledger struct {
	seed  maphash.Seed
	start time.Time // the monotonic base of every recorded time
	// follow is set on a mirror: it asks for a key's sends to be
	// replayed, the first time the key is watched.
	follow func(key string)

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
	// followers see every step of the key's sends (Follow); nil for a key
	// nobody follows, which is every key of a run without isolated
	// subscribers, so Begin and Done pay one test for them.
	followers []*follower
	// In a mirror: followed says the key's sends were asked for, and
	// starting holds the watches that may still be handed a replayed
	// send begun before they began (BeginAt).
	followed bool
	starting []*Watch
}

// trimEvery is how many sends a key records between two attempts to drop
// the sends every watch has settled.
const trimEvery = 256

// follower is one Follow of a key.
type follower struct {
	f    func(SendStep)
	from uint64 // the first send it follows: earlier ones it never saw begin
}

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
	seq := k.begin(h)
	// Under k.mu, so that followers see the key's steps in order.
	for _, f := range k.followers {
		f.f(SendStep{Number: seq, ID: id})
	}
	k.mu.Unlock()
	return Pending{l: l, k: k, seq: seq}
}

// begin appends a pending send and returns its number; the caller holds
// k.mu.
func (k *ledgerKey) begin(h uint64) uint64 {
	seq := k.base + uint64(len(k.entries))
	k.entries = append(k.entries, sendEntry{hash: h, state: sendPending})
	k.byHash[h] = seq
	k.sinceTrim++
	if k.sinceTrim >= trimEvery {
		k.trim()
	}
	return seq
}

// SendStep is one step of a send on a followed key (Follow): its Begin,
// with its id, or its Done, with its outcome.
type SendStep struct {
	// Number is the send's number in its key, from 0 in Begin order; it
	// pairs a Done with its Begin.
	Number uint64
	ID     string // the Begin's id; empty on a Done
	Done   bool
	OK     bool // on a Done: the call succeeded
}

// Follow calls f with every step of the sends of key from now on: each
// later Begin, and the Done of each of those. f is called with the key's
// lock held, in the order the steps happen, so it must be quick and must
// not call the ledger. After stop returns, f is not called again. Follow
// keeps nothing: a followed key keeps no more sends than a watched one.
func (l *Ledger) Follow(key string, f func(SendStep)) (stop func()) {
	k := l.key(key)
	fl := &follower{f: f}
	k.mu.Lock()
	fl.from = k.base + uint64(len(k.entries))
	k.followers = append(k.followers, fl)
	k.mu.Unlock()
	return func() {
		k.mu.Lock()
		defer k.mu.Unlock()
		for i, have := range k.followers {
			if have == fl {
				k.followers = append(k.followers[:i], k.followers[i+1:]...)
				break
			}
		}
		if len(k.followers) == 0 {
			k.followers = nil // back to the one nil test in Begin and Done
		}
	}
}

// Followed reports whether key's sends are followed (Follow). On the run's
// ledger, a mirror follows a key once a subscriber in another process
// watches it; from then on, that subscriber expects each send begun. A
// test waits for it before sending what an isolated subscriber must
// count.
func (l *Ledger) Followed(key string) bool {
	l.mu.Lock()
	k := l.keys[key]
	l.mu.Unlock()
	if k == nil {
		return false
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.followers) > 0
}

// NewMirrorLedger returns a ledger that mirrors the run's ledger in another
// process, for the subscribers there. The first time a key is watched, it
// calls follow(key), which should have the run's ledger's sends of that
// key replayed into the mirror from then on: each Begin with BeginAt, and
// its Done on the result. follow is called without any lock held.
//
// Two things differ from the run's ledger, because a replayed send reaches
// the mirror after it began. A watch does not expect a replayed send that
// began before the watch did, as the run's ledger would not. And an id
// received before its send is replayed is remembered for a while
// (ReceiptEarly), so that its send counts as received when it arrives.
func NewMirrorLedger(follow func(key string)) *Ledger {
	l := NewLedger()
	l.follow = follow
	return l
}

// BeginAt records a send replayed from the run's ledger into a mirror
// (NewMirrorLedger): id was begun for key at the wall-clock time at.
// Watches that began after at do not expect it.
func (l *Ledger) BeginAt(key string, id []byte, at time.Time) Pending {
	k := l.key(key)
	h := l.hash(id)
	began := at.UnixNano()
	k.mu.Lock()
	seq := k.begin(h)
	// Replays come in Begin order, so the sends begun before a watch are
	// the first ones replayed after it, and a watch stops starting at the
	// first send begun after it.
	starting := k.starting[:0]
	for _, w := range k.starting {
		if began < w.since {
			w.first = seq + 1
			w.cursor = max(w.cursor, seq+1)
			starting = append(starting, w)
		}
	}
	clear(k.starting[len(starting):])
	k.starting = starting
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
	for _, f := range p.k.followers {
		if p.seq >= f.from {
			f.f(SendStep{Number: p.seq, Done: true, OK: ok})
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
	l *Ledger
	k *ledgerKey
	// first is the first send this watch expects, and cursor the first
	// not yet settled. Both are guarded by k.mu: trim reads the cursor,
	// and in a mirror BeginAt moves both past sends begun before the
	// watch.
	first  uint64
	cursor uint64
	// received holds one bit per send from word*64 on, where word is
	// cursor/64 rounded down at the last settle.
	received []uint64
	word     uint64

	// In a mirror only: since is when the watch began, in wall-clock
	// nanoseconds, to compare with BeginAt's times; early holds the ids
	// received before their sends were known, by hash, with when they
	// were received, and earlyOrder the same in the order they came, to
	// forget the oldest first. scanned is the first send not yet looked
	// up in early. All of them are the watch's own, used under k.mu.
	since      int64
	early      map[uint64]int64
	earlyOrder []earlyReceipt
	scanned    uint64

	// missed remembers the ids this watch counted missed, so that one
	// arriving later is late however late it comes: the key drops a send
	// once every watch has settled it, so the key cannot tell. Under k.mu.
	missed missedSet
}

// missedSet is the hashes of the ids a watch counted missed, each with
// whether it has arrived since (late). It is exact, in two generations of
// at most missedGeneration hashes: when the current one is full, the
// previous one is dropped, so a watch remembers at least its latest
// missedGeneration misses and at most twice that.
//
// Exact rather than a probabilistic filter: a watch pays for it only when
// it misses events, a 64-bit hash collides with another id of the key
// with odds of about n/2^64, and a filter's false positives would turn
// ids nobody sent, and duplicates, into late events. Per watch rather
// than per key: one subscriber's miss is another's duplicate.
type missedSet struct {
	cur, prev map[uint64]bool
}

// missedGeneration bounds a missedSet: two generations of 16,384 hashes
// hold up to 32,768 misses in about 1.2 MB (BenchmarkMissedSetMemory),
// and a watch that misses nothing holds none.
const missedGeneration = 1 << 14

// add remembers that the id of hash h was counted missed.
func (s *missedSet) add(h uint64) {
	if len(s.cur) >= missedGeneration {
		s.prev, s.cur = s.cur, nil
	}
	if s.cur == nil {
		s.cur = make(map[uint64]bool)
	}
	delete(s.prev, h) // counted missed again: it lives in cur from now on
	s.cur[h] = false
}

// receive says what the id of hash h is if it was counted missed: late the
// first time it arrives, a duplicate after that. ok is false for an id not
// counted missed, or forgotten.
func (s *missedSet) receive(h uint64) (r Receipt, ok bool) {
	for _, m := range [2]map[uint64]bool{s.cur, s.prev} {
		if late, found := m[h]; found {
			if late {
				return ReceiptDuplicate, true
			}
			m[h] = true
			return ReceiptLate, true
		}
	}
	return ReceiptUnknown, false
}

// earlyReceipt is an id received before its send was known, in a mirror.
type earlyReceipt struct {
	hash uint64
	at   int64 // nanoseconds since Ledger.start
}

// An early receipt in a mirror is remembered for at most earlyFor, and a
// watch remembers at most maxEarly of them, the latest. A send is
// replayed a wire round trip after it began, milliseconds at most, so
// these are generous; they bound what ids a subscriber receives that
// nobody sent in this run cost.
const (
	earlyFor = 5 * time.Second
	maxEarly = 256
)

// Watch starts watching key: every send whose Begin comes after this call
// is expected. Close it when the subscriber ends.
//
// On a mirror, the first watch of a key asks for its sends (see
// NewMirrorLedger), so the sends begun before that request reaches the
// run's ledger, up to a wire round trip after Watch, are not expected.
func (l *Ledger) Watch(key string) *Watch {
	k := l.key(key)
	k.mu.Lock()
	next := k.base + uint64(len(k.entries))
	w := &Watch{l: l, k: k, first: next, cursor: next, word: next / 64, scanned: next}
	k.watches[w] = struct{}{}
	follow := false
	if l.follow != nil {
		w.since = time.Now().UnixNano()
		k.starting = append(k.starting, w)
		follow = !k.followed
		k.followed = true
	}
	k.mu.Unlock()
	if follow {
		l.follow(key)
	}
	return w
}

// Receipt says what a received id was.
type Receipt uint8

// The receipts.
const (
	ReceiptUnknown   Receipt = iota // not an id sent for the key since the watch began
	ReceiptFirst                    // expected, and received for the first time
	ReceiptDuplicate                // received before
	ReceiptLate                     // received after this watch counted it missed, however long after
	// ReceiptEarly comes from a mirror only (NewMirrorLedger): the id is
	// not known yet, as its send may not have been replayed yet. It
	// counts as received if its send arrives soon; otherwise it was
	// unknown.
	ReceiptEarly
)

// Received marks id as received and says what it was.
func (w *Watch) Received(id []byte) Receipt {
	h := w.l.hash(id)
	k := w.k
	k.mu.Lock()
	defer k.mu.Unlock()
	w.matchEarly()
	seq, ok := k.byHash[h]
	if ok && seq >= w.first && seq >= w.cursor {
		if !w.mark(seq) {
			return ReceiptDuplicate
		}
		return ReceiptFirst
	}
	// Not awaited: counted missed before (late), or settled as received
	// (a duplicate), or its call failed, or it was never sent for the key
	// while this watch was on.
	if r, missed := w.missed.receive(h); missed {
		return r
	}
	switch {
	case ok && seq >= w.first:
		// Settled and not counted missed: received, unless its send
		// failed. (A trimmed send has left byHash: ok is false.)
		if seq >= k.base && k.entries[seq-k.base].state == sendConfirmed {
			return ReceiptDuplicate
		}
		return ReceiptUnknown
	case w.l.follow != nil:
		return w.remember(h)
	}
	return ReceiptUnknown
}

// mark sets the received bit of send seq, at or after the cursor, and
// reports whether it was clear.
func (w *Watch) mark(seq uint64) bool {
	i := seq - w.word*64
	for uint64(len(w.received))*64 <= i {
		w.received = append(w.received, 0)
	}
	bit := uint64(1) << (i % 64)
	if w.received[i/64]&bit != 0 {
		return false
	}
	w.received[i/64] |= bit
	return true
}

// remember keeps an id a mirror's watch received before its send was
// known; the caller holds k.mu.
func (w *Watch) remember(h uint64) Receipt {
	now := w.l.now()
	w.forgetEarly(now)
	if _, dup := w.early[h]; dup {
		return ReceiptDuplicate
	}
	for len(w.early) >= maxEarly {
		w.forget(1)
	}
	if len(w.earlyOrder) >= 2*maxEarly {
		// Mostly receipts matched since: keep only those still waiting.
		order := w.earlyOrder[:0]
		for _, r := range w.earlyOrder {
			if at, ok := w.early[r.hash]; ok && at == r.at {
				order = append(order, r)
			}
		}
		w.earlyOrder = order
	}
	if w.early == nil {
		w.early = make(map[uint64]int64)
	}
	w.early[h] = now
	w.earlyOrder = append(w.earlyOrder, earlyReceipt{hash: h, at: now})
	return ReceiptEarly
}

// forgetEarly drops the early receipts older than earlyFor.
func (w *Watch) forgetEarly(now int64) {
	n := 0
	for n < len(w.earlyOrder) && w.earlyOrder[n].at <= now-int64(earlyFor) {
		n++
	}
	w.forget(n)
}

// forget drops the n oldest early receipts. One matched already is gone
// from early, or is there with a later time when its id came again.
func (w *Watch) forget(n int) {
	for _, r := range w.earlyOrder[:n] {
		if at, ok := w.early[r.hash]; ok && at == r.at {
			delete(w.early, r.hash)
		}
	}
	w.earlyOrder = w.earlyOrder[n:]
	if len(w.early) == 0 {
		// Start the queue over rather than let it creep along its array.
		w.earlyOrder = w.earlyOrder[:0:0]
	}
}

// matchEarly marks received the sends recorded since the last look whose
// ids were received early, in a mirror; the caller holds k.mu. It must
// run before a send is settled and before its id is looked up, so that
// an early receipt is neither missed nor taken for a first one.
func (w *Watch) matchEarly() {
	k := w.k
	end := k.base + uint64(len(k.entries))
	if len(w.early) > 0 {
		for seq := max(w.scanned, w.first, w.cursor, k.base); seq < end; seq++ {
			h := k.entries[seq-k.base].hash
			if _, ok := w.early[h]; ok && k.byHash[h] == seq {
				delete(w.early, h)
				w.mark(seq)
			}
		}
	}
	w.scanned = end
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
	k := w.k
	k.mu.Lock()
	delete(k.watches, w)
	for i, s := range k.starting {
		if s == w {
			k.starting = append(k.starting[:i], k.starting[i+1:]...)
			break
		}
	}
	k.mu.Unlock()
	w.k = nil
	w.early, w.earlyOrder = nil, nil
	w.missed = missedSet{}
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
	w.matchEarly()
	if w.early != nil {
		w.forgetEarly(w.l.now())
	}
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
			if !closing {
				w.missed.add(e.hash)
			}
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
