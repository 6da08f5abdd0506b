package sse

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"strings"
	"syscall"

	"github.com/hload/hload/protocols"
)

// classifyErr maps a connection error to its kind, as the http protocol
// does.
func classifyErr(err error) protocols.ErrorKind {
	var dnsErr *net.DNSError
	var tlsAlert tls.AlertError
	var verify *tls.CertificateVerificationError
	var header tls.RecordHeaderError
	var authority x509.UnknownAuthorityError
	var hostname x509.HostnameError
	var netErr net.Error
	switch {
	case errors.As(err, &dnsErr):
		return protocols.ErrDNS
	case errors.Is(err, syscall.ECONNREFUSED):
		return protocols.ErrConnectionRefused
	case errors.As(err, &tlsAlert), errors.As(err, &verify), errors.As(err, &header),
		errors.As(err, &authority), errors.As(err, &hostname), strings.Contains(err.Error(), "tls: "):
		return protocols.ErrTLS
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE),
		errors.Is(err, syscall.ECONNABORTED), errors.Is(err, net.ErrClosed):
		return protocols.ErrReset
	case errors.As(err, &netErr) && netErr.Timeout():
		return protocols.ErrTimeout
	}
	return protocols.ErrProtocol
}
