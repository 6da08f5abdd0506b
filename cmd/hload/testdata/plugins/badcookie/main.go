// Command badcookie is the lines example protocol behind a handshake whose
// magic cookie is not hload's, as a binary built for another program would
// be. hload must refuse it with a clear error and leave no process behind.
package main

import (
	"github.com/hashicorp/go-plugin"

	"github.com/hload/hload/examples/plugins/lines/lines"
	"github.com/hload/hload/plugins/sdk"
)

func main() {
	hs := sdk.Handshake()
	hs.MagicCookieValue = "not-hloads-cookie"
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig:  hs,
		VersionedPlugins: sdk.PluginSets(lines.New()),
		GRPCServer:       plugin.DefaultGRPCServer,
	})
}
