//go:build !(linux || darwin)

package sse

import "net"

// readiness is unavailable here: a stream's reads wait in the
// connection reader's buffer.
type readiness struct{}

func (r *readiness) init(net.Conn) bool { return false }

func (r *readiness) wait() error { return nil }
