//go:build !(linux || darwin)

package http

import "net"

// peerClosed cannot peek on this system; the transport's reader alone
// tells a closed connection.
func peerClosed(*net.TCPConn) bool { return false }

// What a peek at an idle connection finds.
const (
	peekNothing = iota // nothing came: the connection is open
	peekClosed         // the end of the stream, or an error
	peekBytes          // bytes: over TLS, maybe a close_notify
)

// peeker cannot peek on this system: it finds nothing, and a closed
// connection is seen by the first read after the write.
type peeker struct{}

func (p *peeker) init(net.Conn) {}

func (p *peeker) look() int { return peekNothing }
