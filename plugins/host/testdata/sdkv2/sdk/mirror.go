package sdk

import (
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/hload/hload/plugins/host/testdata/sdkv2/proto"
	"github.com/hload/hload/protocols/delivery"
)

// mirror is the plugin's copy of the run's ledger for one opened client:
// the client finds it in Open's context, as a built-in finds the run's
// ledger in-process. When one of its keys is first watched, the client's
// Run stream asks the host to follow the key, and replays what the host
// forwards: the senders stay on the host, the subscribers are here.
type mirror struct {
	ledger *delivery.Ledger

	mu     sync.Mutex
	run    *run     // the client's Run stream, once it runs
	queued []string // keys first watched before it ran
}

func newMirror() *mirror {
	m := &mirror{}
	m.ledger = delivery.NewMirrorLedger(m.follow)
	return m
}

// follow asks the host for key's sends, through the Run stream, or once it
// runs.
func (m *mirror) follow(key string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.run == nil {
		m.queued = append(m.queued, key)
		return
	}
	m.run.follow(key)
}

// attach makes r the stream that asks for keys, with those asked for
// before.
func (m *mirror) attach(r *run) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.run = r
	for _, key := range m.queued {
		r.follow(key)
	}
	m.queued = nil
}

// detach stops r from asking for keys: its stream has ended.
func (m *mirror) detach(r *run) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.run == r {
		m.run = nil
	}
}

// follow queues key for the sender, which asks the host for it.
func (r *run) follow(key string) {
	r.mu.Lock()
	r.follows = append(r.follows, key)
	r.mu.Unlock()
	r.signal()
}

// sendRef names a send of the host's ledger: its key and number.
type sendRef struct {
	key    string
	number uint64
}

// replay records in the mirror the steps of the host's sends that b
// carries, in their order. Run's goroutine only.
func (r *run) replay(b *proto.CallBatch) {
	l := b.Ledger
	if l == nil {
		return
	}
	if err := checkLedgerSteps(l); err != nil {
		// Dropped rather than guessed at: the watches of these keys may
		// then count misses that were not, which the message explains.
		fmt.Fprintf(os.Stderr, "hload plugin: malformed ledger steps dropped: %v\n", err)
		return
	}
	begin := 0 // the next of the begin columns
	for i, k := range l.Key {
		ref := sendRef{l.Keys[k], l.Number[i]}
		if l.Kind[i] == stepBegin {
			p := r.mirror.ledger.BeginAt(ref.key, l.BeginId[begin], time.Unix(0, l.BeginUnixNano[begin]))
			begin++
			if r.sends == nil {
				r.sends = make(map[sendRef]delivery.Pending)
			}
			r.sends[ref] = p
			continue
		}
		if p, ok := r.sends[ref]; ok {
			delete(r.sends, ref)
			p.Done(l.Kind[i] == stepSucceeded)
		}
	}
}

// checkLedgerSteps checks that l's columns agree.
func checkLedgerSteps(l *proto.LedgerSteps) error {
	n := len(l.Key)
	if len(l.Number) != n || len(l.Kind) != n {
		return fmt.Errorf("columns of %d, %d and %d steps", n, len(l.Number), len(l.Kind))
	}
	begins := 0
	for i, k := range l.Key {
		if int(k) >= len(l.Keys) {
			return fmt.Errorf("step %d names key %d of %d", i, k, len(l.Keys))
		}
		switch l.Kind[i] {
		case stepBegin:
			begins++
		case stepSucceeded, stepFailed:
		default:
			return fmt.Errorf("step %d is of unknown kind %d", i, l.Kind[i])
		}
	}
	if len(l.BeginId) != begins || len(l.BeginUnixNano) != begins {
		return fmt.Errorf("%d ids and %d times for %d begins", len(l.BeginId), len(l.BeginUnixNano), begins)
	}
	return nil
}
