package sdk

import (
	"context"
	"net"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/test/bufconn"

	"github.com/hload/hload/plugins/proto"
	"github.com/hload/hload/protocols"
)

// Harness runs a protocol through the whole wire (the plugin's server and
// the host's Remote over an in-memory gRPC connection) without a process,
// so a plugin's author can test it with `go test`. It implements
// protocols.Protocol.
type Harness struct {
	*Remote

	server    *server
	grpc      *grpc.Server
	conn      *grpc.ClientConn
	closeOnce sync.Once
}

// harnessBuffer is the in-memory connection's buffer; the size of a socket
// buffer, so flow control behaves roughly as over a unix socket.
const harnessBuffer = 1 << 20

// NewHarness starts impl behind an in-memory connection.
func NewHarness(impl protocols.Protocol) (*Harness, error) {
	return newHarness(impl, RemoteOptions{})
}

func newHarness(impl protocols.Protocol, opts RemoteOptions) (*Harness, error) {
	return newHarnessOpts(impl, opts)
}

// newHarnessOpts is newHarness with the gRPC server's options, for tests
// that play an older or broken plugin.
func newHarnessOpts(impl protocols.Protocol, opts RemoteOptions, serverOpts ...grpc.ServerOption) (*Harness, error) {
	lis := bufconn.Listen(harnessBuffer)
	// Both ends speak the version the options ask for, as a handshake
	// would agree on.
	srv := newServer(impl, opts.protocolVersion())
	gs := grpc.NewServer(serverOpts...)
	proto.RegisterProtocolServer(gs, srv)
	go gs.Serve(lis)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := grpc.DialContext(ctx, "bufconn",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) {
			return lis.DialContext(ctx)
		}),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
	)
	if err != nil {
		gs.Stop()
		return nil, err
	}
	r, err := NewRemote(ctx, proto.NewProtocolClient(conn), opts)
	if err != nil {
		conn.Close()
		gs.Stop()
		return nil, err
	}
	return &Harness{Remote: r, server: srv, grpc: gs, conn: conn}, nil
}

// Close stops the harness: it closes the clients still open on both ends,
// then the connection and the server. It is safe to call twice.
func (h *Harness) Close() error {
	h.closeOnce.Do(func() {
		h.Remote.closeClients()
		h.conn.Close()
		h.grpc.Stop()
		h.server.closeAll()
	})
	return nil
}
