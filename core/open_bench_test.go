package core

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/hload/hload/core/metrics"
)

// BenchmarkOpenModel measures how closely the open model holds its rate:
// the sent count against the plan, and the lateness of actual starts
// against planned starts, at 2,000 and 10,000 iterations/s for 10 s
// against a fast loopback server. Each b.N iteration is one whole run.
func BenchmarkOpenModel(b *testing.B) {
	for _, rate := range []int{2000, 10000} {
		b.Run(fmt.Sprintf("rate=%d", rate), func(b *testing.B) {
			srv := newCountingServer(b, nil)
			for b.Loop() {
				sum := runOpen(b, srv.URL, rate, 10*time.Second)
				r := sum.Scenarios["open"].Requests["r"]
				planned := float64(rate * 10)
				late := r.Metrics[metrics.MetricStartLateness]
				b.ReportMetric(100*math.Abs(float64(r.Count)-planned)/planned, "%off-plan")
				b.ReportMetric(late.P50, "lateness-p50-ms")
				b.ReportMetric(late.P99, "lateness-p99-ms")
				b.ReportMetric(float64(sum.Scenarios["open"].DroppedIterations), "dropped")
			}
		})
	}
}
