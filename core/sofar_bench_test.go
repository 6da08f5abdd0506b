package core

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hload/hload/protocols"
	hloadhttp "github.com/hload/hload/protocols/http"
)

// BenchmarkRunSoFar measures what a watching sink (the live dashboard)
// adds to each interval in the core: the run so far, built with the
// summary's code, for a test of 20 requests with three thresholds, each
// request's totals holding 10,000 calls of spread latencies and a ttfb.
// One op is one interval's; at the default 1 s interval, ns/op divided by
// 10^7 is the percentage of one core it takes.
func BenchmarkRunSoFar(b *testing.B) {
	var src strings.Builder
	src.WriteString(`target "t" {
  base_url = "http://127.0.0.1:1"
}
scenario "s" {
  executor = "constant-vus"
  vus      = 50
  duration = "1m"
`)
	for i := range 20 {
		fmt.Fprintf(&src, "  request \"r%02d\" {\n    path = \"/r\"\n  }\n", i)
	}
	src.WriteString(`}
threshold {
  metric    = "latency"
  condition = "p95 < 500ms"
}
threshold {
  metric    = "latency"
  request   = "r03"
  condition = "p99 < 1s"
}
threshold {
  metric    = "errors"
  condition = "rate < 1%"
}
`)
	test := loadTest(b, src.String(), nil)
	r, err := openRun(context.Background(), test, Options{Protocols: protocols.NewRegistry(hloadhttp.New())})
	if err != nil {
		b.Fatal(err)
	}
	defer r.close()
	start := time.Now()
	r.info.Started = start
	for i := range 20 {
		s := r.agg.Series("s", fmt.Sprintf("r%02d", i))
		for n := range 10000 {
			d := time.Duration(200+n%5000) * time.Microsecond
			s.Record(protocols.Sample{Metric: protocols.MetricRequest, Value: d, Status: 200, BytesSent: 60, BytesReceived: 120})
			s.Record(protocols.Sample{Metric: protocols.MetricTTFB, Value: d - 50*time.Microsecond})
		}
	}
	end := start.Add(time.Second)
	r.agg.Flush(start, end)
	if sum := r.soFar(end); sum.Scenarios["s"].Requests["r00"].Count != 10000 || len(sum.Thresholds) != 3 {
		b.Fatalf("the run so far: %+v", sum.Scenarios["s"].Requests["r00"])
	}
	for b.Loop() {
		r.soFar(end)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1e7, "%-of-a-core-at-1s")
}
