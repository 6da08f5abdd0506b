// Command badversion is a plugin served under the next wire protocol
// version only, as a plugin built with a newer, incompatible SDK would be.
// hload must refuse it with a clear error and leave no process behind.
//
// It speaks go-plugin itself, as the SDK's internals are not importable
// from here: the handshake's magic cookie is written out, as it is compiled
// into every plugin built with any SDK (it never changes), and the plugin
// set is never reached, since the handshake fails first.
package main

import (
	"context"
	"errors"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/hload/hload/plugins/host"
)

// next is a wire version no hload speaks yet.
const next = host.ProtocolVersion + 1

func main() {
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: plugin.HandshakeConfig{
			ProtocolVersion:  next,
			MagicCookieKey:   "HLOAD_PLUGIN_MAGIC_COOKIE",
			MagicCookieValue: "7c1a3f0e-hload-protocol-plugin",
		},
		VersionedPlugins: map[int]plugin.PluginSet{next: {"protocol": unreachable{}}},
		GRPCServer:       plugin.DefaultGRPCServer,
	})
}

// unreachable is a plugin that no host of this hload can dispense.
type unreachable struct{ plugin.NetRPCUnsupportedPlugin }

func (unreachable) GRPCServer(*plugin.GRPCBroker, *grpc.Server) error { return nil }

func (unreachable) GRPCClient(context.Context, *plugin.GRPCBroker, *grpc.ClientConn) (any, error) {
	return nil, errors.New("badversion: no client")
}
