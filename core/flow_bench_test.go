package core

import (
	"context"
	"net/http"
	"net/http/httptest"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/hload/hload/config"
	"github.com/hload/hload/core/metrics"
	"github.com/hload/hload/protocols"
	hloadhttp "github.com/hload/hload/protocols/http"
)

// BenchmarkFlow compares a flow of three constant steps with the same
// three requests as separate iterations, per request: a flow must cost
// no more CPU per request than bare requests do. Each reports the time,
// the process's CPU time, bytes and allocations per request, the loopback
// server's share included.
func BenchmarkFlow(b *testing.B) {
	body := []byte("012345678901234567890123456789012345678901234567890123456789") // 60 bytes, a small API answer
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write(body)
	}))
	defer srv.Close()
	for _, bc := range []struct {
		name     string
		scenario string
		perIter  int // requests per iteration
	}{
		{"flow", `
  flow "f" {
    request "a" {
      path = "/a"
    }
    request "b" {
      path = "/b"
    }
    request "c" {
      path = "/c"
    }
  }`, 3},
		{"requests", `
  request "a" {
    path = "/a"
  }
  request "b" {
    path = "/b"
  }
  request "c" {
    path = "/c"
  }`, 1},
	} {
		b.Run(bc.name, func(b *testing.B) {
			test := loadTest(b, loopbackTarget+`scenario "s" {
  executor = "constant-vus"
  vus      = 1
  duration = "1s"
`+bc.scenario+`
}
`, map[string]string{"base_url": srv.URL})
			sc := benchScenarioRun(b, test)
			v := sc.acquire()
			ctx := context.Background()
			for range 3 {
				v.runIteration(ctx, time.Time{}) // warm the VU's connection
			}
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			cpu := cpuTime(b)
			b.ResetTimer()
			for b.Loop() {
				v.runIteration(ctx, time.Time{})
			}
			b.StopTimer()
			cpu = cpuTime(b) - cpu
			runtime.ReadMemStats(&after)
			requests := float64(b.N * bc.perIter)
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/requests, "ns/request")
			b.ReportMetric(float64(cpu.Nanoseconds())/requests, "cpu-ns/request")
			b.ReportMetric(float64(after.Mallocs-before.Mallocs)/requests, "allocs/request")
			b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/requests, "B/request")
		})
	}
}

// cpuTime is the CPU time the process used so far, user and system: the
// client's and the loopback server's alike, the same for both cases.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchScenarioRun binds a loaded test's first scenario as a run does, to
// the real HTTP protocol, with no executor running it.
func benchScenarioRun(b *testing.B, test *config.Test) *scenarioRun {
	b.Helper()
	clients := map[string]protocols.Client{}
	for _, t := range test.Targets {
		c, err := hloadhttp.New().Open(context.Background(), t.Config)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { c.Close() })
		clients[t.Name] = c
	}
	r := &run{state: &runState{}, clients: clients, agg: metrics.NewAggregator(), runCtx: context.Background()}
	return newScenarioRun(r, test.Scenarios[0], -1)
}
