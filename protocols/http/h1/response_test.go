package h1

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	nethttp "net/http"
	"strings"
	"testing"
)

// trickle hands out its bytes step at a time, so that every boundary of a
// response falls between two reads somewhere.
type trickle struct {
	b    []byte
	step int
}

func (t *trickle) Read(p []byte) (int, error) {
	if len(t.b) == 0 {
		return 0, io.EOF
	}
	n := min(len(p), t.step, len(t.b))
	copy(p, t.b[:n])
	t.b = t.b[n:]
	return n, nil
}

// parse reads one response from raw, in reads of step bytes.
func parse(raw, method string, step int) (*Response, string, *Reader, error) {
	return parseBy(raw, method, step, "pieces")
}

// parseBy is parse, with the body read by pieces (ReadBody, on Body.Next),
// through Body.Read in reads of 3 bytes, or byte by byte (Body.ReadByte),
// as a decoder reads it.
func parseBy(raw, method string, step int, how string) (*Response, string, *Reader, error) {
	r := NewReader(&trickle{b: []byte(raw), step: step}, nil)
	resp := &Response{}
	if err := r.ReadHead(resp, method); err != nil {
		return resp, "", r, err
	}
	var body []byte
	var err error
	switch how {
	case "pieces":
		body, err = r.ReadBody(resp, nil, true)
	case "reads":
		b := r.Body(resp)
		var buf [3]byte
		for {
			var n int
			n, err = b.Read(buf[:])
			body = append(body, buf[:n]...)
			if err != nil {
				break
			}
		}
	case "bytes":
		b := r.Body(resp)
		for {
			var c byte
			if c, err = b.ReadByte(); err != nil {
				break
			}
			body = append(body, c)
		}
	}
	if err == io.EOF && how != "pieces" {
		err = nil
	}
	return resp, string(body), r, err
}

func TestFraming(t *testing.T) {
	cases := []struct {
		name, raw, method string
		status            int
		body              string
		close             bool
		err               string // a part of the error, "" for none
	}{
		{"content-length", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", "GET", 200, "hello", false, ""},
		{"bare LF", "HTTP/1.1 200 OK\nContent-Length: 2\n\nok", "GET", 200, "ok", false, ""},
		{"identical duplicate lengths", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\nok", "GET", 200, "ok", false, ""},
		{"a list of one length", "HTTP/1.1 200 OK\r\nContent-Length: 2, 2\r\n\r\nok", "GET", 200, "ok", false, ""},
		{"conflicting lengths", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nok", "GET", 0, "", false, "conflicting Content-Length"},
		{"bad length", "HTTP/1.1 200 OK\r\nContent-Length: -2\r\n\r\nok", "GET", 0, "", false, "bad Content-Length"},
		{"truncated body", "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhello", "GET", 200, "hello", false, "after 5 of the body's 10 bytes"},
		{"chunked", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n1;ext=1\r\n!\r\n0\r\n\r\n", "GET", 200, "hello!", false, ""},
		{"chunked with trailers", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nA\r\n0123456789\r\n0\r\nX-Sum: 1\r\nX-Other: 2\r\n\r\n", "GET", 200, "0123456789", false, ""},
		{"chunked wins over length", "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n", "GET", 200, "ok", true, ""},
		{"bad chunk size", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nok\r\n0\r\n\r\n", "GET", 200, "", false, "bad chunk size"},
		{"chunk without CRLF", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nokX0\r\n\r\n", "GET", 200, "ok", false, "does not end with CRLF"},
		{"truncated chunked", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel", "GET", 200, "hel", false, "closed in the middle"},
		{"until close", "HTTP/1.1 200 OK\r\n\r\nall of it", "GET", 200, "all of it", true, ""},
		{"other transfer coding", "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\nraw", "GET", 200, "raw", true, ""},
		{"HEAD", "HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\n", "HEAD", 200, "", false, ""},
		{"204", "HTTP/1.1 204 No Content\r\nContent-Length: 50\r\n\r\n", "GET", 204, "", false, ""},
		{"304", "HTTP/1.1 304 Not Modified\r\nTransfer-Encoding: chunked\r\n\r\n", "GET", 304, "", false, ""},
		{"100 and 103 skipped", "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", "GET", 200, "ok", false, ""},
		{"101", "HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\n\r\n", "GET", 0, "", false, "switched protocols"},
		{"connection close", "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok", "GET", 200, "ok", true, ""},
		{"HTTP/1.0", "HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok", "GET", 200, "ok", true, ""},
		{"HTTP/1.0 keep-alive", "HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 2\r\n\r\nok", "GET", 200, "ok", false, ""},
		{"HTTP/1.0 with Transfer-Encoding", "HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", "GET", 0, "", false, "HTTP/1.0 response with Transfer-Encoding"},
		{"no reason", "HTTP/1.1 200\r\nContent-Length: 0\r\n\r\n", "GET", 200, "", false, ""},
		{"bad status line", "HTTP/1.1 2x0 OK\r\n\r\n", "GET", 0, "", false, "malformed status code"},
		{"not HTTP", "SSH-2.0-OpenSSH\r\n\r\n", "GET", 0, "", false, "malformed status line"},
		{"bad header line", "HTTP/1.1 200 OK\r\nno colon here\r\n\r\n", "GET", 200, "", false, "malformed response header line"},
		{"folded field", "HTTP/1.1 200 OK\r\nX-A: one\r\n two\r\nContent-Length: 2\r\n\r\nok", "GET", 200, "ok", false, ""},
		{"folded length", "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n 1\r\n\r\nok", "GET", 0, "", false, "folds its Content-Length"},
		{"folded transfer coding", "HTTP/1.1 200 OK\r\nTransfer-Encoding:\r\n chunked\r\n\r\n0\r\n\r\n", "GET", 0, "", false, "folds its Transfer-Encoding"},
		{"fold before any field", "HTTP/1.1 200 OK\r\n X-A: 1\r\nContent-Length: 2\r\n\r\nok", "GET", 0, "", false, "begins with white space"},
		{"truncated head", "HTTP/1.1 200 OK\r\nContent-Len", "GET", 0, "", false, "in the middle of the response head"},
		{"long head", "HTTP/1.1 200 OK\r\nX-Long: " + strings.Repeat("a", MaxHeader) + "\r\n\r\n", "GET", 0, "", false, "longer than 65536 bytes"},
		{"head of 20 KB", "HTTP/1.1 200 OK\r\nX-Long: " + strings.Repeat("a", 20<<10) + "\r\nContent-Length: 2\r\n\r\nok", "GET", 200, "ok", false, ""},
	}
	for _, tc := range cases {
		for _, step := range []int{1, 7, 1 << 20} {
			for _, how := range []string{"pieces", "reads", "bytes"} {
				resp, body, _, err := parseBy(tc.raw, tc.method, step, how)
				if tc.err != "" {
					var pe *Error
					if err == nil || !strings.Contains(err.Error(), tc.err) || !errors.As(err, &pe) {
						t.Errorf("%s, reads of %d, body by %s: error %v, want a protocol error saying %q", tc.name, step, how, err, tc.err)
					}
					continue
				}
				if err != nil || resp.Status != tc.status || body != tc.body || resp.Close != tc.close {
					t.Errorf("%s, reads of %d, body by %s: status %d body %q close %v err %v; want %d %q close %v",
						tc.name, step, how, resp.Status, body, resp.Close, err, tc.status, tc.body, tc.close)
				}
			}
		}
	}
}

// TestTwoResponsesOnOneConnection checks that a response's framing leaves
// the reader at the next one's first byte, for every framing a
// keep-alive connection can carry.
func TestTwoResponsesOnOneConnection(t *testing.T) {
	raw := "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\na" +
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nb\r\n0\r\nX-Trailer: 1\r\n\r\n" +
		"HTTP/1.1 204 No Content\r\n\r\n" +
		"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nc"
	for _, step := range []int{1, 3, 1 << 20} {
		r := NewReader(&trickle{b: []byte(raw), step: step}, &Pool{})
		var got []string
		for range 4 {
			var resp Response
			if err := r.ReadHead(&resp, "GET"); err != nil {
				t.Fatalf("reads of %d: %v", step, err)
			}
			b, err := r.ReadBody(&resp, nil, true)
			if err != nil {
				t.Fatalf("reads of %d: %v", step, err)
			}
			got = append(got, string(b))
			r.Release()
		}
		if strings.Join(got, ",") != "a,b,,c" {
			t.Errorf("reads of %d: bodies %q", step, got)
		}
	}
}

// TestChunkEndTakenWithItsData: a chunk's closing CRLF that came with its
// last bytes is taken with them, so that a reader of a stream, which
// waits for more only once nothing is buffered, sees nothing buffered
// between two chunks; a CRLF that has not come yet, or a malformed one,
// is left for the next call, which reads or rejects it.
func TestChunkEndTakenWithItsData(t *testing.T) {
	head := "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
	cases := []struct {
		name, wire string
		buffered   int // after the first piece
		err        string
	}{
		{"CRLF with the data", head + "3\r\nabc\r\n", 0, ""},
		{"half the CRLF", head + "3\r\nabc\r", 1, ""},
		{"not CRLF", head + "3\r\nabcXY", 2, "does not end with CRLF"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := NewReader(&trickle{b: []byte(tc.wire), step: 1 << 20}, nil)
			var resp Response
			if err := r.ReadHead(&resp, "GET"); err != nil {
				t.Fatal(err)
			}
			b := r.Body(&resp)
			p, err := b.Next()
			if err != nil || string(p) != "abc" {
				t.Fatalf("first piece %q, %v", p, err)
			}
			if r.Buffered() != tc.buffered {
				t.Errorf("%d bytes buffered after the chunk, want %d", r.Buffered(), tc.buffered)
			}
			_, err = b.Next()
			if tc.err == "" && !errors.Is(err, io.ErrUnexpectedEOF) || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
				t.Errorf("then %v, want %q (or a cut body)", err, tc.err)
			}
		})
	}
}

// TestNoAllocations checks that a keep-alive response parsed and
// discarded allocates nothing once the buffer exists.
func TestNoAllocations(t *testing.T) {
	one := []byte("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Type: text/plain\r\nLocation: /x\r\n\r\nhello")
	src := &trickle{}
	r := NewReader(src, &Pool{})
	var resp Response
	run := func() {
		src.b, src.step = one, 1<<20
		if err := r.ReadHead(&resp, "GET"); err != nil {
			t.Fatal(err)
		}
		if _, err := r.ReadBody(&resp, nil, false); err != nil {
			t.Fatal(err)
		}
		r.Release()
	}
	run()
	if n := testing.AllocsPerRun(100, run); n != 0 {
		t.Errorf("%v allocations per response", n)
	}
}

func TestAppendFields(t *testing.T) {
	// The engine writes the request line and Host itself (appendRequest
	// in protocols/http); the fields after them are h1's.
	b := []byte("POST /a?b=1 HTTP/1.1\r\nHost: example.test:8080\r\n")
	b = AppendField(b, "X-A", "1")
	b = AppendContentLength(b, 4)
	b = append(b, "\r\ndata"...)
	r, err := nethttp.ReadRequest(bufio.NewReader(bytes.NewReader(b)))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(r.Body)
	if r.Method != "POST" || r.RequestURI != "/a?b=1" || r.Host != "example.test:8080" || r.Header.Get("X-A") != "1" || string(body) != "data" {
		t.Errorf("net/http read %s %s host %s headers %v body %q", r.Method, r.RequestURI, r.Host, r.Header, body)
	}
}

// FuzzParseResponse checks that no input makes the parser panic or hang,
// and that for a response net/http reads whole, with a framing that is
// not ambiguous, the parser agrees with it on the status and the body.
func FuzzParseResponse(f *testing.F) {
	f.Add([]byte("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"), false, uint8(3))
	f.Add([]byte("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;a=b\r\nhello\r\n0\r\nT: 1\r\n\r\n"), false, uint8(1))
	f.Add([]byte("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n"), true, uint8(9))
	f.Add([]byte("HTTP/1.0 200 OK\r\n\r\nuntil close"), false, uint8(0))
	f.Fuzz(func(t *testing.T, data []byte, head bool, step uint8) {
		method := "GET"
		if head {
			method = "HEAD"
		}
		resp, body, _, err := parse(string(data), method, int(step)+1)

		nr, nerr := nethttp.ReadResponse(bufio.NewReader(bytes.NewReader(data)), &nethttp.Request{Method: method})
		if nerr != nil {
			return
		}
		nbody, nerr := io.ReadAll(nr.Body)
		if nerr != nil || ambiguous(nr, data) {
			return
		}
		if err != nil && strings.Contains(err.Error(), "folds its") {
			return // a framing field folded over lines is refused on purpose
		}
		if err != nil {
			t.Fatalf("net/http read status %d and a body of %d bytes; the parser failed: %v", nr.StatusCode, len(nbody), err)
		}
		if resp.Status != nr.StatusCode || body != string(nbody) {
			t.Fatalf("parser: %d %q; net/http: %d %q", resp.Status, body, nr.StatusCode, nbody)
		}
	})
}

// ambiguous reports a response whose framing the RFC leaves to the
// recipient, or that net/http reads differently by design: an interim
// response (net/http returns it, the parser skips it), both
// Transfer-Encoding and Content-Length, Transfer-Encoding in HTTP/1.0
// (RFC 9112 6.1: faulty framing; net/http ignores it), or a version other
// than 1.x. net/http drops the fields it ignores, so the raw bytes tell.
func ambiguous(r *nethttp.Response, raw []byte) bool {
	lower := bytes.ToLower(raw)
	te := len(r.TransferEncoding) > 0 || bytes.Contains(lower, []byte("transfer-encoding"))
	cl := bytes.Contains(lower, []byte("content-length"))
	return r.StatusCode < 200 || r.ProtoMajor != 1 || te && (cl || r.ProtoMinor == 0)
}

// FuzzScanHelpers checks headTerminator and trimOWS against the plain
// forms they replace: a byte-by-byte scan, and bytes.Trim.
func FuzzScanHelpers(f *testing.F) {
	f.Add([]byte("HTTP/1.1 200 OK\r\nA: b\r\n\r\nbody"), uint8(0))
	f.Add([]byte("HTTP/1.1 200 OK\nA: b\n\nbody"), uint8(5))
	f.Add([]byte("\r\n\r\n"), uint8(1))
	f.Add([]byte(" \t a b \t "), uint8(0))
	f.Add([]byte("x\n\r"), uint8(0))
	f.Fuzz(func(t *testing.T, b []byte, from uint8) {
		start := min(int(from), len(b))
		want := -1
		for i := start; i < len(b); i++ {
			if b[i] != '\n' {
				continue
			}
			if j := i + 1; j < len(b) && b[j] == '\n' {
				want = j + 1
				break
			} else if j+1 < len(b) && b[j] == '\r' && b[j+1] == '\n' {
				want = j + 2
				break
			}
		}
		if got := headTerminator(b, start); got != want {
			t.Errorf("headTerminator(%q, %d) = %d, want %d", b, start, got, want)
		}
		if got, want := trimOWS(b), bytes.Trim(b, " \t"); !bytes.Equal(got, want) {
			t.Errorf("trimOWS(%q) = %q, want %q", b, got, want)
		}
	})
}
