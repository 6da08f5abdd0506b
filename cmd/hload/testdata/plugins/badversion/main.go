// Command badversion is the lines example protocol served under the next
// wire protocol version only, as a plugin built with a newer, incompatible
// SDK would be. hload must refuse it with a clear error and leave no
// process behind.
package main

import (
	"github.com/hashicorp/go-plugin"

	"github.com/hload/hload/examples/plugins/lines/lines"
	"github.com/hload/hload/plugins/sdk"
)

func main() {
	const next = sdk.ProtocolVersion + 1
	hs := sdk.Handshake()
	hs.ProtocolVersion = next
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig:  hs,
		VersionedPlugins: map[int]plugin.PluginSet{next: sdk.PluginSets(lines.New())[sdk.ProtocolVersion]},
		GRPCServer:       plugin.DefaultGRPCServer,
	})
}
