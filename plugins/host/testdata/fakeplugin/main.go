// Command fakeplugin is a tiny protocol plugin for the host's tests. Its
// first argument picks a behaviour:
//
//	serve          serve the "fake" protocol (the default)
//	stderr N       write N numbered lines to stderr, then serve
//	hang           never answer the handshake
//	wrong-cookie   serve with another magic cookie
//	wrong-version  serve protocol version 99 only
//	v1             serve wire version 1 only, as a plugin built with an SDK
//	               older than any this hload speaks
//	v2             serve wire version 2 only, with this SDK's server
//	               answering as a plugin of that version (fakeplugin-v2
//	               is one built with the SDK of that version)
//	v3             serve wire version 3 only, likewise
//
// The protocol is package fake's.
package main

import (
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/hashicorp/go-plugin"

	"github.com/hload/hload/plugins/host/testdata/fake"
	"github.com/hload/hload/plugins/internal/wire"
	"github.com/hload/hload/plugins/sdk"
)

func main() {
	mode := "serve"
	if len(os.Args) > 1 {
		mode = os.Args[1]
	}
	switch mode {
	case "serve":
		sdk.Serve(fake.Protocol{})
	case "stderr":
		n, _ := strconv.Atoi(os.Args[2])
		for i := 1; i <= n; i++ {
			fmt.Fprintf(os.Stderr, "fake line %d\n", i)
		}
		sdk.Serve(fake.Protocol{})
	case "hang":
		fmt.Fprintln(os.Stderr, "fake: hanging at start")
		time.Sleep(time.Hour)
	case "wrong-cookie":
		hs := wire.Handshake()
		hs.MagicCookieValue = "another-program"
		plugin.Serve(&plugin.ServeConfig{
			HandshakeConfig:  hs,
			VersionedPlugins: wire.PluginSets(fake.Protocol{}),
			GRPCServer:       plugin.DefaultGRPCServer,
		})
	case "wrong-version":
		hs := wire.Handshake()
		hs.ProtocolVersion = 99
		plugin.Serve(&plugin.ServeConfig{
			HandshakeConfig:  hs,
			VersionedPlugins: map[int]plugin.PluginSet{99: wire.PluginSets(fake.Protocol{})[wire.ProtocolVersion]},
			GRPCServer:       plugin.DefaultGRPCServer,
		})
	case "v1":
		hs := wire.Handshake()
		hs.ProtocolVersion = 1
		plugin.Serve(&plugin.ServeConfig{
			HandshakeConfig:  hs,
			VersionedPlugins: map[int]plugin.PluginSet{1: wire.PluginSets(fake.Protocol{})[wire.OldestProtocolVersion]},
			GRPCServer:       plugin.DefaultGRPCServer,
		})
	case "v2", "v3":
		v := int(mode[1] - '0')
		plugin.Serve(&plugin.ServeConfig{
			HandshakeConfig:  wire.Handshake(),
			VersionedPlugins: map[int]plugin.PluginSet{v: wire.PluginSets(fake.Protocol{})[v]},
			GRPCServer:       plugin.DefaultGRPCServer,
		})
	default:
		fmt.Fprintf(os.Stderr, "fakeplugin: unknown mode %q\n", mode)
		os.Exit(2)
	}
}
