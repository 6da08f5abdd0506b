package wire

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// rpcErr drops gRPC's wrapping ("rpc error: code = Unknown desc = ...")
// from an error of a call to the plugin: the user reads the plugin's own
// words, or what happened to the connection in plain terms. Errors that
// are not gRPC's are returned as they are.
func rpcErr(err error) error {
	st, ok := status.FromError(err)
	if !ok || err == nil {
		return err
	}
	msg := st.Message()
	switch st.Code() {
	case codes.Unknown:
		// What the plugin's own code returned.
		return errors.New(msg)
	case codes.DeadlineExceeded:
		// Kept as context.DeadlineExceeded, so callers can tell a timeout.
		return fmt.Errorf("no answer in time: %w", context.DeadlineExceeded)
	case codes.Canceled:
		return context.Canceled
	case codes.Unavailable:
		return fmt.Errorf("the plugin is unreachable: %s", msg)
	}
	return fmt.Errorf("%s (%s)", msg, st.Code())
}
