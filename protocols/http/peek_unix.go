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
