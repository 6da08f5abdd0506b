package wire

import (
	"context"
	"errors"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// TestRPCErr: the errors of calls to a plugin reach the user without
// gRPC's "rpc error: code = ... desc = ..." wrapping.
func TestRPCErr(t *testing.T) {
	plain := errors.New("plain")
	for _, tc := range []struct {
		in   error
		want string
	}{
		{status.Error(codes.Unknown, `no host "x"`), `no host "x"`},
		{status.Error(codes.Unavailable, "error reading from server: EOF"), "the plugin is unreachable: error reading from server: EOF"},
		{status.Error(codes.DeadlineExceeded, "context deadline exceeded"), "no answer in time: context deadline exceeded"},
		{status.Error(codes.Internal, "oops"), "oops (Internal)"},
		{plain, "plain"},
	} {
		got := rpcErr(tc.in)
		if got.Error() != tc.want || strings.Contains(got.Error(), "rpc error") {
			t.Errorf("rpcErr(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	if !errors.Is(rpcErr(status.Error(codes.DeadlineExceeded, "x")), context.DeadlineExceeded) {
		t.Error("a gRPC deadline is no longer a context.DeadlineExceeded")
	}
	if rpcErr(nil) != nil {
		t.Error("rpcErr(nil) is not nil")
	}
}
