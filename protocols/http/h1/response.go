// Package h1 reads HTTP/1.1 responses and writes HTTP/1.1 requests for
// hload's HTTP engine. It does no I/O of its own beyond the io.Reader it is
// given, starts no goroutine and, in steady state, allocates nothing: a
// response is parsed in place from one reused buffer, and its header fields
// are slices of that buffer.
//
// Framing follows RFC 9112 section 6.3: interim (1xx) responses are
// skipped, HEAD, 204 and 304 responses have no body, Transfer-Encoding
// chunked wins over Content-Length, and a response with neither is read
// until the server closes the connection.
package h1

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/textproto"
	"sync"
)

// Buffer sizes: a response head must fit in MaxHeader bytes.
const (
	InitialBuffer = 4 << 10
	MaxHeader     = 64 << 10
	// maxInterim bounds the interim (1xx) responses skipped before a final
	// one, so that a server cannot keep a call reading them forever.
	maxInterim = 16
	// maxChunkLine bounds a chunk-size line with its extensions, as
	// net/http does.
	maxChunkLine = 4096
)

// Error is a malformed response: the call fails as a protocol error.
type Error struct {
	msg string
	err error // what it wraps, if anything
}

func (e *Error) Error() string { return e.msg }
func (e *Error) Unwrap() error { return e.err }

func errorf(format string, args ...any) error { return &Error{msg: fmt.Sprintf(format, args...)} }

// Encoding is a response's Content-Encoding, as far as hload decodes it.
type Encoding uint8

const (
	Identity Encoding = iota
	Gzip
	Deflate
	OtherEncoding // an encoding hload leaves as it is
)

// Field is one header field of a response; both slices point into the
// reader's buffer and are valid until the body is read.
type Field struct {
	Name, Value []byte
}

// Response is the head of a response and how its body is framed.
type Response struct {
	Minor  int // 0 for HTTP/1.0, 1 for HTTP/1.1
	Status int
	// Reason is the reason phrase, copied out of the buffer.
	Reason []byte
	// Fields are the header fields, valid until the body is read.
	Fields []Field
	// ContentLength is the body's length, -1 when the response does not
	// give one (chunked, or read until the server closes).
	ContentLength int64
	Chunked       bool
	UntilClose    bool // the body ends when the server closes
	NoBody        bool
	// Close says the connection cannot carry another request after this
	// response.
	Close bool
	// Location is the Location field, copied; nil when absent.
	Location   []byte
	Encoding   Encoding
	SetCookies int // how many Set-Cookie fields
	// Interim counts the 1xx responses skipped before this one.
	Interim int
}

// Header copies the fields into a map keyed as net/http keys it
// (canonical names, the values in order), for a check or a capture that
// reads them after the body, when Fields are no longer valid.
func (r *Response) Header() map[string][]string {
	h := make(map[string][]string, len(r.Fields))
	for _, f := range r.Fields {
		k := textproto.CanonicalMIMEHeaderKey(string(f.Name))
		h[k] = append(h[k], string(f.Value))
	}
	return h
}

// Pool hands out read buffers, so that a connection that waits for no
// response holds none.
type Pool struct{ p sync.Pool }

// get returns a buffer of InitialBuffer bytes; the pointer is what goes
// back, so that putting it allocates nothing.
func (p *Pool) get() *[]byte {
	if b, ok := p.p.Get().(*[]byte); ok {
		return b
	}
	b := make([]byte, InitialBuffer)
	return &b
}

// Reader reads responses from one connection.
type Reader struct {
	src  io.Reader
	pool *Pool
	buf  []byte
	// pooled is buf's pool entry; nil for a buffer of the reader's own
	// (grown for a long head, or without a pool).
	pooled *[]byte
	r, w   int
	// Read counts the bytes read from src, so that a caller can tell
	// whether any byte of a response came.
	Read int64
}

// NewReader returns a reader of src that takes its buffer from pool
// (which may be nil) when it first needs one.
func NewReader(src io.Reader, pool *Pool) *Reader {
	return &Reader{src: src, pool: pool}
}

// Buffered returns the bytes read from the connection and not yet
// consumed by a response.
func (r *Reader) Buffered() int { return r.w - r.r }

// Release gives the buffer back to the pool when it holds no unread byte,
// so that an idle connection holds no buffer.
func (r *Reader) Release() {
	if r.pooled != nil && r.r == r.w {
		r.pool.p.Put(r.pooled)
		r.buf, r.pooled, r.r, r.w = nil, nil, 0, 0
	}
}

// fill reads more bytes into the buffer, growing it up to MaxHeader
// when it is full of unconsumed bytes.
func (r *Reader) fill() error {
	if r.buf == nil {
		if r.pool != nil {
			r.pooled = r.pool.get()
			r.buf = *r.pooled
		} else {
			r.buf = make([]byte, InitialBuffer)
		}
	}
	if r.r == r.w {
		r.r, r.w = 0, 0
	}
	if r.w == len(r.buf) {
		switch {
		case r.r > 0:
			r.w = copy(r.buf, r.buf[r.r:r.w])
			r.r = 0
		case len(r.buf) < MaxHeader:
			nb := make([]byte, min(2*len(r.buf), MaxHeader))
			r.w = copy(nb, r.buf[r.r:r.w])
			r.r = 0
			r.buf, r.pooled = nb, nil
		default:
			return errFull
		}
	}
	for range 100 {
		n, err := r.src.Read(r.buf[r.w:])
		r.w += n
		r.Read += int64(n)
		if n > 0 {
			return nil
		}
		if err != nil {
			return err
		}
	}
	return io.ErrNoProgress
}

var errFull = errors.New("buffer full")

// Space returns the free room of the buffer of a reader that holds no
// unread byte, taking the buffer from the pool when it has none, for a
// caller that reads the first bytes of a response itself; Advance then
// takes in what it read there.
func (r *Reader) Space() []byte {
	if r.buf == nil {
		if r.pool != nil {
			r.pooled = r.pool.get()
			r.buf = *r.pooled
		} else {
			r.buf = make([]byte, InitialBuffer)
		}
	}
	if r.r == r.w {
		r.r, r.w = 0, 0
	}
	return r.buf[r.w:]
}

// Advance takes in n bytes read into Space.
func (r *Reader) Advance(n int) {
	r.w += n
	r.Read += int64(n)
}

// WaitFirst blocks until at least one byte is buffered: the first byte of
// a response, for a caller that times it.
func (r *Reader) WaitFirst() error {
	if r.r < r.w {
		return nil
	}
	return r.fill()
}

// ReadHead reads a response's head into resp, skipping interim
// responses, and leaves the reader at the start of the body. method is
// the request's: a response to HEAD has no body.
func (r *Reader) ReadHead(resp *Response, method string) error {
	resp.Interim = 0
	for {
		if err := r.ReadHeadOnce(resp, method); err != nil {
			return err
		}
		if !IsInterim(resp.Status) {
			return nil
		}
	}
}

// IsInterim reports an interim (1xx) status, which a final response
// follows.
func IsInterim(status int) bool { return status >= 100 && status < 200 }

// ReadHeadOnce reads one response head into resp: an interim one, which
// it counts in resp.Interim and after which the caller reads the next, or
// the final one. A caller that times the final response's first byte
// reads the heads one at a time.
func (r *Reader) ReadHeadOnce(resp *Response, method string) error {
	end, err := r.headEnd()
	if err != nil {
		return err
	}
	head := r.buf[r.r : r.r+end]
	if err := parseHead(head, resp, method == "HEAD"); err != nil {
		return err
	}
	r.r += end
	if IsInterim(resp.Status) {
		if resp.Status == 101 {
			return errorf("the server switched protocols (101) when hload did not ask it to")
		}
		resp.Interim++
		if resp.Interim > maxInterim {
			return errorf("the server sent more than %d interim (1xx) responses", maxInterim)
		}
	}
	return nil
}

// headEnd returns the length of the head at the start of the buffered
// bytes, through its empty line, reading until it is whole.
func (r *Reader) headEnd() (int, error) {
	scanned := 0
	for {
		b := r.buf[r.r:r.w]
		if i := headTerminator(b, scanned); i >= 0 {
			return i, nil
		}
		if len(b) > 3 {
			scanned = len(b) - 3
		}
		if r.w-r.r >= MaxHeader {
			return 0, errorf("the response head is longer than %d bytes", MaxHeader)
		}
		if err := r.fill(); err != nil {
			if err == errFull {
				return 0, errorf("the response head is longer than %d bytes", MaxHeader)
			}
			if errors.Is(err, io.EOF) && r.w > r.r {
				return 0, &Error{msg: fmt.Sprintf("the connection closed in the middle of the response head (%d bytes)", r.w-r.r), err: io.ErrUnexpectedEOF}
			}
			return 0, err
		}
	}
}

// headTerminator returns the index just past the blank line ending a
// head in b, searching from from, or -1. A line ends with LF, with or
// without CR.
func headTerminator(b []byte, from int) int {
	for i := from; i < len(b); i++ {
		// IndexByte skips a line's bytes many at a time.
		k := bytes.IndexByte(b[i:], '\n')
		if k < 0 {
			return -1
		}
		i += k
		j := i + 1
		if j < len(b) && b[j] == '\n' {
			return j + 1
		}
		if j+1 < len(b) && b[j] == '\r' && b[j+1] == '\n' {
			return j + 2
		}
	}
	return -1
}

// nextLine splits the first line off b, without its CRLF or LF.
func nextLine(b []byte) (line, rest []byte) {
	i := bytes.IndexByte(b, '\n')
	if i < 0 {
		return b, nil
	}
	line, rest = b[:i], b[i+1:]
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return line, rest
}

// parseHead parses one response head, its final empty line included.
func parseHead(head []byte, resp *Response, isHead bool) error {
	line, rest := nextLine(head)
	if err := parseStatusLine(line, resp); err != nil {
		return err
	}
	resp.resetHead()
	var fr framing
	valStart := 0 // where the last field's value starts in head
	for {
		lineStart := len(head) - len(rest)
		line, rest = nextLine(rest)
		if len(line) == 0 {
			break
		}
		if line[0] == ' ' || line[0] == '\t' {
			if err := unfold(head[valStart:lineStart+len(line)], resp, line); err != nil {
				return err
			}
			continue
		}
		colon := bytes.IndexByte(line, ':')
		if colon <= 0 {
			return errorf("malformed response header line %q", clip(line))
		}
		// A name that is not a token, or a value with control
		// characters, is kept as it is, as net/http does: only the
		// fields that frame the response must be exact.
		name := line[:colon]
		valStart = lineStart + colon + 1
		value := trimOWS(line[colon+1:])
		resp.Fields = append(resp.Fields, Field{Name: name, Value: value})
		if err := fr.field(resp, name, value); err != nil {
			return err
		}
	}
	if !fr.hasLocation {
		resp.Location = nil
	}
	return fr.frame(resp, isHead)
}

// resetHead clears what the previous head parsed into resp, keeping the
// buffers for this one.
func (resp *Response) resetHead() {
	resp.Fields = resp.Fields[:0]
	resp.ContentLength = -1
	resp.Chunked, resp.UntilClose, resp.NoBody, resp.Close = false, false, false, false
	resp.Location = resp.Location[:0]
	resp.Encoding = Identity
	resp.SetCookies = 0
}

// framing is what a head's fields say of how its body is framed and
// whether its connection stays open, gathered field by field.
type framing struct {
	hasTE, teChunked  bool
	closeTok, keepTok bool
	hasLocation       bool
}

// field takes in one header field: the ones that frame the body or
// close the connection, and those the engine reads (Location,
// Content-Encoding, Set-Cookie).
func (fr *framing) field(resp *Response, name, value []byte) error {
	switch {
	case equalFold(name, "Content-Length"):
		n, err := parseContentLength(value)
		if err != nil {
			return err
		}
		if resp.ContentLength >= 0 && n != resp.ContentLength {
			return errorf("the response has conflicting Content-Length values %d and %d", resp.ContentLength, n)
		}
		resp.ContentLength = n
	case equalFold(name, "Transfer-Encoding"):
		fr.hasTE = true
		fr.teChunked = lastTokenIs(value, "chunked")
	case equalFold(name, "Connection"):
		fr.closeTok = fr.closeTok || hasToken(value, "close")
		fr.keepTok = fr.keepTok || hasToken(value, "keep-alive")
	case equalFold(name, "Location"):
		if !fr.hasLocation {
			resp.Location = append(resp.Location[:0], value...)
			fr.hasLocation = true
		}
	case equalFold(name, "Content-Encoding"):
		resp.Encoding = EncodingOf(value)
	case equalFold(name, "Set-Cookie"):
		resp.SetCookies++
	}
	return nil
}

// frame sets how resp's body is framed and whether its connection closes
// after it, by RFC 9112 section 6.3, once every field is read.
func (fr *framing) frame(resp *Response, isHead bool) error {
	resp.Close = fr.closeTok || resp.Minor == 0 && !fr.keepTok
	switch {
	case resp.Status >= 100 && resp.Status < 200, resp.Status == 204, resp.Status == 304, isHead:
		resp.NoBody = true
		resp.ContentLength = -1
		if resp.Status == 204 || resp.Status == 304 || isHead {
			resp.ContentLength = 0
		}
	case fr.hasTE:
		if resp.Minor == 0 {
			return errorf("an HTTP/1.0 response with Transfer-Encoding: its framing cannot be trusted")
		}
		if resp.ContentLength >= 0 {
			// RFC 9112 6.3: Transfer-Encoding wins; the connection is
			// not trusted with another request after such a response.
			resp.Close = true
		}
		resp.ContentLength = -1
		if fr.teChunked {
			resp.Chunked = true
		} else {
			resp.UntilClose, resp.Close = true, true
		}
	case resp.ContentLength >= 0:
	default:
		resp.UntilClose, resp.Close = true, true
	}
	return nil
}

// unfold takes in an obs-fold line, which continues the last field's
// value: RFC 9112 5.2 has a user agent replace it with spaces. v is the
// value from its start through the folded line, extended in place over
// the line end.
func unfold(v []byte, resp *Response, line []byte) error {
	if len(resp.Fields) == 0 {
		return errorf("malformed response header: the first field line %q begins with white space", clip(line))
	}
	f := &resp.Fields[len(resp.Fields)-1]
	for i, c := range v {
		if c == '\r' || c == '\n' || c == '\t' {
			v[i] = ' '
		}
	}
	f.Value = trimOWS(v)
	return applyFolded(f)
}

// applyFolded re-reads a field whose value an obs-fold extended, for the
// fields that frame the response.
func applyFolded(f *Field) error {
	if equalFold(f.Name, "Content-Length") || equalFold(f.Name, "Transfer-Encoding") {
		return errorf("the response folds its %s header over lines", f.Name)
	}
	return nil
}

func parseStatusLine(line []byte, resp *Response) error {
	// HTTP/1.x SP 3DIGIT [SP reason]; more spaces after the version are
	// let through, as net/http does.
	if len(line) < 9 || string(line[:7]) != "HTTP/1." || line[7] < '0' || line[7] > '9' || line[8] != ' ' {
		return errorf("malformed status line %q", clip(line))
	}
	resp.Minor = int(line[7] - '0')
	rest := bytes.TrimLeft(line[9:], " ")
	if len(rest) < 3 {
		return errorf("malformed status code in %q", clip(line))
	}
	d := rest[:3]
	if d[0] < '0' || d[0] > '9' || d[1] < '0' || d[1] > '9' || d[2] < '0' || d[2] > '9' {
		return errorf("malformed status code in %q", clip(line))
	}
	resp.Status = int(d[0]-'0')*100 + int(d[1]-'0')*10 + int(d[2]-'0')
	reason := rest[3:]
	if len(reason) > 0 {
		if reason[0] != ' ' {
			return errorf("malformed status line %q", clip(line))
		}
		reason = reason[1:]
	}
	resp.Reason = append(resp.Reason[:0], reason...)
	return nil
}

func parseContentLength(v []byte) (int64, error) {
	// A list of identical values ("5, 5") stands for one, RFC 9110 8.6.
	var n int64 = -1
	for len(v) > 0 {
		var item []byte
		if i := bytes.IndexByte(v, ','); i >= 0 {
			item, v = trimOWS(v[:i]), v[i+1:]
		} else {
			item, v = trimOWS(v), nil
		}
		m, ok := parseDecimal(item)
		if !ok {
			return 0, errorf("bad Content-Length %q", clip(item))
		}
		if n >= 0 && m != n {
			return 0, errorf("the response has conflicting Content-Length values %d and %d", n, m)
		}
		n = m
	}
	if n < 0 {
		return 0, errorf("empty Content-Length")
	}
	return n, nil
}

func parseDecimal(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

// ReadBody reads resp's body, appending it to dst when keep is set, and
// returns dst.
func (r *Reader) ReadBody(resp *Response, dst []byte, keep bool) ([]byte, error) {
	b := r.Body(resp)
	for {
		p, err := b.Next()
		if err == io.EOF {
			return dst, nil
		}
		if err != nil {
			return dst, err
		}
		if keep {
			dst = append(dst, p...)
		}
	}
}

// How a Body is framed.
const (
	framedNone = iota
	framedLength
	framedChunked
	framedUntilClose
)

// Body reads one response's body as it comes, piece by piece, in the
// reader's buffer: a body of any length is read through the reader's
// buffer and nothing else. It is also an io.Reader and an io.ByteReader,
// for a decoder (gzip) to read the body through.
type Body struct {
	r     *Reader
	frame uint8
	// inChunk says a chunk's data is being read (left is what remains of
	// it); else the next chunk-size line comes.
	inChunk bool
	done    bool
	left    int64 // what remains of the body (Content-Length) or of its chunk
	total   int64 // the Content-Length, for messages
	got     int64 // body bytes handed out
	// pending is what Read and ReadByte have yet to hand out of the last
	// piece Next returned.
	pending []byte
	// err is the error Next returned, other than the end: what a decoder
	// reading through Read met, told apart from the decoder's own.
	err error
}

// Body starts reading resp's body, whose head ReadHead read.
func (r *Reader) Body(resp *Response) Body {
	b := Body{r: r}
	switch {
	case resp.NoBody:
		b.frame, b.done = framedNone, true
	case resp.Chunked:
		b.frame = framedChunked
	case resp.UntilClose:
		b.frame = framedUntilClose
	default:
		b.frame, b.left, b.total = framedLength, resp.ContentLength, resp.ContentLength
		b.done = b.left == 0
	}
	return b
}

// Got returns the body bytes read so far.
func (b *Body) Got() int64 { return b.got }

// Err returns the error Next last met, other than the end of the body:
// the connection's, or the body's framing's.
func (b *Body) Err() error { return b.err }

// Next returns the next bytes of the body, which stay valid until the
// reader reads again. At the end of the body (after a chunked body's
// trailer section) it returns io.EOF. A malformed body is an *Error, and
// one cut short by the server's close an *Error that wraps
// io.ErrUnexpectedEOF.
func (b *Body) Next() ([]byte, error) {
	p, err := b.next()
	if err != nil && err != io.EOF {
		b.err = err
	}
	return p, err
}

func (b *Body) next() ([]byte, error) {
	if b.done {
		return nil, io.EOF
	}
	r := b.r
	switch b.frame {
	case framedLength:
		if r.r == r.w {
			if err := r.fill(); err != nil {
				return nil, truncated(err, b.got, b.total)
			}
		}
		return b.take(b.left), nil
	case framedUntilClose:
		if r.r == r.w {
			if err := r.fill(); err != nil {
				if errors.Is(err, io.EOF) {
					b.done = true
					return nil, io.EOF
				}
				return nil, err
			}
		}
		return b.take(int64(r.w - r.r)), nil
	}
	for {
		if b.inChunk {
			if b.left > 0 {
				if r.r == r.w {
					if err := r.fill(); err != nil {
						return nil, truncated(err, b.got, -1)
					}
				}
				p := b.take(b.left)
				if b.left == 0 && r.w-r.r >= 2 && r.buf[r.r] == '\r' && r.buf[r.r+1] == '\n' {
					// The chunk's CRLF, taken with its last bytes when
					// it came with them, so that a reader of a stream
					// sees nothing buffered between two chunks.
					r.r += 2
					b.inChunk = false
				}
				return p, nil
			}
			// The chunk's data ends with CRLF.
			for r.w-r.r < 2 {
				if err := r.fill(); err != nil {
					return nil, truncated(err, b.got, -1)
				}
			}
			if r.buf[r.r] != '\r' || r.buf[r.r+1] != '\n' {
				return nil, errorf("malformed chunked body: a chunk's data does not end with CRLF")
			}
			r.r += 2
			b.inChunk = false
		}
		if r.buf == nil || r.r == r.w {
			if err := r.fill(); err != nil {
				return nil, truncated(err, b.got, -1)
			}
		}
		line, err := r.line(maxChunkLine, "chunk-size line")
		if err != nil {
			return nil, err
		}
		size, err := parseChunkSize(line)
		if err != nil {
			return nil, err
		}
		if size == 0 {
			if err := r.trailers(); err != nil {
				return nil, err
			}
			b.done = true
			return nil, io.EOF
		}
		b.inChunk, b.left = true, size
	}
}

// take hands out up to n buffered bytes of the body.
func (b *Body) take(n int64) []byte {
	r := b.r
	k := min(int64(r.w-r.r), n)
	p := r.buf[r.r : r.r+int(k)]
	r.r += int(k)
	b.got += k
	if b.frame != framedUntilClose {
		b.left -= k
		if b.frame == framedLength && b.left == 0 {
			b.done = true
		}
	}
	return p
}

// Empty reports whether the body has no byte at all, reading its first
// piece, which Read and ReadByte then hand out, to know.
func (b *Body) Empty() (bool, error) {
	if len(b.pending) > 0 {
		return false, nil
	}
	p, err := b.Next()
	if err == io.EOF {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	b.pending = p
	return false, nil
}

// Read reads the body, for a decoder that reads through an io.Reader.
func (b *Body) Read(p []byte) (int, error) {
	if len(b.pending) == 0 {
		q, err := b.Next()
		if err != nil {
			return 0, err
		}
		b.pending = q
	}
	n := copy(p, b.pending)
	b.pending = b.pending[n:]
	return n, nil
}

// ReadByte reads one byte of the body: a decoder that can read bytes
// one at a time needs no buffer of its own in front of the body.
func (b *Body) ReadByte() (byte, error) {
	for len(b.pending) == 0 {
		q, err := b.Next()
		if err != nil {
			return 0, err
		}
		b.pending = q
	}
	c := b.pending[0]
	b.pending = b.pending[1:]
	return c, nil
}

func truncated(err error, got, total int64) error {
	if errors.Is(err, io.EOF) {
		if total < 0 {
			return &Error{msg: fmt.Sprintf("the connection closed in the middle of a chunked body, after %d bytes", got), err: io.ErrUnexpectedEOF}
		}
		return &Error{msg: fmt.Sprintf("the connection closed after %d of the body's %d bytes (Content-Length)", got, total), err: io.ErrUnexpectedEOF}
	}
	return err
}

// line returns the next line of the buffered bytes, without its line end,
// reading until it is whole; it is valid until the next read.
func (r *Reader) line(max int, what string) ([]byte, error) {
	scanned := 0
	for {
		b := r.buf[r.r:r.w]
		if i := bytes.IndexByte(b[scanned:], '\n'); i >= 0 {
			line := b[:scanned+i]
			r.r += scanned + i + 1
			if n := len(line); n > 0 && line[n-1] == '\r' {
				line = line[:n-1]
			}
			return line, nil
		}
		scanned = len(b)
		if len(b) >= max {
			return nil, errorf("%s is longer than %d bytes", what, max)
		}
		if r.buf != nil && r.r > 0 && r.w == len(r.buf) {
			r.w = copy(r.buf, r.buf[r.r:r.w])
			r.r = 0
		}
		if err := r.fill(); err != nil {
			if err == errFull {
				return nil, errorf("%s is longer than %d bytes", what, max)
			}
			if errors.Is(err, io.EOF) {
				return nil, &Error{msg: fmt.Sprintf("the connection closed in the middle of a chunked body's %s", what), err: io.ErrUnexpectedEOF}
			}
			return nil, err
		}
	}
}

// trailers reads a chunked body's trailer fields, then its empty line.
func (r *Reader) trailers() error {
	total := 0
	for {
		line, err := r.line(MaxHeader, "trailer section")
		if err != nil {
			return err
		}
		if len(line) == 0 {
			return nil
		}
		total += len(line)
		if total > MaxHeader {
			return errorf("the trailer section is longer than %d bytes", MaxHeader)
		}
		if i := bytes.IndexByte(line, ':'); i <= 0 {
			return errorf("malformed trailer line %q", clip(line))
		}
	}
}

func parseChunkSize(line []byte) (int64, error) {
	if i := bytes.IndexByte(line, ';'); i >= 0 {
		line = line[:i] // chunk extensions, ignored
	}
	line = bytes.TrimRight(line, " \t")
	if len(line) == 0 || len(line) > 15 {
		return 0, errorf("bad chunk size %q", clip(line))
	}
	var n int64
	for _, c := range line {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, errorf("bad chunk size %q", clip(line))
		}
		n = n<<4 | int64(c)
	}
	return n, nil
}

// EncodingOf reads a Content-Encoding value.
func EncodingOf(v []byte) Encoding {
	switch {
	case len(v) == 0 || equalFold(v, "identity"):
		return Identity
	case equalFold(v, "gzip") || equalFold(v, "x-gzip"):
		return Gzip
	case equalFold(v, "deflate"):
		return Deflate
	}
	return OtherEncoding
}

// equalFold compares an ASCII header name or token without case.
func equalFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range b {
		c, d := b[i], s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if 'A' <= d && d <= 'Z' {
			d += 'a' - 'A'
		}
		if c != d {
			return false
		}
	}
	return true
}

// hasToken reports whether the comma-separated list v holds tok.
func hasToken(v []byte, tok string) bool {
	for len(v) > 0 {
		var item []byte
		if i := bytes.IndexByte(v, ','); i >= 0 {
			item, v = v[:i], v[i+1:]
		} else {
			item, v = v, nil
		}
		if equalFold(trimOWS(item), tok) {
			return true
		}
	}
	return false
}

// lastTokenIs reports whether the last item of the list v is tok.
func lastTokenIs(v []byte, tok string) bool {
	if i := bytes.LastIndexByte(v, ','); i >= 0 {
		v = v[i+1:]
	}
	return equalFold(trimOWS(v), tok)
}

// clip shortens what an error message quotes.
func clip(b []byte) string {
	if len(b) > 64 {
		return string(b[:64]) + "..."
	}
	return string(b)
}

// trimOWS trims spaces and tabs from both ends of b, as bytes.Trim(b,
// " \t") does without building its set on every call.
func trimOWS(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t') {
		b = b[:len(b)-1]
	}
	return b
}
