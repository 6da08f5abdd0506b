// Command fakeplugin-v2 is the fake protocol built with the SDK of wire
// version 2: the plugin side of plugins/sdk and plugins/proto as they were
// at the last commit before version 3, frozen in ../sdkv2. It is what an
// author's plugin built before version 3 is, for the host's tests of the
// compatibility that docs/plugins.md promises.
package main

import (
	"github.com/hload/hload/plugins/host/testdata/fake"
	"github.com/hload/hload/plugins/host/testdata/sdkv2/sdk"
)

func main() { sdk.Serve(fake.Protocol{}) }
