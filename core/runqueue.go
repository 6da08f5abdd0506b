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
type runQueueWaits struct {
	sample []metrics.Sample
	base   []uint64 // the histogram's counts at mark
}

func newRunQueueWaits() *runQueueWaits {
	return &runQueueWaits{sample: []metrics.Sample{{Name: "/sched/latencies:seconds"}}}
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
