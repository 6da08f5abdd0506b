package protocols

import (
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"
)

func TestNetErrorKind(t *testing.T) {
	cases := []struct {
		err  error
		want ErrorKind
	}{
		{&net.DNSError{Err: "no such host", Name: "x", IsNotFound: true}, ErrDNS},
		{&net.OpError{Op: "remote error", Err: errors.New("tls: bad certificate")}, ErrTLS},
		{io.ErrUnexpectedEOF, ErrReset},
		{fmt.Errorf("read: %w", io.EOF), ErrReset},
		{errors.New("tls: handshake failure"), ErrTLS},
		{errors.New("malformed HTTP response"), ErrProtocol},
		{fmt.Errorf("dial: %w", syscall.ECONNREFUSED), ErrConnectionRefused},
		{fmt.Errorf("read: %w", syscall.ECONNRESET), ErrReset},
	}
	for _, tc := range cases {
		if got := NetErrorKind(tc.err); got != tc.want {
			t.Errorf("NetErrorKind(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}
