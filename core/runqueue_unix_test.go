//go:build unix

package core

import (
	"testing"
	"time"
)

// busyShare does not judge a window shorter than busyWindow, and a
// process that sleeps uses next to no CPU however busy the machine is.
// How it counts a busy process is checked against the kernel's own
// account in TestBusyShareAgreesWithKernel (Linux).
func TestBusyShare(t *testing.T) {
	w := newRunQueueWaits()
	w.mark()
	if share, ok := w.busyShare(); ok {
		t.Fatalf("right after mark: %v, judged; want no verdict on a window under %v", share, busyWindow)
	}
	time.Sleep(5 * busyWindow)
	idle, ok := w.busyShare()
	if !ok {
		t.Fatalf("after %v: no verdict; getrusage gives every unix system its CPU time", 5*busyWindow)
	}
	if idle > 0.05 {
		t.Errorf("sleeping: %.2f of the cores busy", idle)
	}
}
