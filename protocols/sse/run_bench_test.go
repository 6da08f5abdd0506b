package sse_test

import (
	"context"
	"fmt"
	"io"
	nethttp "net/http"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/hload/hload/config"
	"github.com/hload/hload/core"
	"github.com/hload/hload/plugins/protocoltest"
	"github.com/hload/hload/protocols"
	"github.com/hload/hload/protocols/delivery"
	"github.com/hload/hload/protocols/http"
	"github.com/hload/hload/protocols/sse"
)

// idleRun holds n idle streams, one per VU of a constant-vus scenario,
// as hload apply runs it.
const idleRun = `
target "s" {
  protocol = "sse"
  base_url = "http://%s"
  timeout  = "60s"
}

scenario "idle" {
  executor = "constant-vus"
  vus      = %d
  duration = "10m"
  target   = "s"

  request "subscribe" {
    path = "/"
  }
}
`

// BenchmarkIdleStreamsRun is BenchmarkIdleStreams through a run: each
// stream is held by a VU of the core, whose goroutine, stack and state
// are part of what a stream costs as hload apply runs it. It reports the
// growth of the RSS per stream between a run of 1,000 streams and one of
// 10,000, so that the runs' fixed costs cancel out, in a process that held
// no stream before (see inFreshProcess); the server runs in another
// process and counts the streams it holds. Run it with -benchtime=1x.
func BenchmarkIdleStreamsRun(b *testing.B) {
	const small, large = 1_000, 10_000
	if sse.InFreshProcess(b, "BenchmarkIdleStreamsRun") {
		return
	}
	addr := protocoltest.StartChild(b, sse.IdleServerEnv)
	for b.Loop() {
		s := holdIdle(b, addr, small)
		l := holdIdle(b, addr, large)
		per := func(x, y uint64) float64 { return (float64(y) - float64(x)) / (large - small) }
		b.ReportMetric(float64(l.rss-s.rss)/(large-small), "rss-B/stream")
		b.ReportMetric(per(s.mem.HeapInuse, l.mem.HeapInuse), "heap-B/stream")
		b.ReportMetric(per(s.mem.StackInuse, l.mem.StackInuse), "stack-B/stream")
	}
}

// held is what the process holds while a run holds its streams.
type held struct {
	rss int64
	mem runtime.MemStats
}

// holdIdle runs n idle streams and returns what the process holds, once
// settled, when the server holds them all; the run is over when it
// returns.
func holdIdle(b testing.TB, addr string, n int) held {
	return holdIdleBy(b, addr, n, sse.New())
}

// holdIdleBy is holdIdle with the streams held by proto, an sse protocol.
func holdIdleBy(b testing.TB, addr string, n int, proto protocols.Protocol) held {
	reg := protocols.NewRegistry(http.New(), proto)
	test, diags := config.Parse(map[string][]byte{"test.hcl": fmt.Appendf(nil, idleRun, addr, n)}, b.TempDir(), config.Options{Protocols: reg})
	if diags.HasErrors() {
		b.Fatalf("config: %s", diags.Error())
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := core.Run(delivery.WithLedger(ctx, delivery.NewLedger()), test, core.Options{Protocols: reg})
		done <- err
	}()
	defer func() {
		cancel()
		<-done
	}()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if open := serverCount(b, addr); open >= n {
			break
		} else if time.Now().After(deadline) {
			b.Fatalf("the server holds %d streams after 2 minutes, want %d", open, n)
		}
		select {
		case err := <-done:
			b.Fatalf("the run ended early: %v", err)
		case <-time.After(20 * time.Millisecond):
		}
	}
	var h held
	h.rss = sse.SettledRSS(b)
	runtime.ReadMemStats(&h.mem)
	return h
}

// serverCount asks the idle server how many streams it holds.
func serverCount(b testing.TB, addr string) int {
	resp, err := nethttp.Get("http://" + addr + "/count")
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		b.Fatal(err)
	}
	n, err := strconv.Atoi(string(body))
	if err != nil {
		b.Fatalf("the server's count %q: %v", body, err)
	}
	return n
}
