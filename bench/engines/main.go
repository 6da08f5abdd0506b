// Command engines measures the HTTP/1.1 clients hload could send with, on
// the same keep-alive GET in one run: hload's own engine (through its
// http protocol, as a VU calls it), fasthttp's HostClient and net/http's
// Transport. It is the measurement behind the engine's choice in
// docs/http.md, kept runnable; it is its own module so that fasthttp never
// enters hload's.
//
//	cd bench/engines && go run . -duration 3s -rounds 3
//
// The server (net/http, a 60-byte body) runs in a child process pinned to
// the last CPU, the clients in this process pinned to the first one. Each
// client sends from -conns goroutines, one connection each, for
// -duration; the rounds interleave the clients. It prints each client's
// requests/s and requests per CPU-second of this process, medians over the
// rounds, and the server's own count against the clients'.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	nethttp "net/http"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/valyala/fasthttp"
	"github.com/zclconf/go-cty/cty"
	"golang.org/x/sys/unix"

	"github.com/hload/hload/protocols"
	hhttp "github.com/hload/hload/protocols/http"
)

var body = []byte("hload benchmark body: sixty bytes of payload, no more, ok!!\n")

func main() {
	serve := flag.Bool("serve", false, "be the server (internal)")
	duration := flag.Duration("duration", 3*time.Second, "how long each client sends per round")
	rounds := flag.Int("rounds", 3, "rounds; the clients take turns in each")
	conns := flag.Int("conns", 1, "connections (and goroutines) per client")
	flag.Parse()
	if *serve {
		runServer()
		return
	}
	if err := run(*duration, *rounds, *conns); err != nil {
		fmt.Fprintln(os.Stderr, "engines:", err)
		os.Exit(1)
	}
}

// runServer answers every request with body and, on /count, the number
// of other requests it answered.
func runServer() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	var n atomic.Int64
	fmt.Println(ln.Addr().String())
	nethttp.Serve(ln, nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
		if r.URL.Path == "/count" {
			io.WriteString(w, strconv.FormatInt(n.Load(), 10))
			return
		}
		n.Add(1)
		w.Write(body)
	}))
}

type client struct {
	name string
	// start returns one sender per connection; a sender sends one GET
	// and reports whether it succeeded.
	start func(base string, conns int) (senders []func() bool, stop func())
}

func run(duration time.Duration, rounds, conns int) error {
	base, stop, err := startPinnedServer()
	if err != nil {
		return err
	}
	defer stop()

	clients := []client{engine(), fastHTTP(), netHTTP()}
	rps := map[string][]float64{}
	perCPU := map[string][]float64{}
	var sent int64
	for round := 1; round <= rounds; round++ {
		for _, c := range clients {
			ok, failed, cpu, wall := drive(c, base, conns, duration)
			if failed > 0 {
				return fmt.Errorf("%s: %d requests failed", c.name, failed)
			}
			sent += ok + failed
			r, p := float64(ok)/wall.Seconds(), float64(ok)/cpu.Seconds()
			rps[c.name] = append(rps[c.name], r)
			perCPU[c.name] = append(perCPU[c.name], p)
			fmt.Printf("round %d  %-9s %8.0f requests/s  %8.0f requests/CPU-s\n", round, c.name, r, p)
		}
	}
	served, err := serverCount(base)
	if err != nil {
		return err
	}
	if served != sent {
		return fmt.Errorf("the clients sent %d requests, the server answered %d", sent, served)
	}
	fmt.Printf("\nmedians of %d rounds of %v, %d connection(s) per client; the server answered %d requests, as many as the clients counted\n", rounds, duration, conns, served)
	ref := median(perCPU["engine"])
	for _, c := range clients {
		fmt.Printf("%-9s %8.0f requests/s  %8.0f requests/CPU-s  (%.2fx the engine's per CPU-second)\n",
			c.name, median(rps[c.name]), median(perCPU[c.name]), median(perCPU[c.name])/ref)
	}
	return nil
}

// startPinnedServer starts this binary with -serve, pins it to the last
// CPU and this process to the first, so the clients and the server do
// not share a core. It returns the server's base URL.
func startPinnedServer() (base string, stop func(), err error) {
	first, last, err := cpus()
	if err != nil {
		return "", nil, err
	}
	srv := exec.Command(os.Args[0], "-serve")
	srv.Stderr = os.Stderr
	out, err := srv.StdoutPipe()
	if err != nil {
		return "", nil, err
	}
	if err := srv.Start(); err != nil {
		return "", nil, err
	}
	stop = func() { srv.Process.Kill() }
	var set unix.CPUSet
	set.Set(last)
	if err := unix.SchedSetaffinity(srv.Process.Pid, &set); err != nil {
		stop()
		return "", nil, err
	}
	set.Zero()
	set.Set(first)
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		stop()
		return "", nil, err
	}
	addr := make([]byte, 64)
	n, err := out.Read(addr)
	if err != nil {
		stop()
		return "", nil, err
	}
	return "http://" + string(addr[:n-1]), stop, nil
}

// drive sends GETs from c's senders, one goroutine per connection, for
// duration, and returns the calls that succeeded and failed, the process's
// CPU time and the wall time they took.
func drive(c client, base string, conns int, duration time.Duration) (ok, failed int64, cpu, wall time.Duration) {
	senders, stop := c.start(base, conns)
	var okN, failedN atomic.Int64
	var wg sync.WaitGroup
	cpu0, t0 := processCPU(), time.Now()
	deadline := t0.Add(duration)
	for _, send := range senders {
		wg.Go(func() {
			for time.Now().Before(deadline) {
				if send() {
					okN.Add(1)
				} else {
					failedN.Add(1)
				}
			}
		})
	}
	wg.Wait()
	cpu, wall = processCPU()-cpu0, time.Since(t0)
	stop()
	return okN.Load(), failedN.Load(), cpu, wall
}

func engine() client {
	return client{name: "engine", start: func(base string, conns int) ([]func() bool, func()) {
		target := cty.ObjectVal(map[string]cty.Value{"base_url": cty.StringVal(base)})
		c, err := hhttp.New().Open(context.Background(), target)
		if err != nil {
			panic(err)
		}
		req := cty.ObjectVal(map[string]cty.Value{"path": cty.StringVal("/hello")})
		prepared, err := c.(protocols.Preparer).Prepare(req)
		if err != nil {
			panic(err)
		}
		ctx := context.Background()
		var senders []func() bool
		for vu := range conns {
			call := protocols.Call{VU: uint64(vu + 1), Request: req, Prepared: prepared}
			var good bool
			emit := func(s protocols.Sample) {
				if s.Metric == protocols.MetricRequest {
					good = s.Error == protocols.ErrNone && s.Status == 200
				}
			}
			senders = append(senders, func() bool { c.Do(ctx, call, emit); return good })
		}
		return senders, func() { c.Close() }
	}}
}

func fastHTTP() client {
	return client{name: "fasthttp", start: func(base string, conns int) ([]func() bool, func()) {
		hc := &fasthttp.HostClient{Addr: base[len("http://"):], MaxConns: conns, MaxIdemponentCallAttempts: 1}
		var senders []func() bool
		for range conns {
			req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
			req.SetRequestURI(base + "/hello")
			senders = append(senders, func() bool {
				err := hc.Do(req, resp)
				return err == nil && resp.StatusCode() == 200 && len(resp.Body()) == len(body)
			})
		}
		return senders, func() { hc.CloseIdleConnections() }
	}}
}

func netHTTP() client {
	return client{name: "net/http", start: func(base string, conns int) ([]func() bool, func()) {
		tr := &nethttp.Transport{DisableCompression: true, MaxConnsPerHost: conns, MaxIdleConnsPerHost: conns}
		var senders []func() bool
		for range conns {
			req, _ := nethttp.NewRequest("GET", base+"/hello", nil)
			buf := make([]byte, 512)
			senders = append(senders, func() bool {
				resp, err := tr.RoundTrip(req)
				if err != nil {
					return false
				}
				n, _ := io.ReadFull(resp.Body, buf[:len(body)])
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				return resp.StatusCode == 200 && n == len(body)
			})
		}
		return senders, tr.CloseIdleConnections
	}}
}

func serverCount(base string) (int64, error) {
	resp, err := nethttp.Get(base + "/count")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(string(b), 10, 64)
}

// cpus returns the first and last CPU this process may run on; they must
// differ, so that the server and the clients do not share one.
func cpus() (first, last int, err error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return 0, 0, err
	}
	first, last = -1, -1
	for i := range 1024 {
		if set.IsSet(i) {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	if first == last {
		return 0, 0, fmt.Errorf("one CPU only (%d): the server and the clients need one each", first)
	}
	return first, last, nil
}

func processCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}
