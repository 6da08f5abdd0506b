//go:build !linux

package http

import (
	"net"
	"testing"
)

// cork is Linux's: the tests that cork skip before they get here.
func cork(t testing.TB, _ *net.TCPConn) { t.Error("TCP_CORK is Linux's") }
