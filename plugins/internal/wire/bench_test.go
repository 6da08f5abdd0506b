package wire

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hload/hload/protocols"
)

// BenchmarkHarness compares a trivial protocol called in-process with the
// same protocol through the whole wire, over the harness's in-memory
// connection and over go-plugin's gRPC on a unix socket: the difference is
// the boundary's cost per call, both ends together, as they share the
// process.
func BenchmarkHarness(b *testing.B) {
	trivial := func(_ context.Context, _ protocols.Call, emit func(protocols.Sample)) {
		emit(protocols.Sample{Metric: protocols.MetricRequest, Time: time.Now(), Value: time.Millisecond, Status: 200})
	}
	inProcess := func(b *testing.B) protocols.Client {
		c, err := (&fake{do: trivial}).Open(context.Background(), testTarget)
		if err != nil {
			b.Fatal(err)
		}
		return c
	}
	harness := func(b *testing.B) protocols.Client {
		_, c, _ := open(b, RemoteOptions{}, trivial)
		return c
	}
	unixSocket := func(b *testing.B) protocols.Client { return openGoPlugin(b, trivial) }
	req := request("/")
	for _, side := range []struct {
		name string
		open func(*testing.B) protocols.Client
	}{{"in-process", inProcess}, {"harness", harness}, {"go-plugin-unix", unixSocket}} {
		b.Run(side.name+"/sequential", func(b *testing.B) {
			c := side.open(b)
			var n int
			emit := func(protocols.Sample) { n++ }
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				c.Do(context.Background(), protocols.Call{VU: 1, Iteration: uint64(i), Request: req}, emit)
			}
			reportBatches(b, c)
			if n != b.N {
				b.Fatalf("%d samples for %d calls", n, b.N)
			}
		})
		b.Run(side.name+"/parallel-50", func(b *testing.B) {
			// 50 goroutines exactly, one per VU, sharing b.N calls;
			// b.RunParallel would tie the count to GOMAXPROCS.
			const vus = 50
			c := side.open(b)
			var next, samples atomic.Int64
			var wg sync.WaitGroup
			b.ReportAllocs()
			b.ResetTimer()
			for vu := uint64(1); vu <= vus; vu++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					emit := func(protocols.Sample) { samples.Add(1) }
					for it := uint64(0); next.Add(1) <= int64(b.N); it++ {
						c.Do(context.Background(), protocols.Call{VU: vu, Iteration: it, Request: req}, emit)
					}
				}()
			}
			wg.Wait()
			reportBatches(b, c)
			if samples.Load() != int64(b.N) {
				b.Fatalf("%d samples for %d calls", samples.Load(), b.N)
			}
		})
	}
}

// reportBatches reports how many calls went in a CallBatch on average.
func reportBatches(b *testing.B, c protocols.Client) {
	if rc, ok := c.(*client); ok && rc.sent.Load() > 0 {
		b.ReportMetric(float64(b.N)/float64(rc.sent.Load()), "calls/batch")
	}
}
