package http

import (
	"context"
	"io"
	nethttp "net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/hload/hload/protocols"
)

// BenchmarkDo measures one keep-alive GET against a loopback server with a
// 60-byte body, the reference case of docs/performance.md. The server runs in the
// same process, so ns/op includes its work too; allocs/op is the client's
// plus the server's. It stays in-process, the reference case's own path:
// cmd/hload's BenchmarkIsolatedHTTP measures the isolated one.
func BenchmarkDo(b *testing.B) {
	body := []byte("hload benchmark body: sixty bytes of payload, no more, ok!!\n")
	if len(body) != 60 {
		b.Fatalf("body has %d bytes", len(body))
	}
	srv := httptest.NewServer(nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
		w.Write(body)
	}))
	defer srv.Close()
	c := open(b, New(), srv.URL, nil)
	r := req(map[string]cty.Value{"path": cty.StringVal("/hello")})
	ctx := context.Background()
	check := func(s protocols.Sample) {
		if s.Metric == protocols.MetricRequest && (s.Error != "" || s.Status != 200) {
			b.Errorf("sample = %+v", s)
		}
	}

	b.Run("sequential", func(b *testing.B) {
		b.ReportAllocs()
		call := protocols.Call{VU: 1, Request: r}
		c.Do(ctx, call, check) // connect outside the timing
		b.ResetTimer()
		for b.Loop() {
			c.Do(ctx, call, check)
		}
	})
	// A request a capture reads a header of: the engine builds the header
	// map for it alone, so this is what a capture of a header adds.
	b.Run("sequential-keep-headers", func(b *testing.B) {
		b.ReportAllocs()
		call := protocols.Call{VU: 2, Request: r, KeepHeaders: true}
		read := func(s protocols.Sample) {
			if s.Metric == protocols.MetricRequest && len(s.Headers["Content-Length"]) != 1 {
				b.Errorf("headers = %v", s.Headers)
			}
		}
		c.Do(ctx, call, read)
		b.ResetTimer()
		for b.Loop() {
			c.Do(ctx, call, read)
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		var ids atomic.Uint64
		ids.Store(1000)
		b.RunParallel(func(pb *testing.PB) {
			call := protocols.Call{VU: ids.Add(1), Request: r}
			for pb.Next() {
				c.Do(ctx, call, check)
			}
		})
	})
}

// BenchmarkBareTransport is the floor BenchmarkDo is compared with: a bare
// nethttp.Transport loop against the same server, with no timing, trace,
// timeout or byte counting.
func BenchmarkBareTransport(b *testing.B) {
	body := []byte("hload benchmark body: sixty bytes of payload, no more, ok!!\n")
	srv := httptest.NewServer(nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
		w.Write(body)
	}))
	defer srv.Close()
	tr := &nethttp.Transport{DisableCompression: true, MaxConnsPerHost: 1}
	defer tr.CloseIdleConnections()
	r, err := nethttp.NewRequest("GET", srv.URL+"/hello", nil)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		resp, err := tr.RoundTrip(r)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}
