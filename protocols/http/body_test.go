package http

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	nethttp "net/http"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zclconf/go-cty/cty"

	"github.com/hload/hload/plugins/protocoltest"
	"github.com/hload/hload/protocols"
)

// filler is what a streamed test body is made of: it holds none of the
// substrings the tests look for.
var filler = bytes.Repeat([]byte("0123456789abcdef"), 4096) // 64 KiB

// streamBody writes a body of size bytes of filler that ends with tail.
func streamBody(w io.Writer, size int64, tail string) {
	rest := size - int64(len(tail))
	for rest > 0 {
		n := min(rest, int64(len(filler)))
		if _, err := w.Write(filler[:n]); err != nil {
			return
		}
		rest -= n
	}
	io.WriteString(w, tail)
}

// bodyServer serves, at /stream?size=N&tail=T, a body of N bytes that
// ends with T, with a Content-Length; at /chunks?parts=a|b|c, the parts
// as chunks, each flushed and a moment apart, so that each comes in a
// read of its own; at /gzip?size=N&tail=T, the stream gzipped.
func bodyServer(t *testing.T, h2 bool) *countingServer {
	return newCountingServer(t, h2, h2, func(w nethttp.ResponseWriter, r *nethttp.Request) {
		q := r.URL.Query()
		size, _ := strconv.ParseInt(q.Get("size"), 10, 64)
		switch r.URL.Path {
		case "/stream":
			w.Header().Set("Content-Length", strconv.FormatInt(size, 10))
			streamBody(w, size, q.Get("tail"))
		case "/chunks":
			for _, part := range strings.Split(q.Get("parts"), "|") {
				io.WriteString(w, part)
				w.(nethttp.Flusher).Flush()
				time.Sleep(5 * time.Millisecond)
			}
		case "/gzip":
			w.Header().Set("Content-Encoding", "gzip")
			gz := gzip.NewWriter(w)
			streamBody(gz, size, q.Get("tail"))
			gz.Close()
		}
	})
}

// scanCall makes a call that looks for needles and keeps the body up to
// maxBody when keep is set, and returns its request sample with copies of
// what is valid only during emit.
func scanCall(t *testing.T, c protocols.Client, path string, needles []string, keep bool, maxBody int64) protocols.Sample {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var got protocols.Sample
	n := 0
	c.Do(ctx, protocols.Call{VU: 1, Request: req(map[string]cty.Value{"path": cty.StringVal(path)}),
		KeepBody: keep, MaxBody: maxBody, BodyContains: needles}, func(s protocols.Sample) {
		if s.Metric == protocols.MetricRequest {
			got = s
			got.Body = bytes.Clone(s.Body)
			got.BodyFound = append([]bool(nil), s.BodyFound...)
			n++
		}
	})
	if n != 1 {
		t.Fatalf("%d request samples", n)
	}
	return got
}

// TestBodyChecksStream checks that the substrings a call's checks look
// for are found as the body streams, without keeping it, on both paths
// and over HTTP/1.1 (the engine) and HTTP/2 (net/http): split across
// reads, at the very end of a 200 MB body, absent, several at once, and in
// a gzip body, which checks read decoded.
func TestBodyChecksStream(t *testing.T) {
	const big = 200 << 20
	cases := []struct {
		name    string
		path    string
		needles []string
		want    []bool
	}{
		{"split across reads", "/chunks?parts=" + `{"status":"o|k"}`, []string{`"status":"ok"`}, []bool{true}},
		{"split over three reads", "/chunks?parts=xx sta|t|us xx", []string{"status"}, []bool{true}},
		{"at the end of 200 MB", fmt.Sprintf("/stream?size=%d&tail=THE+END", big), []string{"THE END"}, []bool{true}},
		{"absent from 200 MB", fmt.Sprintf("/stream?size=%d&tail=", big), []string{"THE END"}, []bool{false}},
		{"several", "/chunks?parts=alpha be|ta gam|ma", []string{"gamma", "delta", "beta", "alpha beta gamma"}, []bool{true, false, true, true}},
		{"gzip, at the end of 20 MB", fmt.Sprintf("/gzip?size=%d&tail=THE+END", 20<<20), []string{"THE END", "nowhere"}, []bool{true, false}},
	}
	protocoltest.Run(t, New(), func(t *testing.T, _ protocoltest.Path, p protocols.Protocol) {
		for _, h2 := range []bool{false, true} {
			srv := bodyServer(t, h2)
			c := open(t, p, srv.URL, map[string]cty.Value{"insecure_skip_verify": cty.True,
				// Room for 200 MB on a slow machine: a timeout is not what this tests.
				"timeout": cty.StringVal("2m")})
			for _, tc := range cases {
				t.Run(fmt.Sprintf("HTTP/2 %v, %s", h2, tc.name), func(t *testing.T) {
					if testing.Short() && strings.Contains(tc.name, "200 MB") {
						// Under the race detector (scripts/test.sh's -short
						// pass) 200 MB over HTTP/2 took longer than the
						// target's 5 s timeout in a CI run, and sync.Pool,
						// which drops items there, made net/http2 allocate
						// 121 MB; the full pass runs these.
						t.Skip("200 MB bodies: scripts/test.sh runs them in its full pass")
					}
					var before, after runtime.MemStats
					runtime.ReadMemStats(&before)
					s := scanCall(t, c, tc.path, tc.needles, false, 0)
					runtime.ReadMemStats(&after)
					if s.Error != "" || s.Status != 200 || fmt.Sprint(s.BodyFound) != fmt.Sprint(tc.want) || s.Body != nil {
						t.Errorf("%+v: found %v, kept %d bytes; want %v and nothing kept", s, s.BodyFound, len(s.Body), tc.want)
					}
					// A body is read through buffers, not kept: far less
					// is allocated than the body's size.
					if grown := after.TotalAlloc - before.TotalAlloc; strings.Contains(tc.name, "200 MB") && grown > 32<<20 {
						t.Errorf("reading a 200 MB body allocated %d bytes", grown)
					}
				})
			}
		}
	})
}

// TestBodyKeptUpToMaxBody checks that a body a capture reads is kept up to
// the call's MaxBody, and that the sample says how long the body was:
// the core then knows the capture read only part of it.
func TestBodyKeptUpToMaxBody(t *testing.T) {
	protocoltest.Run(t, New(), func(t *testing.T, _ protocoltest.Path, p protocols.Protocol) {
		for _, h2 := range []bool{false, true} {
			srv := bodyServer(t, h2)
			c := open(t, p, srv.URL, map[string]cty.Value{"insecure_skip_verify": cty.True})
			cases := []struct {
				name     string
				path     string
				maxBody  int64
				size     int64
				keptSize int
			}{
				{"shorter than max_body", "/stream?size=1000&tail=END", 1 << 20, 1000, 1000},
				{"as long as max_body", "/stream?size=4096&tail=END", 4096, 4096, 4096},
				{"longer than max_body", fmt.Sprintf("/stream?size=%d&tail=END", 5<<20), 1 << 20, 5 << 20, 1 << 20},
				{"gzip, longer than max_body", "/gzip?size=100000&tail=END", 1000, 100000, 1000},
			}
			for _, tc := range cases {
				t.Run(fmt.Sprintf("HTTP/2 %v, %s", h2, tc.name), func(t *testing.T) {
					s := scanCall(t, c, tc.path, []string{"END"}, true, tc.maxBody)
					var whole bytes.Buffer
					streamBody(&whole, tc.size, "END")
					if s.Error != "" || s.BodySize != tc.size || !bytes.Equal(s.Body, whole.Bytes()[:tc.keptSize]) {
						t.Errorf("%s: kept %d bytes of %d, want the first %d of %d", s.Message, len(s.Body), s.BodySize, tc.keptSize, tc.size)
					}
					if fmt.Sprint(s.BodyFound) != "[true]" {
						t.Errorf("found %v, want the end found past max_body", s.BodyFound)
					}
				})
			}
		}
	})
}

// TestBodyCutShortFindsNothing checks that a call whose body the server
// cut short fails, and reports no substring found, even one that came
// before the cut: its checks see no body, as its captures do.
func TestBodyCutShortFindsNothing(t *testing.T) {
	protocoltest.Run(t, New(), func(t *testing.T, _ protocoltest.Path, p protocols.Protocol) {
		for _, h2 := range []bool{false, true} {
			srv := newCountingServer(t, h2, h2, func(w nethttp.ResponseWriter, r *nethttp.Request) {
				w.Header().Set("Content-Length", "100000")
				io.WriteString(w, "THE END, early")
				w.(nethttp.Flusher).Flush()
				panic(nethttp.ErrAbortHandler) // the connection, or the stream, is cut
			})
			c := open(t, p, srv.URL, map[string]cty.Value{"insecure_skip_verify": cty.True})
			t.Run(fmt.Sprintf("HTTP/2 %v", h2), func(t *testing.T) {
				s := scanCall(t, c, "/", []string{"THE END"}, true, 0)
				if s.Error == "" || s.BodyFound != nil && len(s.BodyFound) > 0 || len(s.Body) > 0 {
					t.Errorf("%+v: found %v, kept %q; want a failed call that found and kept nothing", s, s.BodyFound, s.Body)
				}
			})
		}
	})
}
