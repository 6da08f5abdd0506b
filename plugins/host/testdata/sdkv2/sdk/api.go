// Package sdk is what a protocol plugin's author imports: implement
// protocols.Protocol and protocols.Client, declare the schemas as hcldec
// specs, and call Serve. The package also holds the other end of the wire,
// Remote, which the host uses, and a Harness that runs a protocol through
// the whole wire in-process, for tests.
package sdk

import (
	"context"
	"errors"
	"os"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/hload/hload/plugins/host/testdata/sdkv2/proto"
	"github.com/hload/hload/plugins/internal/sched"
	"github.com/hload/hload/protocols"
)

// Version is the SDK's version, reported by `hload plugin describe`.
const Version = "0.1.0"

// ProtocolVersion is the wire protocol's version. It goes up whenever host
// and plugin could no longer safely talk; go-plugin refuses a mismatch.
const ProtocolVersion = 2

// PluginName is the name of the one plugin a plugin binary serves.
const PluginName = "protocol"

// Handshake is the go-plugin handshake. The magic cookie must never change:
// it only tells a plugin binary that hload started it.
func Handshake() plugin.HandshakeConfig {
	return plugin.HandshakeConfig{
		ProtocolVersion:  ProtocolVersion,
		MagicCookieKey:   "HLOAD_PLUGIN_MAGIC_COOKIE",
		MagicCookieValue: "7c1a3f0e-hload-protocol-plugin",
	}
}

// PluginSets returns go-plugin's versioned plugin sets. impl is the
// protocol on the plugin side and nil on the host side.
func PluginSets(impl protocols.Protocol) map[int]plugin.PluginSet {
	return map[int]plugin.PluginSet{
		ProtocolVersion: {PluginName: &grpcPlugin{impl: impl}},
	}
}

// Serve runs impl as a plugin. It is a plugin binary's whole main.
// go-plugin sets up mutual TLS on its own when the host asks for AutoMTLS.
func Serve(impl protocols.Protocol) {
	// Best effort: a plugin runs the same, only slower, without it.
	sched.YieldIfAsked(os.LookupEnv)
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig:  Handshake(),
		VersionedPlugins: PluginSets(impl),
		GRPCServer:       newGRPCServer,
	})
}

// grpcPlugin is the go-plugin glue: it serves a protocol on the plugin
// side and hands the host the raw gRPC client, which the host wraps with
// NewRemote once it knows the plugin's name and stderr.
type grpcPlugin struct {
	plugin.NetRPCUnsupportedPlugin
	impl protocols.Protocol
}

var _ plugin.GRPCPlugin = (*grpcPlugin)(nil)

// GRPCServer implements plugin.GRPCPlugin.
func (p *grpcPlugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	if p.impl == nil {
		return errors.New("sdk: no protocol to serve")
	}
	proto.RegisterProtocolServer(s, newServer(p.impl))
	return nil
}

// GRPCClient implements plugin.GRPCPlugin. It returns a
// proto.ProtocolClient.
func (p *grpcPlugin) GRPCClient(_ context.Context, _ *plugin.GRPCBroker, conn *grpc.ClientConn) (any, error) {
	return proto.NewProtocolClient(conn), nil
}
