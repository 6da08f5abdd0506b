package sdk

// What the plugin side used of remote.go, the host's end, at wire version
// 2: the frozen copy leaves the host's end out.

import "runtime"

// The kinds of a ledger step on the wire (LedgerSteps.kind).
const (
	stepBegin     uint32 = iota
	stepSucceeded        // a Done: the call succeeded
	stepFailed           // a Done: the call failed
)

// maxYields bounds how long gather keeps collecting.
const maxYields = 16

// gather lets the goroutines that are ready to queue more do so before a
// batch is sent, and keeps yielding for as long as the queue grows: a busy
// stream sends big batches, a quiet one sends at once, and no timer is
// involved. size reports the queue's length.
func gather(size func() int) {
	n := size()
	for range maxYields {
		runtime.Gosched()
		m := size()
		if m == n {
			return
		}
		n = m
	}
}
