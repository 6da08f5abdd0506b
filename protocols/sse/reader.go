package sse

import (
	"bytes"
	"errors"
	"sync"

	"github.com/hload/hload/protocols/http/h1"
)

// errFrameTooLong ends a stream whose frame outgrows max_event_size.
var errFrameTooLong = errors.New("frame too long")

// startBuffer is the size a buffer for a frame split across reads starts
// at; append grows it, up to about max_event_size, for a longer frame.
const startBuffer = 512

// keepBuffer is the largest frame buffer that goes back to the client's
// pool: one grown for a long frame is left to the collector.
const keepBuffer = 4 << 10

// bufferPool hands out frame buffers, shared by a client's streams.
type bufferPool struct{ p sync.Pool }

func (p *bufferPool) get() []byte {
	if b, ok := p.p.Get().(*[]byte); ok {
		return (*b)[:0]
	}
	return make([]byte, 0, startBuffer)
}

func (p *bufferPool) put(b []byte) {
	if cap(b) <= keepBuffer {
		b = b[:0]
		p.p.Put(&b)
	}
}

// errWait is next's answer when it would read with nothing buffered and
// no frame begun: the caller waits for bytes with no buffer held, then
// calls next again, which reads.
var errWait = errors.New("wait for bytes")

// eventReader splits a response body into event-stream frames, so that
// an idle stream holds no buffer: the body is read into the connection
// reader's buffer, which goes back to its pool whenever every byte read
// has been handed out, and the caller then waits for the next bytes with
// no buffer (errWait). A frame that is whole in what one read brought is
// handed out in place; only a frame split across reads is copied, into a
// buffer of the client's pool that grows for a long one and goes back
// once the frame is handed out and nothing follows it.
type eventReader struct {
	rd   *h1.Reader
	body h1.Body
	// canWait says the caller can wait for bytes with no buffer: false
	// for a connection that cannot be waited on so (TLS), whose reads
	// then wait in the reader's buffer.
	canWait bool
	// waited is set when next answers errWait: the call after reads,
	// the caller having waited.
	waited bool
	pool   *bufferPool
	max    int
	// piece is what remains of the body's last piece, in rd's buffer.
	piece []byte
	// pend holds a frame split across reads, from its start, and what
	// came after it; nil while no frame is split.
	pend []byte
	// resume is where the search of pend for the frame's end resumes: the
	// start of a line that pend may not hold whole yet.
	resume int
	// handed is the length of the frame handed out last from pend, with
	// its blank line, which the next call drops.
	handed int
	// skipLF drops a LF that begins the next bytes: the second half of a
	// CRLF whose CR ended the last frame.
	skipLF bool
}

// next returns the next frame, without the blank line that ends it. The
// frame is valid until the next call. At the end of the body it returns
// the body's error (io.EOF at a clean end); a frame not ended by then is
// dropped, as the spec says. It returns errWait, having given its buffers
// back, when it needs bytes and holds none.
func (e *eventReader) next() ([]byte, error) {
	if e.handed > 0 {
		e.pend = e.pend[:copy(e.pend, e.pend[e.handed:])]
		e.handed, e.resume = 0, 0
	}
	for {
		if e.skipLF {
			switch {
			case len(e.pend) > 0:
				e.skipLF = false
				if e.pend[0] == '\n' {
					e.pend = e.pend[:copy(e.pend, e.pend[1:])]
				}
			case len(e.piece) > 0:
				e.skipLF = false
				if e.piece[0] == '\n' {
					e.piece = e.piece[1:]
				}
			}
		}
		if len(e.piece) > 0 {
			if len(e.pend) == 0 {
				// The frame starts in the reader's buffer: hand it out
				// in place when it ends there too.
				n, end, cr := frameEnd(e.piece, 0)
				if n > e.max {
					return nil, errFrameTooLong
				}
				if n >= 0 {
					f := e.piece[:n]
					e.piece, e.skipLF = e.piece[end:], cr
					return f, nil
				}
				if e.pend == nil {
					e.pend = e.pool.get()
				}
			}
			e.pend = append(e.pend, e.piece...)
			e.piece = nil
		}
		if len(e.pend) > 0 {
			n, end, cr := frameEnd(e.pend, e.resume)
			if n > e.max {
				return nil, errFrameTooLong
			}
			if n >= 0 {
				e.handed, e.skipLF = end, cr
				return e.pend[:n], nil
			}
			e.resume = end
			if trimLineEnds(e.pend) > e.max {
				return nil, errFrameTooLong
			}
		}
		if err := e.more(); err != nil {
			return nil, err
		}
	}
}

// more reads the body's next piece. When nothing read is left to hand
// out, the buffers go back to their pools and it returns errWait, unless
// the caller has just waited.
func (e *eventReader) more() error {
	if e.pend != nil && len(e.pend) == 0 {
		e.pool.put(e.pend)
		e.pend, e.resume = nil, 0
	}
	if e.pend == nil && e.rd.Buffered() == 0 && e.canWait && !e.waited {
		e.rd.Release()
		e.waited = true
		return errWait
	}
	e.waited = false
	p, err := e.body.Next()
	if err != nil {
		return err
	}
	e.piece = p
	return nil
}

// close gives the buffers back; the reader is not used after.
func (e *eventReader) close() {
	if e.pend != nil {
		e.pool.put(e.pend)
	}
	e.pend, e.piece = nil, nil
	e.rd.Release()
}

// frameEnd finds the blank line that ends the frame at the start of b,
// searching from from, the start of a line in b. It returns the frame's
// length without the line end of its last line, the length through the
// blank line, and whether that blank line is a CR at the very end of b,
// which a LF may follow in bytes not read yet. A line ends with CRLF, LF
// or CR. When b holds no whole frame n is -1 and end is where the search
// resumes once more bytes come: the start of a line not known to be whole.
func frameEnd(b []byte, from int) (n, end int, cr bool) {
	i := from
	for i < len(b) {
		k := indexLineEnd(b[i:])
		if k < 0 {
			return -1, i, false
		}
		if k == 0 {
			// A blank line at i ends the frame.
			n = i
			switch {
			case n >= 2 && b[n-2] == '\r' && b[n-1] == '\n':
				n -= 2
			case n >= 1:
				n--
			}
			switch {
			case b[i] == '\n':
				return n, i + 1, false
			case i+1 == len(b):
				return n, i + 1, true
			case b[i+1] == '\n':
				return n, i + 2, false
			}
			return n, i + 1, false
		}
		j := i + k + 1 // past the line end at i+k
		if b[j-1] == '\r' {
			if j == len(b) {
				return -1, i, false // a CR, or the start of a CRLF
			}
			if b[j] == '\n' {
				j++
			}
		}
		i = j
	}
	return -1, i, false
}

// indexLineEnd returns the index of the first CR or LF in b, or -1. A
// CR is rare as a line end, so both searches are IndexByte's.
func indexLineEnd(b []byte) int {
	lf := bytes.IndexByte(b, '\n')
	if lf < 0 {
		return bytes.IndexByte(b, '\r')
	}
	if cr := bytes.IndexByte(b[:lf], '\r'); cr >= 0 {
		return cr
	}
	return lf
}

// trimLineEnds returns the length of b without its trailing CRs and LFs:
// the least the frame that b starts can be.
func trimLineEnds(b []byte) int {
	n := len(b)
	for n > 0 && (b[n-1] == '\n' || b[n-1] == '\r') {
		n--
	}
	return n
}
