package wire

import (
	"context"
	"testing"

	"github.com/hashicorp/go-plugin"

	"github.com/hload/hload/plugins/proto"
	"github.com/hload/hload/protocols"
)

// openGoPlugin serves do through go-plugin's own gRPC server and client
// over a unix socket, as a plugin process would be, and opens a client.
func openGoPlugin(t testing.TB, do func(context.Context, protocols.Call, func(protocols.Sample))) protocols.Client {
	t.Helper()
	return openGoPluginProtocol(t, &fake{do: do}, ProtocolVersion)
}

// openGoPluginProtocol is openGoPlugin for any protocol, with both ends
// speaking the given wire version.
func openGoPluginProtocol(t testing.TB, impl protocols.Protocol, version int) protocols.Client {
	t.Helper()
	gc, _ := plugin.TestPluginGRPCConn(t, false, PluginSets(impl)[version])
	t.Cleanup(func() { gc.Close() })
	raw, err := gc.Dispense(PluginName)
	if err != nil {
		t.Fatal(err)
	}
	pc, ok := raw.(proto.ProtocolClient)
	if !ok {
		t.Fatalf("dispensed a %T", raw)
	}
	r, err := NewRemote(context.Background(), pc, RemoteOptions{Name: "fake", ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	c, err := r.Open(context.Background(), testTarget)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestGoPlugin(t *testing.T) {
	c := openGoPlugin(t, func(_ context.Context, call protocols.Call, emit func(protocols.Sample)) {
		emit(protocols.Sample{Metric: protocols.MetricRequest, Status: int(call.VU)})
	})
	got := collect(context.Background(), c, protocols.Call{VU: 3, Request: request("/")})
	if len(got) != 1 || got[0].Status != 3 {
		t.Errorf("got %+v", got)
	}
	if err := c.Close(); err != nil {
		t.Error(err)
	}
}
