package core

import (
	"context"
	"fmt"
	"io"
	"maps"
	"math"
	"net"
	"net/http"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/zclconf/go-cty/cty"

	"github.com/hload/hload/config"
	"github.com/hload/hload/internal/openfloor"
	"github.com/hload/hload/metrics"
	"github.com/hload/hload/plugins/protocoltest"
	"github.com/hload/hload/protocols"
	hloadhttp "github.com/hload/hload/protocols/http"
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

// nopTest is a scenario against nopProtocol: the core's own work, with no
// protocol cost and no network wait.
func nopTest(b *testing.B, scenario string) *config.Test {
	b.Helper()
	test, diags := config.Parse(map[string][]byte{"test.hcl": []byte(`target "t" {
  protocol = "nop"
}
scenario "s" {
` + scenario + `
  request "r" {
    path = "/r"
  }
}
`)}, b.TempDir(), config.Options{Protocols: protocols.NewRegistry(nopProtocol{})})
	if diags.HasErrors() {
		b.Fatal(diags.Error())
	}
	return test
}

// BenchmarkOpenCPU measures what the open model costs the core per
// request, apart from any protocol: the same in-process request
// (nopProtocol) in the closed model (1 VU looping for 1 s), then a bare
// timer loop keeping the open schedule (the Go runtime's own cost of
// waking at that rate: the floor any pacer pays), then the open model at
// the rate for 2 s with the default VU pool, as the bench harness runs it.
// Each b.N iteration runs all three, so their ratios come from one run;
// run it with -benchtime=1x, under taskset -c 0 to match the harness.
//
// cpu-us/request is the process's CPU (user + system, every thread, GC
// included) over the requests sent; open/closed is the ratio;
// open-floor-us is what the open model costs per request beyond the
// runtime's wake-ups.
func BenchmarkOpenCPU(b *testing.B) {
	for _, rate := range []int{2000, 10000} {
		b.Run(fmt.Sprintf("rate=%d", rate), func(b *testing.B) {
			closedTest := nopTest(b, `  executor = "constant-vus"
  vus      = 1
  duration = "1s"`)
			openTest := nopTest(b, fmt.Sprintf(`  executor = "constant-arrival-rate"
  rate     = %d
  duration = "2s"`, rate))
			opts := Options{Protocols: protocols.NewRegistry(nopProtocol{})}
			for b.Loop() {
				cpu := cpuTime(b)
				sum := runTest(b, closedTest, opts)
				closed := perRequest(cpuTime(b)-cpu, sum.Scenarios["s"].Requests["r"].Count)

				cpu = cpuTime(b)
				ref := referencePacer(rate, 2*time.Second)
				floor := perRequest(cpuTime(b)-cpu, int64(len(ref)))
				slices.Sort(ref)
				refP99 := float64(ref[len(ref)*99/100]) / float64(time.Millisecond)

				cpu = cpuTime(b)
				sum = runTest(b, openTest, opts)
				r := sum.Scenarios["s"].Requests["r"]
				open := perRequest(cpuTime(b)-cpu, r.Count)
				planned := float64(2 * rate)
				late := r.Metrics[metrics.MetricStartLateness]

				b.ReportMetric(closed, "closed-cpu-us/request")
				b.ReportMetric(floor, "floor-cpu-us/tick")
				b.ReportMetric(open, "open-cpu-us/request")
				b.ReportMetric(open/closed, "open/closed")
				b.ReportMetric(open-floor, "open-floor-us")
				b.ReportMetric(late.P99, "lateness-p99-ms")
				b.ReportMetric(refP99, "floor-lateness-p99-ms")
				b.ReportMetric(100*math.Abs(float64(r.Count)-planned)/planned, "%off-plan")
				b.ReportMetric(float64(sum.Scenarios["s"].DroppedIterations), "dropped")
			}
		})
	}
}

// perRequest is cpu over n requests, in microseconds.
func perRequest(cpu time.Duration, n int64) float64 {
	return float64(cpu.Nanoseconds()) / 1e3 / float64(max(n, 1))
}

// holdProtocol holds every call until releaseAll or the call's
// cancellation: VUs that wait on a slow server, with no protocol state of
// their own, so that what a waiting VU costs the core shows alone. When
// deep, a call first runs a deep call chain, as a dial or a TLS handshake
// does, which grows the VU's stack to 8 KB, then waits under about 1 KB
// of frames (Do's included), as a lean protocol parked in a read on a
// net.Conn would: that chain alone, from net.(*conn).Read down to
// gopark, takes some 600 bytes. A GC shrinks a parked goroutine's stack
// by half only while all its frames and 800 bytes take under a quarter
// of it, so whether an 8 KB stack goes back to 4 KB depends on the
// core's frames under Do too.
type holdProtocol struct {
	deep    bool
	held    atomic.Int64
	mu      sync.Mutex
	release chan struct{}
}

func (p *holdProtocol) Describe() protocols.Info {
	name := "hold"
	if p.deep {
		name = "deep"
	}
	return protocols.Info{
		Name:        name,
		TargetSpec:  hcldec.ObjectSpec{},
		RequestSpec: hcldec.ObjectSpec{"path": &hcldec.AttrSpec{Name: "path", Type: cty.String}},
	}
}

func (p *holdProtocol) Open(context.Context, cty.Value) (protocols.Client, error) { return p, nil }

func (p *holdProtocol) Do(ctx context.Context, _ protocols.Call, emit func(protocols.Sample)) {
	start := time.Now()
	p.mu.Lock()
	if p.release == nil {
		p.release = make(chan struct{})
	}
	release := p.release
	p.mu.Unlock()
	p.held.Add(1)
	wait := func() {
		select {
		case <-release:
		case <-ctx.Done():
		}
	}
	if p.deep {
		growStack(12)
		holdUnder(0, wait)
	} else {
		wait()
	}
	emit(protocols.Sample{Metric: protocols.MetricRequest, Time: time.Now(), Value: time.Since(start), Status: 200})
}

// growStack takes about 6 KB of stack.
//
//go:noinline
func growStack(depth int) byte {
	var pad [512]byte
	pad[depth] = byte(depth)
	if depth == 0 {
		return pad[0]
	}
	return growStack(depth-1) + pad[depth]
}

// holdUnder calls wait under depth+1 frames of about 150 bytes.
//
//go:noinline
func holdUnder(depth int, wait func()) byte {
	var pad [112]byte
	pad[depth] = byte(depth)
	if depth == 0 {
		wait()
		return pad[0]
	}
	return holdUnder(depth-1, wait) + pad[depth]
}

// releaseAll lets every held call go; later calls are held again.
func (p *holdProtocol) releaseAll() {
	p.mu.Lock()
	if p.release != nil {
		close(p.release)
	}
	p.release = nil
	p.held.Store(0)
	p.mu.Unlock()
}

func (*holdProtocol) Close() error { return nil }

// heldMemory runs n VUs of test's executor (var.vus) that each send one
// call that the target holds, and returns the memory in use once all n
// are held, after a GC: the heap in use, and the goroutine stacks. held
// is how many calls the target holds, release lets them all go.
func heldMemory(b *testing.B, src string, vars map[string]string, registry *protocols.Registry, n int, held func() int64, release func()) (heap, stacks uint64) {
	b.Helper()
	vars = maps.Clone(vars)
	vars["vus"] = strconv.Itoa(n)
	test, diags := config.Parse(map[string][]byte{"test.hcl": []byte(src)}, b.TempDir(),
		config.Options{Protocols: registry, Vars: vars})
	if diags.HasErrors() {
		b.Fatal(diags.Error())
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		runTest(b, test, Options{Protocols: registry})
	}()
	deadline := time.Now().Add(time.Minute)
	for held() < int64(n) {
		if time.Now().After(deadline) {
			release()
			b.Fatalf("%d of %d VUs held after a minute", held(), n)
		}
		time.Sleep(10 * time.Millisecond)
	}
	runtime.GC()
	runtime.GC() // the second one frees what the first one's finalizers let go
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	release()
	<-done
	return m.HeapInuse, m.StackInuse
}

// holdServerEnv makes the test binary a server that holds every request
// until it is told to let them go (see serveHold), in a process of its
// own, so that the benchmark's memory is the client's alone.
const holdServerEnv = "HLOAD_TEST_HOLD_SERVER"

// serveHold holds every request until GET /__release, answers GET /__held
// with how many it holds, prints its address and exits when its standard
// input closes.
func serveHold() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	fmt.Println(ln.Addr().String())
	go func() {
		io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}()
	var (
		held    atomic.Int64
		mu      sync.Mutex
		release = make(chan struct{})
	)
	http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		ch := release
		mu.Unlock()
		switch r.URL.Path {
		case "/__held":
			fmt.Fprint(w, held.Load())
		case "/__release":
			mu.Lock()
			close(release)
			release = make(chan struct{})
			held.Store(0)
			mu.Unlock()
		default:
			held.Add(1)
			select {
			case <-ch:
			case <-r.Context().Done():
			}
			w.Write([]byte("ok"))
		}
	}))
}

// BenchmarkIdleVUs measures the memory a VU costs while it waits on a
// response: n VUs each hold one call, at 2,000 and at 10,000 VUs, and the
// slope between the two is the cost of one more VU (what any run costs
// with no VU at all cancels out): heap in use and goroutine stacks after
// a GC, apart and together. With holdProtocol (hold, deep) the figures
// are the core's alone; with http, the real protocol against a server in a child
// process that holds every request, they are the core's and the
// protocol's. The closed model's executor (iterations, as the bench
// harness runs it) and the open model's pool (every VU busy at once) are
// measured apart.
func BenchmarkIdleVUs(b *testing.B) {
	executors := []struct{ name, scenario string }{
		{"iterations", `  executor   = "iterations"
  vus        = var.vus
  iterations = 1`},
		{"arrival-rate", `  executor          = "constant-arrival-rate"
  rate              = var.vus
  duration          = "1s"
  pre_allocated_vus = var.vus
  max_vus           = var.vus`},
	}
	for _, protocol := range []string{"hold", "deep", "http"} {
		for _, ex := range executors {
			b.Run(protocol+"/"+ex.name, func(b *testing.B) {
				src := `variable "vus" {}
variable "base_url" {}
target "t" {
  protocol = "` + protocol + `"
}
scenario "s" {
` + ex.scenario + `
  graceful_stop = "1m"
  request "r" {
    path = "/r"
  }
}
`
				vars := map[string]string{"base_url": ""}
				var (
					registry *protocols.Registry
					held     func() int64
					release  func()
				)
				switch protocol {
				case "hold", "deep":
					p := &holdProtocol{deep: protocol == "deep"}
					registry = protocols.NewRegistry(p)
					held = p.held.Load
					release = p.releaseAll
				case "http":
					src = strings.Replace(src, `  protocol = "http"`, `  base_url = var.base_url`, 1)
					url := "http://" + protocoltest.StartChild(b, holdServerEnv)
					vars["base_url"] = url
					registry = protocols.NewRegistry(hloadhttp.New())
					held = func() int64 { return getInt(b, url+"/__held") }
					release = func() { getInt(b, url+"/__release") }
				}
				for b.Loop() {
					lowHeap, lowStacks := heldMemory(b, src, vars, registry, 2000, held, release)
					highHeap, highStacks := heldMemory(b, src, vars, registry, 10000, held, release)
					heap := float64(int64(highHeap)-int64(lowHeap)) / 8000
					stacks := float64(int64(highStacks)-int64(lowStacks)) / 8000
					b.ReportMetric(heap, "heap-B/VU")
					b.ReportMetric(stacks, "stack-B/VU")
					b.ReportMetric(heap+stacks, "B/VU")
				}
			})
		}
	}
}

// getInt GETs url and reads the number it answers, or 0 for no body.
func getInt(b *testing.B, url string) int64 {
	resp, err := http.Get(url)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	n, _ := strconv.ParseInt(string(body), 10, 64)
	return n
}

// helloServerEnv makes the test binary a server that answers every
// request with 60 bytes, as the bench harness's does, on CPU 1 (see
// serveHello), in a process of its own.
const helloServerEnv = "HLOAD_TEST_HELLO_SERVER"

// helloBody is the bench harness's 60-byte answer.
var helloBody = []byte("012345678901234567890123456789012345678901234567890123456789")

// serveHello answers every request with helloBody, prints its address
// and exits when its standard input closes.
func serveHello() {
	pinToSecondCPU()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	fmt.Println(ln.Addr().String())
	go func() {
		io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}()
	http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write(helloBody) }))
}

// BenchmarkOpenFloor measures what the open model costs any Go client on
// this machine, hload or not: raw keep-alive connections to a hello
// server on the other core, with nothing between the socket and the
// caller, first closed (50 connections looping for 1 s), then open (a
// pacer with one timer hands each planned start to the connection that
// went idle last, as hload's pool does, for 2 s at the rate). Run it
// under taskset -c 0 with -benchtime=1x, as the bench harness pins its
// tools. open/closed is the ratio the goal is about, for a client
// with no protocol cost: what hload's open model cannot go below.
func BenchmarkOpenFloor(b *testing.B) {
	for _, rate := range []int{2000, 10000} {
		b.Run(fmt.Sprintf("rate=%d", rate), func(b *testing.B) {
			addr := protocoltest.StartChild(b, helloServerEnv)
			var closedConns, openConns []*openfloor.Conn
			for range 50 {
				closedConns = append(closedConns, dialFloor(b, addr))
			}
			for range rate / 10 {
				openConns = append(openConns, dialFloor(b, addr))
			}
			for b.Loop() {
				cpu := cpuTime(b)
				n, err := openfloor.Closed(closedConns, time.Second)
				if err != nil {
					b.Fatal(err)
				}
				closed := perRequest(cpuTime(b)-cpu, n)
				cpu = cpuTime(b)
				res := openfloor.Open(openConns, rate, 2*time.Second)
				if res.Err != nil {
					b.Fatal(res.Err)
				}
				open := perRequest(cpuTime(b)-cpu, int64(len(res.Late)))
				late, dropped := openfloor.P99(res.Late), res.Dropped
				b.ReportMetric(closed, "closed-cpu-us/request")
				b.ReportMetric(open, "open-cpu-us/request")
				b.ReportMetric(open/closed, "open/closed")
				b.ReportMetric(float64(late)/float64(time.Millisecond), "lateness-p99-ms")
				b.ReportMetric(float64(dropped), "dropped")
			}
		})
	}
}

// dialFloor opens a floor connection to the hello server at addr.
func dialFloor(b *testing.B, addr string) *openfloor.Conn {
	c, err := openfloor.Dial(addr, "/")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	return c
}
