package core

import (
	"runtime"
	"testing"
	"time"
)

// waitedShare counts only what was added since the base, and the buckets
// from the bound on.
func TestWaitedShare(t *testing.T) {
	buckets := []float64{0, 100e-6, 250e-6, 1e-3, 1} // 4 buckets
	for _, tt := range []struct {
		name         string
		counts, base []uint64
		over         float64
		share        float64
		added        uint64
	}{
		{"nothing added", []uint64{5, 5, 5, 5}, []uint64{5, 5, 5, 5}, 250e-6, 0, 0},
		{"all short", []uint64{10, 6, 0, 0}, []uint64{2, 2, 0, 0}, 250e-6, 0, 12},
		{"a quarter from 250 µs", []uint64{3, 3, 1, 1}, []uint64{0, 0, 0, 0}, 250e-6, 0.25, 8},
		{"the base is left out", []uint64{3, 3, 9, 9}, []uint64{0, 0, 8, 8}, 250e-6, 0.25, 8},
		{"from 1 ms", []uint64{0, 0, 2, 2}, []uint64{0, 0, 0, 0}, 1e-3, 0.5, 4},
	} {
		share, added := waitedShare(buckets, tt.counts, tt.base, tt.over)
		if share != tt.share || added != tt.added {
			t.Errorf("%s: %v of %d, want %v of %d", tt.name, share, added, tt.share, tt.added)
		}
	}
}

// The runtime's histogram moves with the goroutines that run: after a
// mark, goroutines that start count, and the share is a share.
func TestRunQueueWaitsReadsTheRuntime(t *testing.T) {
	w := newRunQueueWaits()
	w.mark()
	if share, sampled := w.longShare(cpuWaitLong); sampled != 0 && (share < 0 || share > 1) {
		t.Fatalf("right after mark: %v of %d", share, sampled)
	}
	done := make(chan struct{})
	for range 200 {
		go func() {
			time.Sleep(time.Millisecond)
			done <- struct{}{}
		}()
	}
	for range 200 {
		<-done
		runtime.Gosched()
	}
	if share, sampled := w.longShare(cpuWaitLong); sampled == 0 || share < 0 || share > 1 {
		t.Errorf("after 400 goroutine starts: %v of %d sampled", share, sampled)
	}
}
