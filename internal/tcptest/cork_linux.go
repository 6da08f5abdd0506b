//go:build linux

// Package tcptest holds what tests need of TCP beyond package net: it is
// imported by tests only.
package tcptest

import (
	"net"
	"syscall"
	"testing"
)

// CanCork says whether Cork works on this system.
const CanCork = true

// Cork holds what is written on c back until it is closed, so that the
// close's FIN rides on the last segment: a server that answers and closes
// at once, with no gap for a client's next request to fall into.
func Cork(t testing.TB, c *net.TCPConn) {
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
