package dashboard

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/hload/hload/metrics"
)

// listen starts a dashboard on a free loopback port, shut down at the
// test's end.
func listen(t *testing.T, token string) *Sink {
	t.Helper()
	s, err := Listen(Options{Addr: "127.0.0.1:0", Token: token})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { shutdown(s) })
	if err := s.Start(context.Background(), metrics.RunInfo{Started: time.Now()}); err != nil {
		t.Fatal(err)
	}
	return s
}

// snapshot is interval i of a run, with a warning of size bytes to make
// its event as large as the test needs.
func snapshot(start time.Time, i, size int) metrics.Snapshot {
	end := start.Add(time.Duration(i+1) * time.Second)
	return metrics.Snapshot{Start: end.Add(-time.Second), End: end, RateStart: end.Add(-time.Second),
		Elapsed: time.Duration(i+1) * time.Second, Warnings: []string{fmt.Sprintf("%d %s", i, strings.Repeat("x", size))}}
}

// TestStalledViewerIsDropped: a viewer that reads nothing while 40 MB of
// events go out is dropped, and meanwhile every Write returns at once and
// a viewer that reads gets every event, in order. The events are big so
// that the socket buffers between the server and the stalled viewer fill
// within the test.
func TestStalledViewerIsDropped(t *testing.T) {
	s := listen(t, "")
	addr := strings.TrimSuffix(strings.TrimPrefix(s.URL(), "http://"), "/")

	// The stalled viewer: it asks for the stream and never reads.
	stalled, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer stalled.Close()
	fmt.Fprintf(stalled, "GET /events HTTP/1.1\r\nHost: %s\r\n\r\n", addr)

	resp, err := http.Get(s.URL() + "events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	const events, size = 80, 512 << 10
	got := make(chan int, events)
	go func() {
		defer close(got)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 4<<20), 4<<20)
		for sc.Scan() {
			if id, ok := strings.CutPrefix(sc.Text(), "id: "); ok {
				var n int
				fmt.Sscan(id, &n)
				got <- n
			}
		}
	}()

	// Writes return at once: they only queue. Each is timed against the
	// first, which no viewer can have slowed yet.
	start := time.Now()
	var firstWrite, slowest time.Duration
	for i := range events {
		t0 := time.Now()
		if err := s.Write(snapshot(start, i, size)); err != nil {
			t.Fatal(err)
		}
		d := time.Since(t0)
		if i == 0 {
			firstWrite = d
		}
		slowest = max(slowest, d)
	}
	t.Logf("Write: first %v, slowest %v", firstWrite, slowest)
	if slowest > 20*firstWrite+100*time.Millisecond {
		t.Errorf("a Write took %v, the first %v: Write waited on a viewer", slowest, firstWrite)
	}

	// The reading viewer gets every event, in order, though one viewer
	// reads nothing: it is held at most viewerTimeout, once.
	for want := range events {
		select {
		case id, ok := <-got:
			if !ok || id != want {
				t.Fatalf("the reading viewer got event %d (stream open: %v), want %d", id, ok, want)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("the reading viewer got no event %d 30 s after the writes: the stalled viewer holds the stream", want)
		}
	}

	// The stalled viewer was dropped: the server counts one viewer, and
	// the stalled one's connection ends once it reads what the buffers
	// held.
	for deadline := time.Now().Add(30 * time.Second); s.Viewers() != 1; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d viewers 30 s after the writes, want the reading one only", s.Viewers())
		}
	}
	stalled.SetReadDeadline(time.Now().Add(30 * time.Second))
	n, err := io.Copy(io.Discard, stalled)
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatalf("the stalled viewer's connection is still open after %d bytes", n)
	}
	if n >= events*size {
		t.Fatalf("the stalled viewer got %d bytes, all of the %d events: it was not dropped", n, events)
	}
	t.Logf("the stalled viewer got %d bytes before it was dropped, of %d MB", n, events*size>>20)
}

// TestCheckAddr: without a token only loopback addresses pass.
func TestCheckAddr(t *testing.T) {
	for _, tc := range []struct {
		addr, token string
		ok          bool
	}{
		{"127.0.0.1:5665", "", true},
		{"localhost:0", "", true},
		{"[::1]:5665", "", true},
		{"127.0.0.2:0", "", true},
		{"0.0.0.0:5665", "", false},
		{":5665", "", false},
		{"10.0.0.1:5665", "", false},
		{"dashboard.example.com:5665", "", false},
		{"0.0.0.0:5665", "t", true},
		{"127.0.0.1", "", false},
		{"127.0.0.1:http", "", false},
		{"127.0.0.1:70000", "", false},
	} {
		if err := CheckAddr(tc.addr, tc.token); (err == nil) != tc.ok {
			t.Errorf("CheckAddr(%q, token %q): %v, want ok %v", tc.addr, tc.token, err, tc.ok)
		}
	}
}

// shutdown ends s within a few seconds, as cmd/hload does.
func shutdown(s *Sink) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s.Shutdown(ctx)
}

// TestShutdownRightAfterListen: a dashboard shut down before its fan-out
// goroutine first ran (a run refused at once, a benchmark's short body)
// still ends, and at once: the fan-out owns the queue it was started
// with, not the field Shutdown clears. On one processor nothing else runs
// between the two calls, which made the fan-out wait on a nil queue and
// Shutdown wait for it forever.
func TestShutdownRightAfterListen(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	for i := range 20 {
		s, err := Listen(Options{Addr: "127.0.0.1:0"})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		began := time.Now()
		err = s.Shutdown(ctx)
		cancel()
		if took := time.Since(began); err != nil || took > 5*time.Second {
			t.Fatalf("shutdown %d: %v after %v; want it to end before its deadline", i, err, took)
		}
	}
}
