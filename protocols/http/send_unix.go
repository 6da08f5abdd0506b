//go:build linux || darwin

package http

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
)

// rawOf returns the raw connection of a plain TCP connection, which send
// writes and first reads through; nil for any other.
func rawOf(c net.Conn) syscall.RawConn {
	tcp, ok := c.(*net.TCPConn)
	if !ok {
		return nil
	}
	rc, err := tcp.SyscallConn()
	if err != nil {
		return nil
	}
	return rc
}

// send writes wire on cn and, on a plain TCP connection, waits for the
// response's first bytes in the same poller wait. A Write followed by a
// Read makes a read that finds nothing yet (EAGAIN) before the goroutine
// parks: one system call per request that only the response's latency
// needs. Inside RawConn.Read the poller's readiness is reset before the
// write, so the response's arrival cannot be missed, and the wait keeps
// the connection's deadline. What it read is in cn.rd, with cn.early set;
// a read error is kept in cn.earlyErr for readHead. A write that does not
// finish at once (a full send buffer) is finished by the conn's Write, and
// the response is then read as usual.
//
// On a connection that waited (kept: it answered before, or Connect
// opened it ahead), send first reads without waiting,
// in the same RawConn.Read, before it writes: the server may have closed
// the connection right after its last response (an end of stream, with no
// Connection: close), and that end must be seen now. The poller's
// readiness was reset on entry, so a close that came before wakes no
// wait: a request written on such a connection would wait for an answer
// that never comes (a server that closed its write side only reads it and
// says nothing). The read that finds nothing (EAGAIN) is the one system
// call this costs; a close that comes after it wakes the wait. A
// connection found closed, or holding bytes no request asked for, is
// refused with nothing written (errClosedBeforeWrite), and the call goes
// on a new one.
func (cn *h1conn) send(wire []byte) (int, error) {
	if cn.raw == nil || len(wire) == 0 {
		return cn.conn.Write(wire)
	}
	c := cn.tcp
	c.wire.sent.Add(int64(len(wire)))
	x := &cn.x
	*x = exchange{wire: wire, buf: cn.rd.Space(), check: cn.kept()}
	if cn.step == nil {
		// Made once per connection: a closure made per call would
		// be allocated per call, as RawConn.Read keeps it.
		cn.step = x.step
	}
	err := cn.raw.Read(cn.step)
	for err != nil && c.extend(err) {
		// An earlier call's deadline: x holds where the exchange was.
		err = cn.raw.Read(cn.step)
	}
	wrote, got, werr, rerr, read, stale := x.wrote, x.got, x.werr, x.rerr, x.read, x.stale
	*x = exchange{}
	if stale != nil {
		c.wire.sent.Add(-int64(len(wire)))
		c.wire.received.Add(int64(got))
		return 0, staleError(stale)
	}
	if wrote < len(wire) {
		if werr == nil && err == nil {
			// The send buffer is full: the conn's Write waits, with
			// the deadline.
			n, err := c.write(wire[wrote:])
			c.wire.sent.Add(int64(n - len(wire[wrote:])))
			return wrote + n, err
		}
		c.wire.sent.Add(int64(wrote - len(wire)))
		if werr != nil {
			err = os.NewSyscallError("write", werr)
		}
		return wrote, cn.opError("write", err)
	}
	if got > 0 {
		cn.rd.Advance(got)
		c.wire.received.Add(int64(got))
	}
	cn.early = true
	switch {
	case read && rerr != nil && rerr != io.EOF:
		cn.earlyErr = cn.opError("read", rerr)
	case read:
		cn.earlyErr = rerr
	case err != nil:
		cn.earlyErr = cn.opError("read", err)
	default:
		cn.earlyErr = nil
	}
	return wrote, nil
}

// exchange is the state of one send inside RawConn.Read.
type exchange struct {
	wire, buf  []byte
	wrote, got int
	werr, rerr error
	read       bool // a read returned data, the end or an error
	// check says to read once before writing; stale says what that read
	// found instead of nothing: the end, an error, or stray bytes.
	check bool
	stale error
}

// errStray is bytes that came on a connection between two calls: no
// request asked for them, and they would be read as the next response.
var errStray = errors.New("the server sent bytes no request asked for")

// staleError is why a connection was refused before a write: it wraps
// errClosedBeforeWrite, whose end of stream classifies it, and says what
// was seen.
func staleError(seen error) error {
	if seen == io.EOF {
		return errClosedBeforeWrite
	}
	return fmt.Errorf("%w (%v)", errClosedBeforeWrite, seen)
}

// step is RawConn.Read's function: it checks the connection when asked,
// writes the request, then waits (returns false) for the response, then
// reads it. It returns true early when the check finds the connection
// unusable, or when the write does not finish at once.
func (x *exchange) step(fd uintptr) bool {
	if x.check {
		x.check = false
		for {
			m, e := sockRead(int(fd), x.buf)
			if e == syscall.EINTR {
				continue
			}
			switch {
			case e == syscall.EAGAIN:
				// Nothing came since the last response: write.
			case e != 0:
				x.stale = os.NewSyscallError("read", e)
			case m == 0:
				x.stale = io.EOF
			default:
				x.got, x.stale = m, errStray
			}
			break
		}
		if x.stale != nil {
			return true
		}
	}
	if x.wrote < len(x.wire) {
		for x.wrote < len(x.wire) {
			m, e := sockWrite(int(fd), x.wire[x.wrote:])
			if e == syscall.EINTR {
				continue
			}
			if m > 0 {
				x.wrote += m
			}
			if e != 0 {
				if e != syscall.EAGAIN {
					x.werr = e
				}
				return true
			}
			if m <= 0 {
				return true
			}
		}
		// Written: the response cannot be there yet, wait for it
		// rather than read.
		return false
	}
	for {
		m, e := sockRead(int(fd), x.buf)
		if e == syscall.EINTR {
			continue
		}
		if e == syscall.EAGAIN {
			return false
		}
		x.read = true
		if m > 0 {
			x.got = m
		}
		if e != 0 {
			x.rerr = os.NewSyscallError("read", e)
		} else if m == 0 {
			x.rerr = io.EOF
		}
		return true
	}
}

// opError wraps err as net's Read and Write do, so that a failure reads
// the same on either path: RawConn's own errors say "raw-read".
func (cn *h1conn) opError(op string, err error) error {
	var oe *net.OpError
	if errors.As(err, &oe) {
		err = oe.Err
	}
	return &net.OpError{Op: op, Net: "tcp", Source: cn.tcp.LocalAddr(), Addr: cn.tcp.RemoteAddr(), Err: err}
}
