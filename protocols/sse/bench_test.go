package sse

import (
	"bufio"
	"context"
	"fmt"
	"net"
	nethttp "net/http"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zclconf/go-cty/cty"

	"github.com/hload/hload/plugins/protocoltest"
	"github.com/hload/hload/protocols"
)

// idleServerEnv makes the test binary serve idle streams instead of
// running tests, so that the benchmark's server runs in its own process
// and its memory is not counted as hload's.
const idleServerEnv = "HLOAD_SSE_IDLE_SERVER"

func TestMain(m *testing.M) {
	if os.Getenv(idleServerEnv) == "1" {
		serveIdle()
		return
	}
	os.Exit(m.Run())
}

// serveIdle serves streams that send one event and then stay idle, prints
// its address on stdout and exits when stdin closes. GET /count answers
// the number of streams open that were sent their event.
func serveIdle() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(ln.Addr().String())
	go func() {
		bufio.NewReader(os.Stdin).ReadString('\n') // EOF when the parent is done
		os.Exit(0)
	}()
	var open atomic.Int64
	nethttp.Serve(ln, nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
		if r.URL.Path == "/count" {
			fmt.Fprint(w, open.Load())
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		fmt.Fprint(w, "id: 1\ndata: hello\n\n")
		nethttp.NewResponseController(w).Flush()
		open.Add(1)
		<-r.Context().Done()
		open.Add(-1)
	}))
}

// freshEnv marks the child process a memory benchmark measures in.
const freshEnv = "HLOAD_SSE_FRESH_PROCESS"

// inFreshProcess runs the benchmark name in a child process of its own and
// reports the child's figures as its own; it returns false in the child,
// which measures. The growth of a process's memory per stream counts what
// the streams allocate, and a process that held streams before keeps
// some of it for reuse (the runtime keeps the goroutines' descriptors and
// the connections' poll descriptors): measured there, a stream would look
// cheaper than it is.
func inFreshProcess(b *testing.B, name string) bool {
	if os.Getenv(freshEnv) == "1" {
		return false
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$", "-test.bench=^"+name+"$", "-test.benchtime=1x")
	cmd.Env = append(os.Environ(), freshEnv+"=1")
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		b.Fatalf("%s in a child process: %v\n%s", name, err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		fields := strings.Fields(line)
		if len(fields) < 4 || !strings.HasPrefix(fields[0], name+"-") && fields[0] != name {
			continue
		}
		// name, iterations, time, ns/op, then value and unit pairs.
		for i := 4; i+1 < len(fields); i += 2 {
			v, err := strconv.ParseFloat(fields[i], 64)
			if err != nil {
				b.Fatalf("%s's figure %q: %v", name, fields[i], err)
			}
			b.ReportMetric(v, fields[i+1])
		}
		return true
	}
	b.Fatalf("%s in a child process reported nothing:\n%s", name, out)
	return true
}

// startIdleServer runs serveIdle in a child process and returns its URL.
func startIdleServer(b *testing.B) string {
	return "http://" + protocoltest.StartChild(b, idleServerEnv)
}

// rss returns this process's resident set size in bytes.
func rss(b testing.TB) int64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		b.Skip("no /proc/self/status: ", err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			return kb << 10
		}
	}
	b.Fatal("no VmRSS in /proc/self/status")
	return 0
}

// settledRSS returns the RSS once garbage is collected and returned to the
// OS, so that only what the streams hold is measured.
func settledRSS(b testing.TB) int64 {
	runtime.GC()
	debug.FreeOSMemory()
	return rss(b)
}

// BenchmarkIdleStreams holds 10,000 idle SSE streams, each by its own
// goroutine as a VU would, against a server in another process, and
// reports the growth of the RSS per stream of a process that held no
// stream before (see inFreshProcess): the protocol's cost, with a
// goroutine shallower than a VU's (BenchmarkIdleStreamsRun holds the
// streams by the core's VUs). Run it with -benchtime=1x: one iteration
// opens all the streams. It stays in the package: it reads the client's
// unexported count.
func BenchmarkIdleStreams(b *testing.B) {
	const streams = 10_000
	if inFreshProcess(b, "BenchmarkIdleStreams") {
		return
	}
	url := startIdleServer(b)
	c, err := New().Open(context.Background(), cty.ObjectVal(map[string]cty.Value{
		"base_url": cty.StringVal(url),
		"timeout":  cty.StringVal("60s"),
	}))
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	client := c.(*Client)
	req := request(map[string]cty.Value{"path": cty.StringVal("/")})

	for b.Loop() {
		ending := make(chan struct{})
		ctx := protocols.WithEnding(context.Background(), ending)
		var events, failed atomic.Int64
		emit := func(s protocols.Sample) {
			switch {
			case s.Metric == MetricEvents:
				events.Add(1)
			case s.Metric == protocols.MetricRequest && s.Error != protocols.ErrNone:
				failed.Add(1)
			}
		}
		base := settledRSS(b)
		var before runtime.MemStats
		runtime.ReadMemStats(&before)

		var wg sync.WaitGroup
		for i := range streams {
			wg.Go(func() { client.Do(ctx, protocols.Call{VU: uint64(i + 1), Request: req}, emit) })
		}
		deadline := time.Now().Add(2 * time.Minute)
		for client.open.Load() < streams || events.Load() < streams {
			if failed.Load() > 0 || time.Now().After(deadline) {
				close(ending)
				wg.Wait()
				b.Fatalf("%d streams open, %d events, %d failed", client.open.Load(), events.Load(), failed.Load())
			}
			time.Sleep(10 * time.Millisecond)
		}
		raw := rss(b)
		held := settledRSS(b)
		var after runtime.MemStats
		runtime.ReadMemStats(&after)

		b.ReportMetric(float64(held-base)/streams, "rss-B/stream")
		b.ReportMetric(float64(raw-base)/streams, "rss-unsettled-B/stream")
		b.ReportMetric(float64(after.HeapInuse-before.HeapInuse)/streams, "heap-B/stream")
		b.ReportMetric(float64(after.StackInuse-before.StackInuse)/streams, "stack-B/stream")

		close(ending)
		wg.Wait()
		if n := client.open.Load(); n != 0 {
			b.Fatalf("%d streams still open after the end", n)
		}
	}
}
