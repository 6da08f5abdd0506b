package http

import (
	"bufio"
	"compress/gzip"
	"compress/zlib"
	"fmt"
	"io"

	"github.com/hload/hload/protocols"
	"github.com/hload/hload/protocols/http/h1"
)

// What the checks and captures of a call read of its response body goes
// through the VU's scan as the body streams: the body is decoded on the
// way when it is compressed (gzip or deflate), searched for the checks'
// substrings, and kept up to the call's max_body for the captures. A body
// of any length costs the read buffer, the decoder's window, and what is
// kept. A body nothing reads is read off the connection and dropped.

// decodeBuffer is the size of the buffer a decoded body is read into.
const decodeBuffer = 32 << 10

// scans reports whether the call reads its final response's body.
func scans(call *protocols.Call) bool {
	return call.KeepBody || len(call.BodyContains) > 0
}

// scanEngineBody reads the engine's response body through v.scan. It
// returns the connection's error, which ends the call as a failure on the
// connection, or the decoder's, which leaves the connection whole (the
// rest of the body was read) and fails the call as protocol.
func (v *vu) scanEngineBody(rd *h1.Reader, resp *h1.Response, call *protocols.Call) (decodeErr, err error) {
	v.scan.Reset(call)
	v.hbody = rd.Body(resp)
	b := &v.hbody
	if resp.Encoding != h1.Gzip && resp.Encoding != h1.Deflate {
		for {
			p, err := b.Next()
			if err == io.EOF {
				return nil, nil
			}
			if err != nil {
				return nil, err
			}
			if v.scan.Searching() {
				v.scan.Write(p)
			}
		}
	}
	if empty, err := b.Empty(); err != nil || empty {
		return nil, err // an empty body: nothing to decode
	}
	decodeErr = v.decodeInto(b, resp.Encoding)
	if err := b.Err(); err != nil {
		return nil, err
	}
	// What the decoder left (a body it gave up on, or the rest of one
	// nothing needs any more) is read off the connection all the same.
	for {
		if _, err := b.Next(); err == io.EOF {
			return decodeErr, nil
		} else if err != nil {
			return nil, err
		}
	}
}

// scanNetBody reads a net/http response body through v.scan, as
// scanEngineBody does; the transport's reader is the connection's.
func (v *vu) scanNetBody(body io.Reader, encoding []byte, call *protocols.Call) (decodeErr, err error) {
	v.scan.Reset(call)
	v.netBody = trackedReader{r: body}
	src := &v.netBody
	if v.dbuf == nil {
		v.dbuf = make([]byte, decodeBuffer)
	}
	enc := h1.EncodingOf(encoding)
	if enc != h1.Gzip && enc != h1.Deflate {
		for {
			n, err := src.Read(v.dbuf)
			if v.scan.Searching() {
				v.scan.Write(v.dbuf[:n])
			}
			if err == io.EOF {
				return nil, nil
			}
			if err != nil {
				return nil, err
			}
		}
	}
	// The decoders read a byte at a time from a reader that can.
	if v.br == nil {
		v.br = bufio.NewReaderSize(src, 16<<10)
	} else {
		v.br.Reset(src)
	}
	if _, err := v.br.Peek(1); err == io.EOF {
		return nil, nil // an empty body: nothing to decode
	}
	decodeErr = v.decodeInto(v.br, enc)
	if src.err != nil {
		return nil, src.err
	}
	if _, err := io.Copy(io.Discard, v.br); err != nil {
		return nil, err
	}
	return decodeErr, nil
}

// decodeInto decodes the body src holds, of encoding enc, into v.scan,
// until its end or until the scan needs no more. It returns why the body
// could not be decoded, nil for a body that decoded or was empty.
func (v *vu) decodeInto(src io.Reader, enc h1.Encoding) error {
	if v.dbuf == nil {
		v.dbuf = make([]byte, decodeBuffer)
	}
	name := "gzip"
	var r io.Reader
	var err error
	switch enc {
	case h1.Gzip:
		if v.gz == nil {
			v.gz, err = gzip.NewReader(src)
		} else {
			err = v.gz.Reset(src)
		}
		r = v.gz
	default:
		name = "deflate"
		if v.zl == nil {
			v.zl, err = zlib.NewReader(src)
		} else {
			err = v.zl.(zlib.Resetter).Reset(src, nil)
		}
		r = v.zl
	}
	if err != nil {
		return fmt.Errorf("the response's %s body could not be decoded: %v", name, err)
	}
	for v.scan.Searching() {
		n, err := r.Read(v.dbuf)
		v.scan.Write(v.dbuf[:n])
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("the response's %s body could not be decoded: %v", name, err)
		}
	}
	return nil
}

// trackedReader is a response body that remembers the error it met, so
// that a decoder's failure is told apart from the connection's.
type trackedReader struct {
	r   io.Reader
	err error
}

func (t *trackedReader) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	if err != nil && err != io.EOF {
		t.err = err
	}
	return n, err
}
