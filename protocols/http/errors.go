package http

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/hload/hload/protocols"
)

// classify maps a failed call's error to its kind. parent is the context
// Do was given and rctx the call's own, with the request timeout: the two
// tell the run's end apart from a slow server.
func classify(parent, rctx context.Context, err error) protocols.ErrorKind {
	if parent.Err() != nil {
		return protocols.ErrInterrupted
	}
	if errors.Is(rctx.Err(), context.DeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) {
		return protocols.ErrTimeout
	}
	return classifyErr(err)
}

// classifyErr maps an error that is not a context's to its kind.
func classifyErr(err error) protocols.ErrorKind {
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		return protocols.ErrDNS
	}
	if errors.Is(err, syscall.ECONNREFUSED) {
		return protocols.ErrConnectionRefused
	}
	if isTLS(err) {
		return protocols.ErrTLS
	}
	if errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, syscall.ECONNABORTED) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) {
		return protocols.ErrReset
	}
	var netErr net.Error
	if errors.As(err, &netErr) && netErr.Timeout() {
		return protocols.ErrTimeout
	}
	if strings.Contains(err.Error(), "tls: ") {
		// crypto/tls reports many handshake failures as plain errors.
		return protocols.ErrTLS
	}
	return protocols.ErrProtocol
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
