package core

import (
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

const generatorTest = loopbackTarget + `
scenario "s" {
  executor = "constant-vus"
  vus      = 4
  # Long enough that the saturated stretch, without the first and last
  # intervals' start and end, is well over the second it must last: at
  # 1.5 s, four intervals of 250 ms summed to just under it once.
  duration = "2500ms"
  request "r" {
    path = "/r"
  }
}
`

const generatorHeadroomTest = loopbackTarget + `
scenario "s" {
  executor          = "constant-arrival-rate"
  rate              = 20
  duration          = "1500ms"
  pre_allocated_vus = 2
  request "r" {
    path = "/r"
  }
}
`

// TestRunWatchesGenerator: a run whose process has one core (GOMAXPROCS 1)
// that a spinning goroutine of the same process keeps busy is saturated:
// a snapshot says so once, and the summary marks it and warns; a light
// open-model run of the same process is not, and says nothing. Both judge
// the process's own CPU time against the same run's wall clock.
func TestRunWatchesGenerator(t *testing.T) {
	t.Run("saturated", func(t *testing.T) {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
		srv := newCountingServer(t, nil)
		stop := make(chan struct{})
		var spinning sync.WaitGroup
		spinning.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
			}
		})
		live := &snapshotSink{}
		sum := runTest(t, loadTest(t, generatorTest, map[string]string{"base_url": srv.URL}),
			Options{Sinks: []Sink{live}, Interval: 250 * time.Millisecond})
		close(stop)
		spinning.Wait()
		g := sum.Generator
		if g == nil {
			t.Fatal("no generator figures")
		}
		t.Logf("generator: saturated %v, %d of %d intervals, cpu %.3f s, utilization mean %.2f max %.2f, wait %v; %s",
			g.Saturated, g.SaturatedIntervals, g.Intervals, g.CPUSeconds, g.CPUUtilizationMean, g.CPUUtilizationMax, deref(g.RunQueueWaitShareMax), g.Reason)
		if !g.Saturated || g.CPUCoresAvailable != 1 {
			t.Errorf("one core kept busy by a spinner: saturated %v on %d cores, want saturated on 1", g.Saturated, g.CPUCoresAvailable)
		}
		if said := liveWarnings(live, "hload is saturated: "); len(said) != 1 {
			t.Errorf("live warnings about saturation %q, want one", said)
		}
		if !slices.ContainsFunc(sum.Warnings, func(w string) bool { return strings.HasPrefix(w, "hload was saturated") }) {
			t.Errorf("summary warnings %q do not say hload was saturated", sum.Warnings)
		}
		if r := sum.Scenarios["s"].Requests["r"]; r.Count != int64(srv.count("/r")) {
			t.Errorf("summary %d calls, server %d", r.Count, srv.count("/r"))
		}
	})
	t.Run("headroom", func(t *testing.T) {
		srv := newCountingServer(t, nil)
		live := &snapshotSink{}
		sum := runTest(t, loadTest(t, generatorHeadroomTest, map[string]string{"base_url": srv.URL}),
			Options{Sinks: []Sink{live}, Interval: 250 * time.Millisecond})
		g := sum.Generator
		if g == nil {
			t.Fatal("no generator figures")
		}
		t.Logf("generator: saturated %v, %d of %d intervals, cpu %.3f s, utilization mean %.2f max %.2f, wait %v",
			g.Saturated, g.SaturatedIntervals, g.Intervals, g.CPUSeconds, g.CPUUtilizationMean, g.CPUUtilizationMax, deref(g.RunQueueWaitShareMax))
		if g.Saturated || g.Intervals < 4 || g.CPUCoresAvailable != availableCores() {
			t.Errorf("light run: saturated %v, %d intervals judged, %d cores (want not saturated, >= 4 intervals, %d cores)",
				g.Saturated, g.Intervals, g.CPUCoresAvailable, availableCores())
		}
		if said := liveWarnings(live, "hload is saturated"); len(said) != 0 {
			t.Errorf("a light run warned %q", said)
		}
		if r := sum.Scenarios["s"].Requests["r"]; r.Count != int64(srv.count("/r")) || r.Count == 0 {
			t.Errorf("summary %d calls, server %d", r.Count, srv.count("/r"))
		}
	})
}

// liveWarnings returns the snapshots' warnings that start with prefix.
func liveWarnings(live *snapshotSink, prefix string) []string {
	live.mu.Lock()
	defer live.mu.Unlock()
	var out []string
	for _, snap := range live.snaps {
		for _, w := range snap.Warnings {
			if strings.HasPrefix(w, prefix) {
				out = append(out, w)
			}
		}
	}
	return out
}

func deref(f *float64) any {
	if f == nil {
		return nil
	}
	return *f
}
