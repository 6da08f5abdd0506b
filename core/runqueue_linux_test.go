package core

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestBusyShareAgreesWithKernel: while goroutines spin on every core,
// busyShare equals the CPU the kernel counted for the process in
// /proc/self/stat over the same window, per core and per second of wall
// time. The reference is read in the same run, so a machine that gives
// hload only part of its cores (other tests, other processes) changes
// both figures alike.
func TestBusyShareAgreesWithKernel(t *testing.T) {
	w := newRunQueueWaits()
	w.mark()
	start, statStart := time.Now(), statCPU(t)
	var stop atomic.Bool
	var spinning sync.WaitGroup
	for range w.cores {
		spinning.Go(func() {
			for n := 0; !stop.Load(); n++ {
				for range 10_000 {
					n *= 3
				}
			}
		})
	}
	// Spin until the kernel counted 150 ms per core, or 5 s passed on a
	// machine too busy to give them.
	want := 150 * time.Millisecond * time.Duration(w.cores)
	for deadline := start.Add(5 * time.Second); statCPU(t)-statStart < want && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	busy, ok := w.busyShare()
	stat, wall := statCPU(t)-statStart, time.Since(start)
	stop.Store(true)
	spinning.Wait()
	if !ok {
		t.Fatal("no verdict after spinning; getrusage gives Linux its CPU time")
	}
	perCore := float64(wall) * float64(w.cores)
	kernel := float64(stat) / perCore
	// /proc/self/stat counts in ticks of 10 ms, and each read straddles
	// the other's by a tick or two.
	slack := float64(30*time.Millisecond) / perCore
	t.Logf("busyShare %.3f, /proc/self/stat %.3f (%v over %v on %d cores)", busy, kernel, stat, wall, w.cores)
	if stat < want/3 {
		t.Fatalf("the kernel counted only %v of CPU over %v; the machine is too busy to tell", stat, wall)
	}
	if busy < kernel-slack || busy > kernel+slack {
		t.Errorf("busyShare %.3f, the kernel's count gives %.3f (±%.3f)", busy, kernel, slack)
	}
}
