//go:build linux || darwin

package sse

import (
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// readiness waits until a TCP connection has something to read, holding
// no buffer while it waits, through the connection's raw form and the
// runtime's poller, as a read would.
type readiness struct {
	rc syscall.RawConn
}

// init prepares r for c; r stays unusable for a connection that is not a
// plain TCP one (TLS keeps bytes of its own above the socket).
func (r *readiness) init(c net.Conn) bool {
	tcp, ok := c.(*net.TCPConn)
	if !ok {
		return false
	}
	rc, err := tcp.SyscallConn()
	if err != nil {
		return false
	}
	r.rc = rc
	return true
}

// wait blocks until the socket holds bytes, its end or an error, or the
// connection's read deadline passes. The poller's readiness is edge
// triggered, so a look first tells whether bytes came before the wait.
func (r *readiness) wait() error {
	return r.rc.Read(readable)
}

// readable looks at the socket without blocking: false asks the poller to
// wait for more, true lets the read that follows find what came. It polls
// rather than peeks, since a peek would take a pending error (a reset)
// from the socket, which the read that follows must report.
func readable(fd uintptr) bool {
	p := [1]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(p[:], 0)
		if err == unix.EINTR {
			continue
		}
		return n != 0 || err != nil
	}
}
