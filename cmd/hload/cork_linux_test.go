package main

import (
	"net"
	"syscall"
	"testing"
)

// cork holds what is written on c back until it is closed, so that the
// close's FIN rides on the last segment.
func cork(t testing.TB, c *net.TCPConn) {
	rc, err := c.SyscallConn()
	if err != nil {
		t.Error(err)
		return
	}
	rc.Control(func(fd uintptr) {
		if err := syscall.SetsockoptInt(int(fd), syscall.IPPROTO_TCP, syscall.TCP_CORK, 1); err != nil {
			t.Error(err)
		}
	})
}
