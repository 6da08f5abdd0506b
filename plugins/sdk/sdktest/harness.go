// Package sdktest tests a protocol plugin through the whole wire without a
// process: import it from a plugin's tests, beside plugins/sdk.
package sdktest

import (
	"context"

	"github.com/zclconf/go-cty/cty"
	"google.golang.org/grpc/test/bufconn"

	"github.com/hload/hload/plugins/internal/wire"
	"github.com/hload/hload/protocols"
)

// Harness runs a protocol through the whole wire: the plugin's server, as
// sdk.Serve runs it, and hload's end, as a run uses it, on the two ends of
// an in-memory gRPC connection. Its Describe returns the schemas as they
// crossed the wire, and Open, the clients' Do and Close, and the
// validators behave as they do behind a real plugin binary.
type Harness struct {
	h *wire.Harness
}

var (
	_ protocols.Protocol         = (*Harness)(nil)
	_ protocols.TargetValidator  = (*Harness)(nil)
	_ protocols.RequestValidator = (*Harness)(nil)
)

// buffer is the in-memory connection's buffer; the size of a socket
// buffer, so flow control behaves roughly as over a unix socket.
const buffer = 1 << 20

// NewHarness starts impl behind an in-memory connection. Close it when
// done.
func NewHarness(impl protocols.Protocol) (*Harness, error) {
	h, err := wire.NewHarness(impl, wire.RemoteOptions{}, bufconn.Listen(buffer))
	if err != nil {
		return nil, err
	}
	return &Harness{h: h}, nil
}

// Describe implements protocols.Protocol: the protocol as it described
// itself across the wire.
func (h *Harness) Describe() protocols.Info { return h.h.Describe() }

// Open implements protocols.Protocol: the plugin opens target, and the
// client's calls cross the wire.
func (h *Harness) Open(ctx context.Context, target cty.Value) (protocols.Client, error) {
	return h.h.Open(ctx, target)
}

// ValidateTarget implements protocols.TargetValidator as hload calls a
// plugin's: a protocol without a validator accepts every target.
func (h *Harness) ValidateTarget(target cty.Value) (string, error) {
	return h.h.ValidateTarget(target)
}

// ValidateRequest implements protocols.RequestValidator, as ValidateTarget.
func (h *Harness) ValidateRequest(request cty.Value) (string, error) {
	return h.h.ValidateRequest(request)
}

// Close stops the harness: it closes the clients still open on both ends,
// then the connection and the server. It is safe to call twice.
func (h *Harness) Close() error { return h.h.Close() }
