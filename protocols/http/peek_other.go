//go:build !(linux || darwin)

package http

import "net"

// peerClosed cannot peek on this system; the transport's reader alone
// tells a closed connection.
func peerClosed(*net.TCPConn) bool { return false }
