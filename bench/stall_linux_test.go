package main

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The server's count carries its longest stall under load since the count
// before: stopped (SIGSTOP) for a while the test times itself while a
// client keeps calling, it reports at least that long; stopped as long
// while nothing calls it, it reports less, since a stall with no request
// near it is not the load's.
func TestServerCountsItsStallsUnderLoad(t *testing.T) {
	_, srv := startTestServer(t)
	pid := srv.cmd.Process.Pid
	// stop stops the server for 150 ms by the test's clock, and returns
	// how long it surely was stopped: from the moment every thread of it
	// is seen stopped to the moment SIGCONT is sent. Timing from the kill
	// call would count too much: the stop takes effect only once one of
	// the server's threads runs to take the signal, which on a busy
	// machine under -race took milliseconds while its other threads went
	// on serving.
	stop := func() time.Duration {
		if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		waitStopped(t, pid)
		start := time.Now()
		time.Sleep(150 * time.Millisecond)
		stopped := time.Since(start)
		if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
		return stopped
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
			// The load before has ended: no request for 5 times the
			// server's stallWindow before the stop, none after it.
			time.Sleep(5 * stallWindow)
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

	if stall, stopped := stallAfter(true); stall < stopped-2*time.Millisecond {
		// 2 ms: the watch's last tick came up to one tick before the
		// stop, and /proc is read a moment after it.
		t.Errorf("under load: the server reported a stall of %v, stopped for %v", stall, stopped)
	} else {
		t.Logf("under load: the server reported a stall of %v, stopped for %v", stall, stopped)
	}
	if stall, stopped := stallAfter(false); stall >= stopped/2 {
		t.Errorf("idle: the server reported a stall of %v, stopped for %v with no request", stall, stopped)
	}
}

// waitStopped returns once every thread of process pid is in the stopped
// state ("T" in /proc/PID/task/TID/stat), and fails the test after 10 s.
func waitStopped(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		running, err := runningThreads(pid)
		if err != nil {
			t.Fatal(err)
		}
		if running == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d threads of the server still not stopped 10 s after SIGSTOP", running)
		}
		time.Sleep(100 * time.Microsecond)
	}
}

// runningThreads counts the threads of process pid not in the stopped state.
func runningThreads(pid int) (int, error) {
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/stat", pid))
	if err != nil || len(tasks) == 0 {
		return 0, fmt.Errorf("no threads of %d in /proc: %v", pid, err)
	}
	running := 0
	for _, p := range tasks {
		b, err := os.ReadFile(p)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				continue // the thread has exited
			}
			return 0, err
		}
		// The state follows the command's name, which is in parentheses
		// and may itself hold spaces or parentheses.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 || i+2 >= len(b) {
			return 0, fmt.Errorf("%s: no state in %q", p, b)
		}
		if b[i+2] != 'T' {
			running++
		}
	}
	return running, nil
}
