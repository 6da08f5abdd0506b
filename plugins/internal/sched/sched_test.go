package sched

import (
	"runtime"
	"testing"
)

// TestYield: after Yield every thread, including one started afterwards,
// runs under SCHED_BATCH.
func TestYield(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("scheduling policies are set on Linux only")
	}
	t.Cleanup(func() { setPolicy(policyNormal) })
	if err := Yield(); err != nil {
		t.Fatal(err)
	}
	check := func(want int) {
		t.Helper()
		got := make(chan int)
		go func() {
			// A locked goroutine on a fresh thread, as the runtime makes.
			runtime.LockOSThread()
			p, err := policy()
			if err != nil {
				t.Error(err)
			}
			got <- p
		}()
		if p := <-got; p != want {
			t.Errorf("policy = %d, want %d", p, want)
		}
	}
	check(policyBatch)
	if err := setPolicy(policyNormal); err != nil {
		t.Fatal(err)
	}
	check(policyNormal)
}
