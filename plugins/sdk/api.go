// Package sdk is the one package a protocol plugin's author imports:
// implement Protocol and Client, declare the schemas as hcldec specs in an
// Info, read the attributes with the helpers, emit a Sample per call, and
// call Serve. Its types are hload's own (package protocols), under the
// SDK's name; what only hload's side uses is not here. To test a plugin
// through the whole wire without a process, see package sdktest.
package sdk

import (
	"os"

	"github.com/hload/hload/plugins/internal/sched"
	"github.com/hload/hload/plugins/internal/wire"
)

// Version is the SDK's version, reported by `hload plugin describe` as
// sdk_version.
const Version = "0.1.0"

// Serve runs impl as a plugin. It is a plugin binary's whole main: it
// returns when hload asks the plugin to stop, which is how hload ends
// every plugin it started.
func Serve(impl Protocol) {
	// Best effort: a plugin runs the same, only slower, without it.
	sched.YieldIfAsked(os.LookupEnv)
	// A plugin killed outright (hung, or slow to stop) leaves no profile.
	stop := startProfile(os.LookupEnv)
	defer stop()
	wire.Serve(impl)
}
