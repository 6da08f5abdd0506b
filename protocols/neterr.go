package protocols

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"
)

// NetErrorKind maps a connection's error to its kind: dns,
// connection_refused, tls, reset (an EOF before the answer included),
// timeout, else protocol. Protocols that dial TCP share it, so the same
// failure gets the same kind whatever the protocol; a context's error is
// for the caller to tell first (the run's end against the call's timeout).
func NetErrorKind(err error) ErrorKind {
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		return ErrDNS
	}
	if errors.Is(err, syscall.ECONNREFUSED) {
		return ErrConnectionRefused
	}
	if isTLS(err) {
		return ErrTLS
	}
	if errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, syscall.ECONNABORTED) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) {
		return ErrReset
	}
	var netErr net.Error
	if errors.As(err, &netErr) && netErr.Timeout() {
		return ErrTimeout
	}
	if strings.Contains(err.Error(), "tls: ") {
		// crypto/tls reports many handshake failures as plain errors.
		return ErrTLS
	}
	return ErrProtocol
}

func isTLS(err error) bool {
	var (
		verify    *tls.CertificateVerificationError
		header    tls.RecordHeaderError
		alert     tls.AlertError
		authority x509.UnknownAuthorityError
		hostname  x509.HostnameError
		invalid   x509.CertificateInvalidError
		system    x509.SystemRootsError
		op        *net.OpError
	)
	if errors.As(err, &op) && op.Op == "remote error" {
		return true // an alert from the server; its type is unexported
	}
	return errors.As(err, &verify) || errors.As(err, &header) || errors.As(err, &alert) ||
		errors.As(err, &authority) || errors.As(err, &hostname) || errors.As(err, &invalid) ||
		errors.As(err, &system)
}
