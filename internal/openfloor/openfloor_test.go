package openfloor

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// countingServer answers body to every request and counts them.
func countingServer(t *testing.T, h http.HandlerFunc) (addr string, count *atomic.Int64) {
	count = new(atomic.Int64)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		count.Add(1)
		h(w, r)
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://"), count
}

func dial(t *testing.T, addr string, n int) []*Conn {
	var conns []*Conn
	for range n {
		c, err := Dial(addr, "/hello")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		conns = append(conns, c)
	}
	return conns
}

func hello(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/hello" {
		http.NotFound(w, r)
		return
	}
	w.Write([]byte("Hello, World!"))
}

// TestClosedAndOpenCountWhatTheServerAnswered: the figures the bench
// harness compares hload with are the server's: every GET the floor
// counts, the server counted, and an open run's planned starts are all
// either sent or dropped.
func TestClosedAndOpenCountWhatTheServerAnswered(t *testing.T) {
	addr, count := countingServer(t, hello)
	conns := dial(t, addr, 4)
	n, err := Closed(conns, 200*time.Millisecond)
	if err != nil || n == 0 || n != count.Load() {
		t.Fatalf("closed: %d answered, %v; the server counted %d", n, err, count.Load())
	}

	count.Store(0)
	res := Open(conns, 1000, 300*time.Millisecond)
	sent := int64(len(res.Late))
	if res.Err != nil || res.Failed != 0 {
		t.Fatalf("open: %d failed: %v", res.Failed, res.Err)
	}
	if sent != count.Load() || sent+res.Dropped != 300 {
		t.Errorf("open: sent %d, dropped %d, the server counted %d; want sent = counted, sent + dropped = 300",
			sent, res.Dropped, count.Load())
	}
	if p := P99(res.Late); p <= 0 || p > time.Second {
		t.Errorf("lateness p99 %s", p)
	}
}

// TestGetRefusesWhatItCannotFrame: an error status, or an answer whose
// length the floor cannot know, is an error, not a request counted.
func TestGetRefusesWhatItCannotFrame(t *testing.T) {
	for name, h := range map[string]http.HandlerFunc{
		"404": func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) },
		"chunked": func(w http.ResponseWriter, r *http.Request) {
			w.Write([]byte("part"))
			w.(http.Flusher).Flush()
			w.Write([]byte("more"))
		},
	} {
		t.Run(name, func(t *testing.T) {
			addr, _ := countingServer(t, h)
			if err := dial(t, addr, 1)[0].Get(); err == nil {
				t.Error("Get succeeded")
			}
		})
	}
}

func TestAnswerLength(t *testing.T) {
	for in, want := range map[string]int{
		"HTTP/1.1 200 OK\r\nContent-Length: 13\r\n\r\nHello":         39 + 13,
		"HTTP/1.1 200 OK\r\nDate: x\r\ncontent-length:2\r\n\r\nok":   46 + 2,
		"HTTP/1.1 200 OK\r\nContent-Length: 13\r\n":                  -1,
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4\r\n": -2,
	} {
		if got := answerLength([]byte(in)); got != want {
			t.Errorf("answerLength(%q) = %d, want %d", in, got, want)
		}
	}
}
