// Package sdktest tests a protocol plugin through the whole wire without a
// process: import it from a plugin's tests, beside plugins/sdk. Its
// Harness is an sdk.Protocol, so a test can run the same cases on the
// plugin's protocol called directly and through the harness.
package sdktest

import (
	"context"

	"github.com/zclconf/go-cty/cty"
	"google.golang.org/grpc/test/bufconn"

	"github.com/hload/hload/plugins/internal/wire"
	"github.com/hload/hload/plugins/sdk"
	"github.com/hload/hload/protocols/delivery"
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
	_ sdk.Protocol         = (*Harness)(nil)
	_ sdk.TargetValidator  = (*Harness)(nil)
	_ sdk.RequestValidator = (*Harness)(nil)
)

// buffer is the in-memory connection's buffer; the size of a socket
// buffer, so flow control behaves roughly as over a unix socket.
const buffer = 1 << 20

// NewHarness starts impl behind an in-memory connection. Close it when
// done.
func NewHarness(impl sdk.Protocol) (*Harness, error) {
	h, err := wire.NewHarness(impl, wire.RemoteOptions{}, bufconn.Listen(buffer))
	if err != nil {
		return nil, err
	}
	return &Harness{h: h}, nil
}

// Describe implements sdk.Protocol: the protocol as it described
// itself across the wire.
func (h *Harness) Describe() sdk.Info { return h.h.Describe() }

// Open implements sdk.Protocol: the plugin opens target, and the
// client's calls cross the wire.
func (h *Harness) Open(ctx context.Context, target cty.Value) (sdk.Client, error) {
	return h.h.Open(ctx, target)
}

// ValidateTarget implements sdk.TargetValidator as hload calls a
// plugin's: a protocol without a validator accepts every target.
func (h *Harness) ValidateTarget(target cty.Value) (string, error) {
	return h.h.ValidateTarget(target)
}

// ValidateRequest implements sdk.RequestValidator, as ValidateTarget.
func (h *Harness) ValidateRequest(request cty.Value) (string, error) {
	return h.h.ValidateRequest(request)
}

// Close stops the harness: it closes the clients still open on both ends,
// then the connection and the server. It is safe to call twice.
func (h *Harness) Close() error { return h.h.Close() }

// NewLedger returns a run's delivery ledger, for a subscriber's test: pass
// it in Open's context with WithLedger, and record sends in it with Begin
// and Done, as hload does for the requests with delivery; the plugin's
// watches see them as they would in a run.
func NewLedger() *sdk.Ledger { return delivery.NewLedger() }

// WithLedger returns ctx carrying l, as hload passes its ledger to Open and
// to every call; sdk.LedgerFrom finds it.
func WithLedger(ctx context.Context, l *sdk.Ledger) context.Context {
	return delivery.WithLedger(ctx, l)
}
