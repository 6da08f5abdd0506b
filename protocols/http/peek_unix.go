//go:build linux || darwin

package http

import (
	"net"
	"syscall"
)

// peerClosed reports whether the kernel already holds the end of c's
// stream, or a reset, without taking a byte: the server closed the
// connection while it was idle and the transport's reader has not run
// since. It peeks without blocking and without the reader's lock.
func peerClosed(c *net.TCPConn) bool {
	rc, err := c.SyscallConn()
	if err != nil {
		return false
	}
	closed := false
	rc.Control(func(fd uintptr) {
		var b [1]byte
		n, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		closed = n == 0 && err == nil || err == syscall.ECONNRESET
	})
	return closed
}

// What a peek at an idle connection finds.
const (
	peekNothing = iota // nothing came: the connection is open
	peekClosed         // the end of the stream, or an error
	peekBytes          // bytes: over TLS, maybe a close_notify
)

// peeker peeks at one TCP connection without blocking, through the raw
// connection and function it made once, so that a peek allocates nothing.
type peeker struct {
	rc    syscall.RawConn
	fn    func(uintptr)
	found int
}

func (p *peeker) init(c net.Conn) {
	tcp, ok := c.(*net.TCPConn)
	if !ok {
		return
	}
	rc, err := tcp.SyscallConn()
	if err != nil {
		return
	}
	p.rc = rc
	p.fn = p.peek
}

func (p *peeker) peek(fd uintptr) {
	var b [1]byte
	for {
		n, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		switch {
		case err == syscall.EINTR:
			continue
		case err == syscall.EAGAIN:
			p.found = peekNothing
		case err != nil || n == 0:
			p.found = peekClosed
		default:
			p.found = peekBytes
		}
		return
	}
}

// look returns what a peek finds; nothing on a connection it cannot peek.
func (p *peeker) look() int {
	if p.rc == nil {
		return peekNothing
	}
	if p.rc.Control(p.fn) != nil {
		return peekClosed
	}
	return p.found
}
