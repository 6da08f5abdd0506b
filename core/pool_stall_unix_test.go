//go:build unix

package core

import (
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"
)

// TestOpenModelPoolHoldsThroughAStall: the whole test process is stopped
// for 100 ms (SIGSTOP, then SIGCONT from a child shell), as a machine
// with no CPU to give hload stops it. The 200 iterations that came due
// meanwhile start at once on a pool of 10 VUs, against a server that takes
// 1 ms: they wait for VUs busy with that burst, which take them all within
// some 20 ms. A pool that grew for them would open a connection for each
// VU it added, for nothing; this one opens about as many as the same run
// without the stall, measured first as the reference: on a quiet machine
// the 10 pre-allocated, and under the race detector, where a 1 ms call
// takes several and the pool rightly grows for it, more.
func TestOpenModelPoolHoldsThroughAStall(t *testing.T) {
	ref, _ := runStalled(t, false)
	conns, requests := runStalled(t, true)
	if conns > ref+10 {
		t.Errorf("the server accepted %d connections, %d without the stall; want about as many: the pool grew for a burst of its own making", conns, ref)
	}
	t.Logf("%d requests, %d connections accepted; %d without the stall", requests, conns, ref)
}

// runStalled runs 2,000 iterations/s for 1.5 s on a pool of 10 VUs that
// may grow to 500, against a server that takes 1 ms, with the process
// stopped for 100 ms half a second in when stall is set, and returns what
// the server counted.
func runStalled(t *testing.T, stall bool) (conns, requests int) {
	t.Helper()
	srv := newConnServer(t, 0)
	srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		srv.mu.Lock()
		srv.requests++
		srv.mu.Unlock()
		time.Sleep(time.Millisecond)
		w.Write([]byte("ok"))
	})
	test := loadTest(t, openPoolTest(2000, 10, 500, 1500*time.Millisecond), map[string]string{"base_url": srv.URL})
	var stopper *exec.Cmd
	if stall {
		pid := strconv.Itoa(os.Getpid())
		stopper = exec.Command("sh", "-c", "sleep 0.5; kill -STOP "+pid+"; sleep 0.1; kill -CONT "+pid)
		if err := stopper.Start(); err != nil {
			t.Fatal(err)
		}
	}
	sum := runTest(t, test, Options{})
	if stopper != nil {
		if err := stopper.Wait(); err != nil {
			t.Fatalf("the stall's shell: %v", err)
		}
	}
	conns, requests = srv.counts()
	sc := sum.Scenarios["open"]
	if r := sc.Requests["r"]; int64(requests) != r.Count || r.Count+sc.DroppedIterations != 3000 || sc.DroppedIterations > 0 {
		t.Fatalf("stall %v: server count %d, summary count %d, dropped %d; want the same count, all of 3,000 run", stall, requests, r.Count, sc.DroppedIterations)
	}
	if late := sc.Requests["r"].Metrics["start_lateness"]; stall && late.Max < 90 {
		t.Fatalf("start lateness max %.1f ms: the process was not stopped for 100 ms", late.Max)
	}
	return conns, requests
}
