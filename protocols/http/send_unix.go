//go:build linux || darwin

package http

import (
	"errors"
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
func (cn *h1conn) send(wire []byte) (int, error) {
	if cn.raw == nil || len(wire) == 0 {
		return cn.conn.Write(wire)
	}
	c := cn.tcp
	c.wire.sent.Add(int64(len(wire)))
	x := &cn.x
	*x = exchange{wire: wire, buf: cn.rd.Space()}
	if cn.step == nil {
		// Made once per connection: a closure made per call would
		// be allocated per call, as RawConn.Read keeps it.
		cn.step = x.step
	}
	err := cn.raw.Read(cn.step)
	wrote, got, werr, rerr, read := x.wrote, x.got, x.werr, x.rerr, x.read
	*x = exchange{}
	if wrote < len(wire) {
		if werr == nil && err == nil {
			// The send buffer is full: the conn's Write waits, with
			// the deadline.
			n, err := c.Conn.Write(wire[wrote:])
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
}

// step is RawConn.Read's function: it writes the request, then waits
// (returns false) for the response, then reads it. It returns true early
// when the write does not finish at once.
func (x *exchange) step(fd uintptr) bool {
	if x.wrote < len(x.wire) {
		for x.wrote < len(x.wire) {
			m, e := syscall.Write(int(fd), x.wire[x.wrote:])
			if e == syscall.EINTR {
				continue
			}
			if m > 0 {
				x.wrote += m
			}
			if e != nil {
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
		m, e := syscall.Read(int(fd), x.buf)
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
		if e != nil {
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
