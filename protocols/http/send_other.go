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
