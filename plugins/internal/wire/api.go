// Package wire is both ends of the protocol plugins' wire: the plugin's
// gRPC server (what sdk.Serve runs) and the host's Remote (what
// plugins/host hands the core), with the go-plugin handshake and the
// versions they agree on. It is internal so that plugins/sdk shows a
// plugin's author only the author's side.
package wire

import (
	"context"
	"errors"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/hload/hload/plugins/proto"
	"github.com/hload/hload/protocols"
)

// SDKVersion is the SDK's version, which a plugin reports in Describe and
// `hload plugin describe` prints as sdk_version; sdk.Version.
const SDKVersion = "0.1.0"

// ProtocolVersion is the wire protocol's version. It goes up whenever host
// and plugin could no longer safely talk; go-plugin refuses a mismatch.
// Version 3 sends a constant request once (the Prepare RPC) and a
// per-call one by attribute, with a table of types. Version 4 sends a
// per-call request's shape once (the Template RPC), to a plugin whose
// client takes templates, and then each call's holes' values only.
// Within version 4, the Direct RPC carries the Run stream on a
// connection of its own rather than over gRPC; a plugin built before it
// answers Unimplemented, and its stream goes over gRPC.
const ProtocolVersion = 4

// OldestProtocolVersion is the oldest wire version both ends still speak:
// a host offers it and a plugin serves it, beside ProtocolVersion, so a
// plugin built with the SDK of version 2 runs with this hload, and a
// plugin built with this SDK runs with an hload of version 2. The
// handshake agrees on the newest both speak.
const OldestProtocolVersion = 2

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
	sets := make(map[int]plugin.PluginSet, ProtocolVersion-OldestProtocolVersion+1)
	for v := OldestProtocolVersion; v <= ProtocolVersion; v++ {
		sets[v] = plugin.PluginSet{PluginName: &grpcPlugin{impl: impl, version: v}}
	}
	return sets
}

// Serve serves impl over go-plugin until the host asks the plugin to shut
// down. go-plugin sets up mutual TLS on its own when the host asks for
// AutoMTLS.
func Serve(impl protocols.Protocol) {
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
	// version is the wire version the handshake agreed on: the plugin's
	// server answers as a plugin of that version would.
	version int
}

var _ plugin.GRPCPlugin = (*grpcPlugin)(nil)

// GRPCServer implements plugin.GRPCPlugin.
func (p *grpcPlugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	if p.impl == nil {
		return errors.New("wire: no protocol to serve")
	}
	proto.RegisterProtocolServer(s, newServer(p.impl, p.version))
	return nil
}

// GRPCClient implements plugin.GRPCPlugin. It returns a
// proto.ProtocolClient.
func (p *grpcPlugin) GRPCClient(_ context.Context, _ *plugin.GRPCBroker, conn *grpc.ClientConn) (any, error) {
	return proto.NewProtocolClient(conn), nil
}
