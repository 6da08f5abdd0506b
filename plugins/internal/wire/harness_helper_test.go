package wire

import (
	"google.golang.org/grpc"
	"google.golang.org/grpc/test/bufconn"

	"github.com/hload/hload/protocols"
)

// harnessBuffer is the in-memory connection's buffer; the size of a socket
// buffer, so flow control behaves roughly as over a unix socket. The same
// as sdktest's.
const harnessBuffer = 1 << 20

// newHarness is NewHarness over an in-memory connection, as sdktest runs it.
func newHarness(impl protocols.Protocol, opts RemoteOptions) (*Harness, error) {
	return newHarnessOpts(impl, opts)
}

// newHarnessOpts is newHarness with the gRPC server's options, for tests
// that play an older or broken plugin.
func newHarnessOpts(impl protocols.Protocol, opts RemoteOptions, serverOpts ...grpc.ServerOption) (*Harness, error) {
	return NewHarness(impl, opts, bufconn.Listen(harnessBuffer), serverOpts...)
}
