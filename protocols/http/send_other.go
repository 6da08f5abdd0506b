//go:build !(linux || darwin)

package http

import (
	"net"
	"syscall"
)

// rawOf returns nil: send writes through the conn.
func rawOf(net.Conn) syscall.RawConn { return nil }

// send writes wire on cn; the response is read as usual.
func (cn *h1conn) send(wire []byte) (int, error) { return cn.conn.Write(wire) }

// exchange is send's state on the systems where send writes and reads
// as usual: none.
type exchange struct{}

func (x *exchange) step(uintptr) bool { return true }
