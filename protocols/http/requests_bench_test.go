package http

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	nethttp "net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/hload/hload/bench/benchreq"
	"github.com/hload/hload/config"
	"github.com/hload/hload/plugins/protocoltest"
	"github.com/hload/hload/protocols"
)

// benchServerEnv makes the test binary the loopback server of
// BenchmarkRequests instead of a test run (see TestMain), so that the
// benchmark's process CPU time is the client's alone.
const benchServerEnv = "HLOAD_HTTP_BENCH_SERVER"

// slowServerEnv makes the test binary the slow server of
// BenchmarkWaitingVUs.
const slowServerEnv = "HLOAD_HTTP_SLOW_SERVER"

func TestMain(m *testing.M) {
	if os.Getenv(benchServerEnv) == "1" {
		serveBench()
		return
	}
	if os.Getenv(slowServerEnv) == "1" {
		serveSlow()
		return
	}
	os.Exit(m.Run())
}

// serveSlow reads requests and answers none, but GET /held, which it
// answers with the number of requests it holds. It prints its address on
// stdout and ends when its standard input closes.
func serveSlow() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	var held atomic.Int64
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				br := bufio.NewReader(conn)
				for {
					r, err := nethttp.ReadRequest(br)
					if err != nil {
						return
					}
					if r.URL.Path == "/held" {
						n := strconv.FormatInt(held.Load(), 10)
						fmt.Fprintf(conn, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(n), n)
						continue
					}
					held.Add(1)
					io.Copy(io.Discard, conn) // until the client goes
					held.Add(-1)
					return
				}
			}()
		}
	}()
	fmt.Println(ln.Addr().String())
	io.Copy(io.Discard, os.Stdin)
	ln.Close()
}

// serveBench answers every request with 60 bytes, 400 when a request that
// says it carries JSON does not, and GET /count with the requests it
// answered. It prints its address on stdout and ends when its standard
// input closes.
func serveBench() {
	body := []byte("hload benchmark body: sixty bytes of payload, no more, ok!!\n")
	var count, bad atomic.Int64
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	srv := &nethttp.Server{Handler: nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
		if r.URL.Path == "/count" {
			fmt.Fprintf(w, "%d %d", count.Load(), bad.Load())
			return
		}
		count.Add(1)
		b, _ := io.ReadAll(r.Body)
		if r.Header.Get("Content-Type") == "application/json" && !json.Valid(b) {
			bad.Add(1)
			w.WriteHeader(nethttp.StatusBadRequest)
		}
		w.Write(body)
	})}
	go srv.Serve(ln)
	fmt.Println(ln.Addr().String())
	io.Copy(io.Discard, os.Stdin)
	srv.Close()
}

// benchServer starts serveBench in a child process and returns its base
// URL and a function that reads its counts: requests answered, and
// requests whose JSON was not valid.
func benchServer(b *testing.B) (string, func() (answered, bad int64)) {
	b.Helper()
	base := "http://" + protocoltest.StartChild(b, benchServerEnv)
	counts := func() (int64, int64) {
		resp, err := nethttp.Get(base + "/count")
		if err != nil {
			b.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		f := strings.Fields(string(raw))
		if len(f) != 2 {
			b.Fatalf("count = %q", raw)
		}
		n, _ := strconv.ParseInt(f[0], 10, 64)
		bad, _ := strconv.ParseInt(f[1], 10, 64)
		return n, bad
	}
	return base, counts
}

// benchRequests are the requests of issue 14's CPU-per-request goal, as
// the harness (bench/cases.go) sends them: a GET, a POST with a query and
// a small constant JSON body, and the same POST with dynamic values (a
// random path segment, a CSV field, per-iteration numbers in the JSON).
var benchRequests = []struct{ name, block string }{
	{"get", `
  request "r" {
    path = "/hello"
  }`},
	{"post-constant", `
  request "r" {
    method = "POST"
    path   = "/orders"
    query  = { page = "1", sort = "price" }
    json   = { sku = "A-100", quantity = 2, price = 19.99, gift = false, tags = ["red", "small"] }
  }`},
	{"post-dynamic", postDynamic},
	{"post-dynamic-whole", postDynamic},
	{"post-dynamic-evaluated", postDynamic},
}

const postDynamic = "\n" + benchreq.PostDynamic

// BenchmarkRequests measures what a request costs hload's process, one VU
// on one keep-alive connection: the request's evaluation, as the core does
// it per call, and Do. post-dynamic goes as the core sends it, as a
// template's holes (protocols.Templater); post-dynamic-whole as one object
// per call, as it went before templates and goes to a client that cannot
// take them; post-dynamic-evaluated is post-dynamic-whole with its values
// evaluated before the timing (1,000 of them, in turn), for Do's share
// alone. The server runs in a process of its own, so the
// process CPU time, allocations and bytes are the client's alone; they are
// reported per request, and the server's own count of the requests it
// answered must match the calls made.
func BenchmarkRequests(b *testing.B) {
	base, counts := benchServer(b)
	dir := b.TempDir()
	users := "email\n"
	for i := range 100 {
		users += fmt.Sprintf("user%d@example.com\n", i)
	}
	if err := os.WriteFile(filepath.Join(dir, "users.csv"), []byte(users), 0o644); err != nil {
		b.Fatal(err)
	}
	for _, bc := range benchRequests {
		b.Run(bc.name, func(b *testing.B) {
			test := benchTest(b, dir, bc.block, base)
			r := test.Scenarios[0].Requests[0]
			c, err := New().Open(context.Background(), test.Targets[0].Config)
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			call := benchCall(b, c, r, bc.name == "post-dynamic")
			var feeders []*config.Cursor
			for _, f := range r.Feeders() {
				feeders = append(feeders, f.NewCursor())
			}
			data := map[string]cty.Value{}
			failed := 0
			check := func(s protocols.Sample) {
				if s.Metric == protocols.MetricRequest && (s.Error != "" || s.Status != 200) {
					failed++
				}
			}
			var evaluated []cty.Value
			if strings.HasSuffix(bc.name, "-evaluated") {
				for i := range 1000 {
					it := config.Iteration{VU: 1, Iteration: uint64(i), Scenario: "s", Data: map[string]cty.Value{}}
					for j, f := range r.Feeders() {
						row, _ := feeders[j].Next()
						it.Data[f.Name] = f.Row(row)
					}
					v, _, diags := r.Eval(it)
					if diags.HasErrors() {
						b.Fatal(diags.Error())
					}
					evaluated = append(evaluated, v)
				}
			}
			ctx := context.Background()
			var iteration uint64
			one := func() {
				if evaluated != nil {
					call.Request = evaluated[iteration%uint64(len(evaluated))]
					iteration++
					c.Do(ctx, call, check)
					return
				}
				it := config.Iteration{VU: 1, Iteration: iteration, Scenario: "s"}
				if len(feeders) > 0 {
					for i, f := range r.Feeders() {
						row, _ := feeders[i].Next()
						data[f.Name] = f.Row(row)
					}
					it.Data = data
				}
				iteration++
				if _, ok := call.Prepared.(*template); ok {
					var diags hcl.Diagnostics
					if call.Holes, _, diags = r.EvalHoles(it, call.Holes); diags.HasErrors() {
						b.Fatal(diags.Error())
					}
					c.Do(ctx, call, check)
					return
				}
				v, _, diags := r.Eval(it)
				if diags.HasErrors() {
					b.Fatal(diags.Error())
				}
				call.Request = v
				c.Do(ctx, call, check)
			}
			for range 3 {
				one() // connect outside the timing
			}
			answered0, _ := counts()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			cpu := processCPU(b)
			b.ResetTimer()
			for b.Loop() {
				one()
			}
			b.StopTimer()
			cpu = processCPU(b) - cpu
			runtime.ReadMemStats(&after)
			answered, bad := counts()
			if n := answered - answered0; n != int64(b.N) || bad != 0 || failed != 0 {
				b.Fatalf("the server answered %d requests, %d with bad JSON, and %d calls failed; want %d, 0, 0", n, bad, failed, b.N)
			}
			n := float64(b.N)
			b.ReportMetric(float64(cpu.Nanoseconds())/n, "cpu-ns/request")
			b.ReportMetric(float64(after.Mallocs-before.Mallocs)/n, "allocs/request")
			b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/n, "B/request")
		})
	}
}

// benchCall is the call the core would make for r on c, before its
// request value is set: prepared once when r is the same for every call,
// else templated once when templated is true.
func benchCall(b *testing.B, c protocols.Client, r *config.Request, templated bool) protocols.Call {
	call := protocols.Call{VU: 1}
	if r.Dynamic() {
		if templated {
			shape, holes, _ := r.Shape()
			t, err := c.(protocols.Templater).Template(shape, holes)
			if err != nil {
				b.Fatal(err)
			}
			call.Prepared = t
		}
		return call
	}
	v, diags := r.Value(config.Iteration{})
	if diags.HasErrors() {
		b.Fatal(diags.Error())
	}
	p, err := c.(protocols.Preparer).Prepare(v)
	if err != nil {
		b.Fatal(err)
	}
	call.Prepared = p
	return call
}

// processCPU is the CPU time the process used so far, user and system.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchTest loads a test of one VU sending block, a request of
// benchRequests, to base, with the CSV data source "users" read from
// dir/users.csv.
func benchTest(b *testing.B, dir, block, base string) *config.Test {
	b.Helper()
	src := `variable "base_url" {}
data "csv" "users" {
  path = "users.csv"
}
target "t" {
  base_url = var.base_url
}
scenario "s" {
  executor = "constant-vus"
  vus      = 1
  duration = "1s"
` + block + `
}
`
	test, diags := config.Parse(map[string][]byte{"test.hcl": []byte(src)}, dir, config.Options{
		Protocols: protocols.NewRegistry(New()),
		Vars:      map[string]string{"base_url": base},
	})
	if diags.HasErrors() {
		b.Fatal(diags.Error())
	}
	return test
}

// BenchmarkRender measures what Do spends on a request before sending it,
// without the network: for each request of BenchmarkRequests, evaluating
// it as the core does ("eval", the config's share, not this package's),
// then rendering it ("render"), which a prepared request skips, and
// writing it out as the engine sends it ("request"), which a prepared
// request makes once.
func BenchmarkRender(b *testing.B) {
	dir := b.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "users.csv"), []byte("email\nada@example.com\nbob@example.com\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	for _, bc := range benchRequests {
		if strings.HasSuffix(bc.name, "-evaluated") || strings.HasSuffix(bc.name, "-whole") {
			continue // the same request as post-dynamic
		}
		test := benchTest(b, dir, bc.block, "http://127.0.0.1:9")
		r := test.Scenarios[0].Requests[0]
		cfg, err := parseTarget(test.Targets[0].Config)
		if err != nil {
			b.Fatal(err)
		}
		it := config.Iteration{VU: 1, Scenario: "s", Data: map[string]cty.Value{}}
		for _, f := range r.Feeders() {
			it.Data[f.Name] = f.Row(0)
		}
		values := make([]cty.Value, 64)
		for i := range values {
			it.Iteration = uint64(i)
			var diags hcl.Diagnostics
			if values[i], _, diags = r.Eval(it); diags.HasErrors() {
				b.Fatal(diags.Error())
			}
		}
		b.Run(bc.name+"/eval", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				it.Iteration++
				r.Eval(it)
			}
		})
		b.Run(bc.name+"/render", func(b *testing.B) {
			b.ReportAllocs()
			var rd rendered
			var s scratch
			i := 0
			for b.Loop() {
				if err := render(cfg, values[i%len(values)], &rd, &s); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
		if r.Dynamic() {
			shape, n, _ := r.Shape()
			tmpl, err := newClient(cfg).Template(shape, n)
			if err != nil {
				b.Fatal(err)
			}
			var holes [][]cty.Value
			for i := range values {
				it.Iteration = uint64(i)
				h, _, diags := r.EvalHoles(it, nil)
				if diags.HasErrors() {
					b.Fatal(diags.Error())
				}
				holes = append(holes, h)
			}
			b.Run(bc.name+"/eval-holes", func(b *testing.B) {
				b.ReportAllocs()
				var h []cty.Value
				for b.Loop() {
					it.Iteration++
					h, _, _ = r.EvalHoles(it, h)
				}
			})
			b.Run(bc.name+"/render-holes", func(b *testing.B) {
				b.ReportAllocs()
				var rd rendered
				var s scratch
				i := 0
				for b.Loop() {
					if err := renderHoles(cfg, tmpl.(*template), holes[i%len(holes)], &rd, &s); err != nil {
						b.Fatal(err)
					}
					i++
				}
			})
		}
		b.Run(bc.name+"/request", func(b *testing.B) {
			b.ReportAllocs()
			var rd rendered
			if err := render(cfg, values[0], &rd, &scratch{}); err != nil {
				b.Fatal(err)
			}
			var wire []byte
			for b.Loop() {
				h := firstHop(&rd)
				wire = appendRequest(wire[:0], &h, "")
			}
		})
	}
}

// BenchmarkEngineVsNetHTTP measures the engine against net/http's
// Transport on the same keep-alive GET to the same server, in one run:
// the server runs in a process of its own, so ns/op, allocs/op and
// cpu-ns/request are the client's alone. engine is Client.Do with the
// request prepared, as the core makes it, samples and all; net-http is a
// bare RoundTrip loop that reads the body, with nothing measured.
func BenchmarkEngineVsNetHTTP(b *testing.B) {
	base, _ := benchServer(b)
	b.Run("engine", func(b *testing.B) {
		c := open(b, New(), base, nil)
		r := req(map[string]cty.Value{"path": cty.StringVal("/hello")})
		p, err := c.(protocols.Preparer).Prepare(r)
		if err != nil {
			b.Fatal(err)
		}
		call := protocols.Call{VU: 1, Request: r, Prepared: p}
		ctx := context.Background()
		failed := 0
		check := func(s protocols.Sample) {
			if s.Metric == protocols.MetricRequest && (s.Error != "" || s.Status != 200) {
				failed++
			}
		}
		c.Do(ctx, call, check)
		b.ReportAllocs()
		cpu := processCPU(b)
		b.ResetTimer()
		for b.Loop() {
			c.Do(ctx, call, check)
		}
		b.StopTimer()
		b.ReportMetric(float64((processCPU(b)-cpu).Nanoseconds())/float64(b.N), "cpu-ns/request")
		if failed > 0 {
			b.Fatalf("%d calls failed", failed)
		}
	})
	b.Run("net-http", func(b *testing.B) {
		tr := &nethttp.Transport{DisableCompression: true, MaxConnsPerHost: 1}
		defer tr.CloseIdleConnections()
		r, err := nethttp.NewRequest("GET", base+"/hello", nil)
		if err != nil {
			b.Fatal(err)
		}
		one := func() {
			resp, err := tr.RoundTrip(r)
			if err != nil {
				b.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				b.Fatalf("status %d", resp.StatusCode)
			}
		}
		one()
		b.ReportAllocs()
		cpu := processCPU(b)
		b.ResetTimer()
		for b.Loop() {
			one()
		}
		b.StopTimer()
		b.ReportMetric(float64((processCPU(b)-cpu).Nanoseconds())/float64(b.N), "cpu-ns/request")
	})
}

// BenchmarkWaitingVUs measures what a VU costs while it waits on a
// response: vus VUs each send a GET to a server (in a process of its own)
// that holds every request, and once the server holds them all, the heap
// and stacks in use, and the process's RSS, are compared with before the
// VUs started. Run it with -benchtime 1x.
func BenchmarkWaitingVUs(b *testing.B) {
	const vus = 2000
	base := "http://" + protocoltest.StartChild(b, slowServerEnv)
	held := func() int64 {
		resp, err := nethttp.Get(base + "/held")
		if err != nil {
			b.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		n, _ := strconv.ParseInt(string(raw), 10, 64)
		return n
	}
	held() // net/http's own client set up outside the figures
	for b.Loop() {
		c := open(b, New(), base, map[string]cty.Value{"timeout": cty.StringVal("60s")})
		r := req(map[string]cty.Value{"path": cty.StringVal("/wait")})
		p, err := c.(protocols.Preparer).Prepare(r)
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		var interrupted atomic.Int64
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		rss0 := rss(b)
		done := make(chan struct{}, vus)
		for vu := range uint64(vus) {
			go func() {
				c.Do(ctx, protocols.Call{VU: vu + 1, Request: r, Prepared: p}, func(s protocols.Sample) {
					if s.Metric == protocols.MetricRequest && s.Error == protocols.ErrInterrupted {
						interrupted.Add(1)
					}
				})
				done <- struct{}{}
			}()
		}
		deadline := time.Now().Add(30 * time.Second)
		for held() < vus {
			if time.Now().After(deadline) {
				b.Fatalf("the server holds %d requests of %d after 30 s", held(), vus)
			}
			time.Sleep(20 * time.Millisecond)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		rss1 := rss(b)
		cancel()
		for range vus {
			<-done
		}
		if n := interrupted.Load(); n != vus {
			b.Errorf("%d of %d calls ended as interrupted when the run ended", n, vus)
		}
		c.Close()
		inUse := func(m *runtime.MemStats) float64 { return float64(m.HeapInuse + m.StackInuse) }
		b.ReportMetric((inUse(&after)-inUse(&before))/vus, "heap+stack-B/VU")
		b.ReportMetric(float64(rss1-rss0)/vus, "rss-B/VU")
	}
}

// rss returns the process's resident set size in bytes, from /proc.
func rss(b *testing.B) int64 {
	raw, err := os.ReadFile("/proc/self/status")
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	b.Fatal("no VmRSS in /proc/self/status")
	return 0
}
