package core

import (
	"context"
	"net/http"
	"net/http/httptest"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/zclconf/go-cty/cty"

	"github.com/hload/hload/config"
	"github.com/hload/hload/metrics"
	"github.com/hload/hload/protocols"
	hloadhttp "github.com/hload/hload/protocols/http"
)

// nopProtocol answers every call at once, in process: with it a benchmark
// measures the core's own work per request.
type nopProtocol struct{}

func (nopProtocol) Describe() protocols.Info {
	return protocols.Info{
		Name:        "nop",
		TargetSpec:  hcldec.ObjectSpec{},
		RequestSpec: hcldec.ObjectSpec{"path": &hcldec.AttrSpec{Name: "path", Type: cty.String}},
	}
}

func (nopProtocol) Open(context.Context, cty.Value) (protocols.Client, error) {
	return nopProtocol{}, nil
}

func (nopProtocol) Do(_ context.Context, _ protocols.Call, emit func(protocols.Sample)) {
	emit(protocols.Sample{Metric: protocols.MetricRequest, Time: time.Now(), Value: time.Microsecond, Status: 200})
}

func (nopProtocol) Close() error { return nil }

// BenchmarkFlow compares a flow of three constant steps with the same
// three requests as separate iterations, per request: a flow must cost
// no more CPU per request than bare requests do. It runs them against a
// loopback HTTP server, and against nopProtocol for the core's own work.
// Each reports the time, the process's CPU time (the loopback server's
// share included, the same in both), bytes and allocations per request.
func BenchmarkFlow(b *testing.B) {
	body := []byte("012345678901234567890123456789012345678901234567890123456789") // 60 bytes, a small API answer
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write(body)
	}))
	defer srv.Close()
	targets := map[string]string{
		"http": `variable "base_url" {}
target "t" {
  base_url = var.base_url
}
`,
		"nop": `variable "base_url" {}
target "t" {
  protocol = "nop"
}
`,
	}
	for _, protocol := range []string{"http", "nop"} {
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
			b.Run(protocol+"/"+bc.name, func(b *testing.B) {
				test, diags := config.Parse(map[string][]byte{"test.hcl": []byte(targets[protocol] + `scenario "s" {
  executor = "constant-vus"
  vus      = 1
  duration = "1s"
` + bc.scenario + `
}
`)}, b.TempDir(), config.Options{
					Protocols: protocols.NewRegistry(hloadhttp.New(), nopProtocol{}),
					Vars:      map[string]string{"base_url": srv.URL},
				})
				if diags.HasErrors() {
					b.Fatal(diags.Error())
				}
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
// its targets' protocols, with no executor running it.
func benchScenarioRun(b *testing.B, test *config.Test) *scenarioRun {
	b.Helper()
	registry := protocols.NewRegistry(hloadhttp.New(), nopProtocol{})
	clients := map[string]protocols.Client{}
	for _, t := range test.Targets {
		p, _ := registry.Lookup(t.Protocol)
		c, err := p.Open(context.Background(), t.Config)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { c.Close() })
		clients[t.Name] = c
	}
	r := &run{state: &runState{}, clients: clients, agg: metrics.NewAggregator(), runCtx: context.Background()}
	return newScenarioRun(r, test.Scenarios[0], -1)
}
