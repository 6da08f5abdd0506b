// Command badcookie is a plugin whose handshake's magic cookie is not
// hload's, as a binary built for another program would be. hload must
// refuse it with a clear error and leave no process behind.
//
// It speaks go-plugin itself, as the SDK's internals are not importable
// from here; go-plugin refuses to run before it serves anything.
package main

import (
	"context"
	"errors"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/hload/hload/plugins/host"
)

func main() {
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: plugin.HandshakeConfig{
			ProtocolVersion:  host.ProtocolVersion,
			MagicCookieKey:   "HLOAD_PLUGIN_MAGIC_COOKIE",
			MagicCookieValue: "not-hloads-cookie",
		},
		VersionedPlugins: map[int]plugin.PluginSet{host.ProtocolVersion: {"protocol": unreachable{}}},
		GRPCServer:       plugin.DefaultGRPCServer,
	})
}

// unreachable is a plugin that hload never dispenses.
type unreachable struct{ plugin.NetRPCUnsupportedPlugin }

func (unreachable) GRPCServer(*plugin.GRPCBroker, *grpc.Server) error { return nil }

func (unreachable) GRPCClient(context.Context, *plugin.GRPCBroker, *grpc.ClientConn) (any, error) {
	return nil, errors.New("badcookie: no client")
}
