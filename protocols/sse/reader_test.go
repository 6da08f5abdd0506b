package sse

import (
	"context"
	"errors"
	"fmt"
	"io"
	nethttp "net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zclconf/go-cty/cty"

	"github.com/hload/hload/plugins/protocoltest"
	"github.com/hload/hload/protocols"
	"github.com/hload/hload/protocols/http/h1"
)

// script is a connection that returns one piece per read, as TCP may cut
// a stream anywhere, then io.EOF. onRead, if set, runs before each read:
// what another stream does meanwhile.
type script struct {
	pieces []string
	onRead func()
}

func (s *script) Read(p []byte) (int, error) {
	if s.onRead != nil {
		s.onRead()
	}
	if len(s.pieces) == 0 {
		return 0, io.EOF
	}
	n := copy(p, s.pieces[0])
	if n < len(s.pieces[0]) {
		s.pieces[0] = s.pieces[0][n:]
	} else {
		s.pieces = s.pieces[1:]
	}
	return n, nil
}

// chunked frames body as a chunked HTTP response, one chunk per piece,
// with the response head, cut into reads of at most cut bytes (0: one
// read per chunk).
func chunked(pieces []string, cut int) *script {
	var wire []string
	wire = append(wire, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
	for _, p := range pieces {
		wire = append(wire, fmt.Sprintf("%x\r\n%s\r\n", len(p), p))
	}
	wire = append(wire, "0\r\n\r\n")
	if cut == 0 {
		return &script{pieces: wire}
	}
	all := strings.Join(wire, "")
	var s script
	for len(all) > cut {
		s.pieces = append(s.pieces, all[:cut])
		all = all[cut:]
	}
	s.pieces = append(s.pieces, all)
	return &s
}

// newTestReader reads the response src sends with pools of its own, or
// the ones given.
func newTestReader(t *testing.T, src io.Reader, reads *h1.Pool, frames *bufferPool, max int, canWait bool) *eventReader {
	t.Helper()
	rd := h1.NewReader(src, reads)
	var resp h1.Response
	if err := rd.ReadHead(&resp, "GET"); err != nil {
		t.Fatal(err)
	}
	return &eventReader{rd: rd, body: rd.Body(&resp), pool: frames, max: max, canWait: canWait}
}

// readAll returns every frame, copied, and the error that ended them; a
// wait is taken at once, as the bytes are there.
func readAll(e *eventReader) (frames []string, waits int, err error) {
	for {
		f, err := e.next()
		if err == errWait {
			waits++
			continue
		}
		if err != nil {
			return frames, waits, err
		}
		frames = append(frames, string(f))
	}
}

// TestFrames: the reader cuts the frames of a stream at its blank lines,
// whatever its line ends (LF, CR, CRLF, mixed) and however the bytes are
// cut into chunks and reads, down to one byte per read, where a CRLF, or
// the blank line's CR and its LF, come in two reads.
func TestFrames(t *testing.T) {
	long := strings.Repeat("x", 3*startBuffer+1) // longer than a frame buffer starts
	huge := strings.Repeat("y", 3*h1.InitialBuffer)
	cases := []struct {
		name   string
		stream string
		want   []string
	}{
		{"LF", "id: 1\ndata: a\n\ndata: b\n\n", []string{"id: 1\ndata: a", "data: b"}},
		{"CRLF", "id: 1\r\ndata: a\r\n\r\ndata: b\r\n\r\n", []string{"id: 1\r\ndata: a", "data: b"}},
		{"CR", "id: 1\rdata: a\r\rdata: b\r\r", []string{"id: 1\rdata: a", "data: b"}},
		{"CRLF then LF", "data: a\r\n\ndata: b\n\r\n", []string{"data: a", "data: b"}},
		{"CR then CRLF", "data: a\r\r\ndata: b\r\n\r", []string{"data: a", "data: b"}},
		{"CRLF, then CR as a blank line", "data: a\r\n\rdata: b\n\n", []string{"data: a", "data: b"}},
		{"blank lines before and between", "\n\r\ndata: a\n\n\n\ndata: b\n\n", []string{"", "", "data: a", "", "", "data: b"}},
		{"unended frame at the end is dropped", "data: a\n\ndata: cut", []string{"data: a"}},
		{"a line longer than the buffers", "data: " + long + "\ndata: " + huge + "\n\ndata: b\n\n", []string{"data: " + long + "\ndata: " + huge, "data: b"}},
	}
	for _, tc := range cases {
		for _, cut := range []int{0, 1, 2, 3, 7, 100, 5000} {
			for _, perChunk := range []int{0, 1, 5} {
				name := fmt.Sprintf("%s/cut=%d,chunk=%d", tc.name, cut, perChunk)
				t.Run(name, func(t *testing.T) {
					pieces := []string{tc.stream}
					if perChunk > 0 {
						pieces = nil
						for s := tc.stream; len(s) > 0; {
							n := min(perChunk, len(s))
							pieces = append(pieces, s[:n])
							s = s[n:]
						}
					}
					e := newTestReader(t, chunked(pieces, cut), &h1.Pool{}, &bufferPool{}, DefaultMaxEventSize, true)
					got, _, err := readAll(e)
					if !errors.Is(err, io.EOF) {
						t.Fatalf("ended with %v, want io.EOF", err)
					}
					if fmt.Sprintf("%q", got) != fmt.Sprintf("%q", tc.want) {
						t.Errorf("frames\n %.200q\nwant\n %.200q", got, tc.want)
					}
				})
			}
		}
	}
}

// TestFrameLimit: a frame of max_event_size bytes is read whole, one byte
// longer ends the stream, whether it comes in one read or in many.
func TestFrameLimit(t *testing.T) {
	const max = 1000
	for _, cut := range []int{0, 1, 64} {
		for _, tc := range []struct {
			size int
			err  error
		}{{max, io.EOF}, {max + 1, errFrameTooLong}} {
			t.Run(fmt.Sprintf("cut=%d,size=%d", cut, tc.size), func(t *testing.T) {
				frame := "data: " + strings.Repeat("z", tc.size-len("data: "))
				e := newTestReader(t, chunked([]string{frame + "\r\n\r\n", "data: after\n\n"}, cut), &h1.Pool{}, &bufferPool{}, max, true)
				got, _, err := readAll(e)
				if !errors.Is(err, tc.err) {
					t.Fatalf("ended with %v after %d frames, want %v", err, len(got), tc.err)
				}
				if tc.err == io.EOF && (len(got) != 2 || got[0] != frame) {
					t.Errorf("%d frames, the first %d bytes; want the %d-byte frame, then another", len(got), len(got[0]), len(frame))
				}
			})
		}
	}
}

// TestIdleHoldsNoBuffer: between events the reader gives its buffers back
// (it asks its caller to wait, holding none), and streams that share the
// pools never see each other's bytes: one stream's buffers, given back
// while it waits, are another's while it reads, and a frame split across
// reads stays in a buffer no other stream is handed meanwhile.
func TestIdleHoldsNoBuffer(t *testing.T) {
	reads, frames := &h1.Pool{}, &bufferPool{}
	chunk := func(s string) string { return fmt.Sprintf("%x\r\n%s\r\n", len(s), s) }
	head := "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
	// a's first event comes whole, its second split across three reads.
	a := &script{pieces: []string{head, chunk("data: a1\n\n"), chunk("data: a2-"), chunk(strings.Repeat("2", 700)), chunk("-end\n\n"), "0\r\n\r\n"}}
	// Each of b's events is split across two reads, so that b takes a
	// frame buffer for each, and fills it with b's bytes.
	bFrame := "data: " + strings.Repeat("b", 900)
	b := &script{pieces: []string{head}}
	for range 10 {
		b.pieces = append(b.pieces, chunk(bFrame[:500]), chunk(bFrame[500:]+"\n\n"))
	}
	b.pieces = append(b.pieces, "0\r\n\r\n")
	ra := newTestReader(t, a, reads, frames, DefaultMaxEventSize, true)
	rb := newTestReader(t, b, reads, frames, DefaultMaxEventSize, true)

	// b reads a frame whenever a reads from its connection: while a
	// waits with nothing held, and while a holds its split frame.
	bFrames := 0
	a.onRead = func() {
		for {
			f, err := rb.next()
			if err == errWait {
				continue
			}
			if err != nil || string(f) != bFrame {
				t.Fatalf("b read %.40q, %v", f, err)
			}
			bFrames++
			return
		}
	}
	aWaits := 0
	var got []string
	for {
		f, err := ra.next()
		if err == errWait {
			aWaits++
			if ra.pend != nil || ra.rd.Buffered() != 0 || len(ra.piece) != 0 {
				t.Fatalf("asked to wait holding bytes: pend %d, buffered %d, piece %d", len(ra.pend), ra.rd.Buffered(), len(ra.piece))
			}
			continue
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, string(f))
	}
	want := []string{"data: a1", "data: a2-" + strings.Repeat("2", 700) + "-end"}
	if fmt.Sprintf("%q", got) != fmt.Sprintf("%q", want) {
		t.Errorf("a's frames %.80q, want %.80q", got, want)
	}
	if bFrames != 5 {
		t.Errorf("b read %d frames meanwhile, want one per read of a's: 5", bFrames)
	}
	// Before its first event, before its second and before its end: a
	// chunk's closing CRLF, read with its data, is no byte left to read.
	if aWaits != 3 {
		t.Errorf("a waited %d times, want 3", aWaits)
	}
}

// TestLongEventAcrossWrites: over a real connection, plain and TLS (whose
// reads wait in the reader's buffer), an event longer than every buffer a
// stream starts with comes in three writes with pauses between, so that
// the stream waits while it holds the first part; its data arrives whole,
// as the server wrote it. The Last-Event-ID the server sees on the
// reconnection says the long event's id was read, and the event after
// it, after an idle wait, arrives too.
func TestLongEventAcrossWrites(t *testing.T) {
	long := strings.Repeat("0123456789", 2_000) // 20,000 bytes
	protocoltest.Run(t, New(), func(t *testing.T, _ protocoltest.Path, p protocols.Protocol) {
		for _, secure := range []bool{false, true} {
			t.Run(fmt.Sprintf("tls=%v", secure), func(t *testing.T) {
				var mu sync.Mutex
				var lastIDs []string
				srv := httptest.NewUnstartedServer(sseHandler(func(_ int, lastID string, send func(string), r *nethttp.Request) {
					mu.Lock()
					lastIDs = append(lastIDs, lastID)
					mu.Unlock()
					if lastID == "" {
						send("data: short\n\n")
						time.Sleep(20 * time.Millisecond)
						send("id: long-1\ndata: " + long[:7_000])
						time.Sleep(20 * time.Millisecond)
						send(long[7_000:15_000])
						time.Sleep(20 * time.Millisecond)
						send(long[15_000:] + "\n\n")
						return // lost: the client reconnects
					}
					time.Sleep(20 * time.Millisecond)
					send("data: after\r\n\r\n")
					holdUntilGone(r)
				}))
				if secure {
					srv.StartTLS()
				} else {
					srv.Start()
				}
				defer srv.Close()
				c, err := p.Open(context.Background(), target(map[string]cty.Value{
					"base_url": str(srv.URL), "timeout": str("5s"), "insecure_skip_verify": cty.BoolVal(secure),
				}))
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				for _, tc := range []struct {
					events int64
					body   string
				}{{2, long}, {3, "after"}} {
					var got samples
					attrs := map[string]cty.Value{"events": cty.NumberIntVal(tc.events), "reconnect": cty.True, "reconnect_delay": str("10ms")}
					c.Do(ctx, protocols.Call{VU: 1, Request: request(attrs), KeepBody: true}, got.emit)
					req := got.request(t)
					if req.Error != "" || string(req.Body) != tc.body || got.count(MetricEvents) != int(tc.events) {
						t.Fatalf("events = %d: error %q, %d events, body of %d bytes %.20q; want %d bytes %.20q",
							tc.events, req.Error, got.count(MetricEvents), len(req.Body), req.Body, len(tc.body), tc.body)
					}
				}
				mu.Lock()
				defer mu.Unlock()
				if want := []string{"", "", "long-1"}; fmt.Sprintf("%q", lastIDs) != fmt.Sprintf("%q", want) {
					t.Errorf("Last-Event-ID per connection %q, want %q", lastIDs, want)
				}
			})
		}
	})
}
