// Package protocoltest runs a protocol's tests on both paths a built-in
// protocol takes: called in-process, and through the plugin wire, the way
// `isolate = true` runs it in a plugin process. The wire here is the
// plugin SDK's harness (plugins/sdk/sdktest), the same server and host code
// over an in-memory connection, so the suite needs no binary.
//
// It sits beside the plugins, above protocols, because it reaches the
// wire: the protocols' tests import it, and no package of protocols does.
package protocoltest

import (
	"testing"

	"github.com/hload/hload/plugins/sdk/sdktest"
	"github.com/hload/hload/protocols"
)

// Path is one way of reaching a protocol.
type Path struct {
	// Name names the path in subtests: "in-process" or "isolated".
	Name string
	// Isolated says the calls cross the plugin wire.
	Isolated bool
	// Reach returns p as the path reaches it. What it starts stops when
	// the test ends.
	Reach func(t testing.TB, p protocols.Protocol) protocols.Protocol
}

// Paths returns the in-process path, then the isolated one.
func Paths() []Path {
	return []Path{
		{Name: "in-process", Reach: func(_ testing.TB, p protocols.Protocol) protocols.Protocol { return p }},
		{Name: "isolated", Isolated: true, Reach: isolate},
	}
}

func isolate(t testing.TB, p protocols.Protocol) protocols.Protocol {
	t.Helper()
	h, err := sdktest.NewHarness(p)
	if err != nil {
		t.Fatalf("starting the plugin harness: %v", err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

// Run runs f once per path, each as a subtest named after the path, with
// p as that path reaches it.
func Run(t *testing.T, p protocols.Protocol, f func(t *testing.T, path Path, p protocols.Protocol)) {
	t.Helper()
	for _, path := range Paths() {
		t.Run(path.Name, func(t *testing.T) {
			f(t, path, path.Reach(t, p))
		})
	}
}
