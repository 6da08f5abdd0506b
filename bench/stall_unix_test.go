//go:build unix

package main

import (
	"net/http"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The server's count carries its longest stall under load since the count
// before: stopped (SIGSTOP) for a while the test times itself while a
// client keeps calling, it reports at least that long; stopped as long
// while nothing calls it, it reports less, since a stall no request came
// in is not the load's.
func TestServerCountsItsStallsUnderLoad(t *testing.T) {
	_, srv := startTestServer(t)
	pid := srv.cmd.Process.Pid
	// stop stops the server for 150 ms by the test's clock, and returns
	// how long it was stopped: at least as long as that.
	stop := func() time.Duration {
		start := time.Now()
		if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		time.Sleep(150 * time.Millisecond)
		if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
		return time.Since(start)
	}
	stallAfter := func(load bool) (stall, stopped time.Duration) {
		if _, err := srv.counts(); err != nil { // resets the longest stall
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		done := make(chan struct{})
		if load {
			client := &http.Client{Timeout: 10 * time.Second}
			for range 4 {
				wg.Go(func() {
					for {
						select {
						case <-done:
							return
						default:
						}
						if err := getWith(client, srv.url, 1); err != nil {
							t.Error(err)
							return
						}
					}
				})
			}
			time.Sleep(50 * time.Millisecond)
		} else {
			// The load before has ended: some ticks with no request.
			time.Sleep(20 * time.Millisecond)
		}
		stopped = stop()
		time.Sleep(50 * time.Millisecond)
		close(done)
		wg.Wait()
		c, err := srv.counts()
		if err != nil {
			t.Fatal(err)
		}
		return time.Duration(c.stallUs) * time.Microsecond, stopped
	}

	if stall, stopped := stallAfter(true); stall < stopped-5*time.Millisecond {
		// 5 ms: SIGSTOP takes effect a moment after kill returns.
		t.Errorf("under load: the server reported a stall of %v, stopped for %v", stall, stopped)
	} else {
		t.Logf("under load: the server reported a stall of %v, stopped for %v", stall, stopped)
	}
	if stall, stopped := stallAfter(false); stall >= stopped/2 {
		t.Errorf("idle: the server reported a stall of %v, stopped for %v with no request", stall, stopped)
	}
}
