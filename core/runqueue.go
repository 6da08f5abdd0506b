package core

import (
	"runtime/metrics"
	"time"
)

// runQueueWaits reads the Go scheduler's own account of how long
// goroutines waited, runnable, before they ran (/sched/latencies:seconds,
// which the runtime samples as goroutines start running): the time a VU
// whose response has arrived waits for a CPU. It tells the open model's
// pool why its iterations wait. When VUs wait on the target, a new VU
// starts an iteration sooner. When they wait for hload's own CPU (the
// load needs more than hload's cores, a collection, another process on
// the machine), a new VU would only be one more goroutine in the same
// queue, and one more connection to open.
//
// The runtime's histogram sees goroutines that wait for a processor, not
// processors that are all busy: two VUs that each burn a core of two keep
// it empty while every other iteration waits. So the window also measures
// the process's CPU time against the cores it may use.
type runQueueWaits struct {
	sample []metrics.Sample
	base   []uint64 // the histogram's counts at mark
	cores  int
	// markedAt and cpuAt are the clock and the process's CPU time at
	// mark; cpuKnown is false where the CPU time cannot be read.
	markedAt time.Time
	cpuAt    time.Duration
	cpuKnown bool
}

func newRunQueueWaits() *runQueueWaits {
	return &runQueueWaits{sample: []metrics.Sample{{Name: "/sched/latencies:seconds"}}, cores: availableCores()}
}

// read returns the histogram so far, nil where the runtime lacks it.
// metrics.Read reuses the histogram's slices from the previous read.
func (w *runQueueWaits) read() *metrics.Float64Histogram {
	metrics.Read(w.sample)
	if w.sample[0].Value.Kind() != metrics.KindFloat64Histogram {
		return nil
	}
	return w.sample[0].Value.Float64Histogram()
}

// mark starts the window that longShare measures.
func (w *runQueueWaits) mark() {
	if h := w.read(); h != nil {
		w.base = append(w.base[:0], h.Counts...)
	}
	w.cpuAt, w.cpuKnown = processCPU()
	w.markedAt = time.Now()
}

// busyWindow is the shortest window busyShare judges: over a few
// milliseconds, two goroutines that happen to run at once look like a
// process that keeps two cores busy.
const busyWindow = 10 * time.Millisecond

// busyShare is the share of the cores the process may use that it kept
// busy since mark; ok is false where its CPU time cannot be read, or the
// window is shorter than busyWindow.
func (w *runQueueWaits) busyShare() (share float64, ok bool) {
	cpu, known := processCPU()
	wall := time.Since(w.markedAt)
	if !known || !w.cpuKnown || wall < busyWindow {
		return 0, false
	}
	return float64(cpu-w.cpuAt) / (float64(wall) * float64(w.cores)), true
}

// longShare is the share of the goroutine starts since mark that had
// waited at least over, and how many starts the runtime sampled.
func (w *runQueueWaits) longShare(over time.Duration) (share float64, sampled uint64) {
	h := w.read()
	if h == nil || len(w.base) != len(h.Counts) {
		return 0, 0
	}
	return waitedShare(h.Buckets, h.Counts, w.base, over.Seconds())
}

// waitedShare is the share of the counts added since base that fall in
// buckets starting at over seconds or later, and how many were added.
// Bucket i holds the waits from buckets[i] to buckets[i+1].
func waitedShare(buckets []float64, counts, base []uint64, over float64) (float64, uint64) {
	var all, long uint64
	for i, c := range counts {
		d := c - base[i]
		all += d
		if buckets[i] >= over {
			long += d
		}
	}
	if all == 0 {
		return 0, 0
	}
	return float64(long) / float64(all), all
}
