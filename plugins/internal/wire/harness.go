package wire

import (
	"context"
	"net"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/hload/hload/plugins/proto"
	"github.com/hload/hload/protocols"
)

// Harness runs a protocol through the whole wire (the plugin's server and
// the host's Remote over an in-process connection) without a process. It
// implements protocols.Protocol. sdktest.Harness is its author's face.
type Harness struct {
	*Remote

	server    *server
	grpc      *grpc.Server
	conn      *grpc.ClientConn
	closeOnce sync.Once
}

// Listener is an in-process listener that a dialer connects to, such as
// grpc/test/bufconn's: the connection a Harness runs over. It is the
// caller's, so that this package, linked into hload and every plugin,
// holds no test-only gRPC package.
type Listener interface {
	net.Listener
	DialContext(ctx context.Context) (net.Conn, error)
}

// NewHarness serves impl on lis and connects a Remote to it. Both ends
// speak the wire version opts ask for, as a handshake would agree on, with
// the gRPC options a plugin process and hload use; serverOpts are added to
// the server's, for tests that play an older or broken plugin.
func NewHarness(impl protocols.Protocol, opts RemoteOptions, lis Listener, serverOpts ...grpc.ServerOption) (*Harness, error) {
	srv := newServer(impl, opts.protocolVersion())
	// Direct connections go over memory too.
	var direct memNet
	srv.listen, opts.dial = direct.listen, direct.dial
	gs := grpc.NewServer(append(grpcServerOptions(), serverOpts...)...)
	proto.RegisterProtocolServer(gs, srv)
	go gs.Serve(lis)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := grpc.DialContext(ctx, "in-process", append(GRPCDialOptions(),
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) {
			return lis.DialContext(ctx)
		}),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
	)...)
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
		h.server.closeDirects()
		h.server.closeAll()
	})
	return nil
}
