package http

import (
	"context"
	"errors"
	"fmt"
	nethttp "net/http"
	"time"

	"github.com/hload/hload/protocols"
)

// classify maps a failed call's error to its kind and a message saying why.
// parent is the context Do was given and rctx the call's own, with the
// request timeout: the two tell the run's end apart from a slow server.
// A connection that failed after the request was written ended the call
// itself and said why in st.lost; the transport's error is then only the
// cancellation.
func classify(parent, rctx context.Context, st *callState, err error, timeout time.Duration) (protocols.ErrorKind, string) {
	if parent.Err() != nil {
		return protocols.ErrInterrupted, "the run ended before the response"
	}
	if errors.Is(rctx.Err(), context.DeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) {
		return protocols.ErrTimeout, fmt.Sprintf("no response within the timeout of %v", timeout)
	}
	if l := st.lost.Load(); l != nil {
		switch l.kind {
		case protocols.ErrIdleClosed:
			return l.kind, "the server closed the keep-alive connection before any response: " + l.err.Error()
		case protocols.ErrReset:
			return l.kind, "the connection failed after the request was sent, before any response: " + l.err.Error()
		}
		return l.kind, l.err.Error()
	}
	if isServerClosedIdle(err) {
		return protocols.ErrIdleClosed, err.Error()
	}
	return protocols.NetErrorKind(err), err.Error()
}

// isServerClosedIdle reports net/http's error for a connection its reader
// saw closed while idle, when the transport would not retry the request on
// another. The error is not exported; its text is stable.
func isServerClosedIdle(err error) bool {
	for ; err != nil; err = errors.Unwrap(err) {
		if err.Error() == "http: server closed idle connection" {
			return true
		}
	}
	return false
}

// statusMessage says why a response failed: its status line, and the
// statuses that were expected when the request or target listed them.
func statusMessage(resp *nethttp.Response, expected *statusSet) string {
	status := resp.Status
	if status == "" {
		status = fmt.Sprintf("%d", resp.StatusCode)
	}
	if !expected.set {
		return status
	}
	return status + ", which expected_status does not list"
}
