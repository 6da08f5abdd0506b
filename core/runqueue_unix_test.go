//go:build unix

package core

import (
	"sync"
	"testing"
	"time"
)

// busyShare tells a process that keeps its cores busy from one that
// sleeps, and does not judge a window shorter than busyWindow. A process
// that sleeps uses next to no CPU however busy the machine is.
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
	w.mark()
	stop := time.Now().Add(5 * busyWindow)
	var spinning sync.WaitGroup
	for range w.cores {
		spinning.Go(func() {
			for time.Now().Before(stop) {
			}
		})
	}
	spinning.Wait()
	busy, _ := w.busyShare()
	// A machine that gives hload a third of its cores still tells them
	// apart; one that gives it none fails here, as it should.
	if busy < 0.3 || busy > 1.5 || idle > 0.05 {
		t.Errorf("spinning on every core: %.2f of the cores busy; sleeping: %.2f", busy, idle)
	}
	t.Logf("spinning %.2f, sleeping %.2f", busy, idle)
}
