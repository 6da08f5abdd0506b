//go:build !linux

// Package tcptest holds what tests need of TCP beyond package net: it is
// imported by tests only.
package tcptest

import (
	"net"
	"testing"
)

// CanCork says whether Cork works on this system: TCP_CORK is Linux's.
const CanCork = false

// Cork is Linux's: a test that corks skips unless CanCork.
func Cork(t testing.TB, _ *net.TCPConn) { t.Error("TCP_CORK is Linux's") }
