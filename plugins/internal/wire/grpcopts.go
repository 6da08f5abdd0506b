package wire

import (
	"google.golang.org/grpc"
)

// wireWindow is the HTTP/2 flow-control window of the Run stream and its
// connection. Setting it turns off gRPC's bandwidth-delay-product
// estimation, which otherwise answers data frames with pings and window
// updates: a round of extra frames, syscalls and wake-ups on both ends
// for every few batches, on a local socket where the window never binds.
const wireWindow = 4 << 20

// GRPCDialOptions are the host's options for the connection to a plugin;
// go-plugin's ClientConfig.GRPCDialOptions.
func GRPCDialOptions() []grpc.DialOption {
	return []grpc.DialOption{
		grpc.WithInitialWindowSize(wireWindow),
		grpc.WithInitialConnWindowSize(wireWindow),
	}
}

// grpcServerOptions are the plugin's counterparts of GRPCDialOptions.
func grpcServerOptions() []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.InitialWindowSize(wireWindow),
		grpc.InitialConnWindowSize(wireWindow),
	}
}

// newGRPCServer is go-plugin's ServeConfig.GRPCServer with the wire's
// options added to go-plugin's own (its TLS credentials).
func newGRPCServer(opts []grpc.ServerOption) *grpc.Server {
	return grpc.NewServer(append(opts, grpcServerOptions()...)...)
}
