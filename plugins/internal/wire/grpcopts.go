package wire

import (
	"math"

	"google.golang.org/grpc"
)

// wireWindow is the HTTP/2 flow-control window of the Run stream and its
// connection. Setting it turns off gRPC's bandwidth-delay-product
// estimation, which otherwise answers data frames with pings and window
// updates: a round of extra frames, syscalls and wake-ups on both ends
// for every few batches, on a local socket where the window never binds.
const wireWindow = 4 << 20

// maxMessage lifts gRPC's 4 MB limit on a received message: a batch
// carries whole request bodies one way and kept response bodies the
// other, and one call's body may be larger than that. Over the limit, the
// stream ended, and the plugin with it.
const maxMessage = math.MaxInt32

// GRPCDialOptions are the host's options for the connection to a plugin;
// go-plugin's ClientConfig.GRPCDialOptions.
func GRPCDialOptions() []grpc.DialOption {
	return []grpc.DialOption{
		grpc.WithInitialWindowSize(wireWindow),
		grpc.WithInitialConnWindowSize(wireWindow),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxMessage)),
	}
}

// grpcServerOptions are the plugin's counterparts of GRPCDialOptions.
func grpcServerOptions() []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.InitialWindowSize(wireWindow),
		grpc.InitialConnWindowSize(wireWindow),
		grpc.MaxRecvMsgSize(maxMessage),
	}
}

// newGRPCServer is go-plugin's ServeConfig.GRPCServer with the wire's
// options added to go-plugin's own (its TLS credentials).
func newGRPCServer(opts []grpc.ServerOption) *grpc.Server {
	return grpc.NewServer(append(opts, grpcServerOptions()...)...)
}
