package metrics

import (
	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// Reading is everything a scenario's requests recorded up to one instant:
// the run totals, the interval not yet flushed, and the shards. The
// difference of two readings is the figures of the stretch between them,
// whatever the snapshot intervals were, so that a capacity search measures
// each of its steps from the run's own histograms, with no sample kept.
type Reading struct {
	count, errors int64
	latency       *hdr.Histogram // nil when nothing was recorded
}

// Read returns what the request series of scenario recorded so far. It
// may be called at any time, from any goroutine; each sample is in exactly
// one of two readings' stretches.
func (a *Aggregator) Read(scenario string) Reading {
	list := a.requests.all()
	// Held for reading, Flush cannot move a sample from the shards into
	// the interval or the totals while they are read.
	a.totalsMu.RLock()
	defer a.totalsMu.RUnlock()
	var r Reading
	add := func(c *counters, h *hdr.Histogram) {
		r.count += c.count
		r.errors += c.errors
		if h != nil && h.TotalCount() > 0 {
			if r.latency == nil {
				r.latency = newHistogram()
			}
			r.latency.Merge(h)
		}
	}
	for _, s := range list {
		if s.scenario != scenario {
			continue
		}
		add(&s.total, s.totalLatency)
		add(&s.interval, s.intervalLatency)
		for i := range s.shards {
			sh := &s.shards[i]
			sh.mu.Lock()
			add(&sh.counters, sh.latency)
			sh.mu.Unlock()
		}
	}
	return r
}

// StretchFigures are the figures of a stretch between two readings.
type StretchFigures struct {
	Count     int64
	Errors    int64
	ErrorRate float64 // Errors / Count, 0 when Count is 0
	// P50, P95 and P99 are the latency percentiles in milliseconds, 0
	// when no call ended in the stretch.
	P50, P95, P99 float64
}

// Since returns the figures of the calls recorded after earlier, which
// must be an earlier reading of the same scenario.
func (r Reading) Since(earlier Reading) StretchFigures {
	f := StretchFigures{Count: r.count - earlier.count, Errors: r.errors - earlier.errors}
	if f.Count > 0 {
		f.ErrorRate = float64(f.Errors) / float64(f.Count)
	}
	if r.latency == nil {
		return f
	}
	now := r.latency.Export()
	if earlier.latency != nil {
		before := earlier.latency.Export()
		for i, n := range before.Counts {
			now.Counts[i] -= n
		}
	}
	h := hdr.Import(now)
	if h.TotalCount() == 0 {
		return f
	}
	f.P50 = ms(float64(h.ValueAtQuantile(50)))
	f.P95 = ms(float64(h.ValueAtQuantile(95)))
	f.P99 = ms(float64(h.ValueAtQuantile(99)))
	return f
}
