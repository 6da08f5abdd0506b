package http

import (
	"context"
	"errors"

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
	return protocols.NetErrorKind(err)
}
