package metrics

import (
	"strconv"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

// percentiles are the ones every figure reports, in the order of
// LatencyFigures' fields, so one scan of a histogram resolves them all.
var percentiles = []float64{50, 90, 95, 99, 99.9}

// ms converts a histogram value (microseconds) to milliseconds.
func ms(us float64) float64 { return us / 1000 }

// requestFigures turns counters and a latency histogram (nil when nothing
// was recorded) into figures, with RPS = Count / seconds.
func requestFigures(c *counters, latency *hdr.Histogram, seconds float64) RequestFigures {
	rf := RequestFigures{
		Count:         c.count,
		Errors:        c.errors,
		BytesSent:     c.bytesSent,
		BytesReceived: c.bytesReceived,
		Checks:        c.checks,
		Latency:       latencyFigures(latency),
		Status:        make(map[string]int64),
		ErrorsByKind:  make(map[string]int64),
	}
	if c.count > 0 {
		rf.ErrorRate = float64(c.errors) / float64(c.count)
	}
	if seconds > 0 {
		rf.RPS = float64(c.count) / seconds
	}
	for i, n := range c.status {
		if n != 0 {
			rf.Status[strconv.Itoa(statusLow+i)] = n
		}
	}
	for code, n := range c.otherStatus {
		if n != 0 {
			rf.Status[strconv.Itoa(code)] += n
		}
	}
	for i, n := range c.kinds {
		if n != 0 {
			rf.ErrorsByKind[string(knownKinds[i])] = n
		}
	}
	for k, n := range c.otherKinds {
		if n != 0 {
			rf.ErrorsByKind[string(k)] += n
		}
	}
	return rf
}

// flowFigures turns a flow series' counters and duration histogram into
// figures, with Rate = flows ended / seconds.
func flowFigures(c *counters, duration *hdr.Histogram, seconds float64) FlowFigures {
	rf := requestFigures(c, duration, seconds)
	return FlowFigures{
		Count:        rf.Count,
		Completed:    rf.Count - rf.Errors,
		Failed:       rf.Errors,
		FailureRate:  rf.ErrorRate,
		Rate:         rf.RPS,
		Duration:     rf.Latency,
		FailedByKind: rf.ErrorsByKind,
	}
}

// latencyFigures summarises a histogram in milliseconds; all zero when it is
// nil or empty.
func latencyFigures(h *hdr.Histogram) LatencyFigures {
	if h == nil {
		return LatencyFigures{}
	}
	return figuresOf(h)
}

// histogram is what the figures are read from: a run's Histogram, or a
// merge point's PackedHistogram, which answer the same queries.
type histogram interface {
	TotalCount() int64
	ValueAtPercentilesSlice(percentiles []float64) []int64
	Min() int64
	Max() int64
	Mean() float64
	StdDev() float64
}

// figuresOf summarises a histogram that is not nil in milliseconds; all
// zero when it is empty.
func figuresOf(h histogram) LatencyFigures {
	if h.TotalCount() == 0 {
		return LatencyFigures{}
	}
	p := h.ValueAtPercentilesSlice(percentiles)
	return LatencyFigures{
		Min:   ms(float64(h.Min())),
		Mean:  ms(h.Mean()),
		Stdev: ms(h.StdDev()),
		P50:   ms(float64(p[0])),
		P90:   ms(float64(p[1])),
		P95:   ms(float64(p[2])),
		P99:   ms(float64(p[3])),
		P999:  ms(float64(p[4])),
		Max:   ms(float64(h.Max())),
	}
}

// metricFigures summarises the histogram of a metric other than the request
// latency, with Rate = its samples / seconds; all zero when it is nil or
// empty. A count's samples are all 0, and so are its time figures.
func metricFigures(h *hdr.Histogram, seconds float64) MetricFigures {
	if h == nil || h.TotalCount() == 0 {
		return MetricFigures{}
	}
	m := MetricFigures{Count: h.TotalCount(), LatencyFigures: figuresOf(h)}
	if seconds > 0 {
		m.Rate = float64(m.Count) / seconds
	}
	return m
}
