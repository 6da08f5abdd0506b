// Package sdk is what a protocol plugin's author imports: implement
// protocols.Protocol and protocols.Client, declare the schemas as hcldec
// specs, and call Serve. The package also holds the other end of the wire,
// Remote, which the host uses, and a Harness that runs a protocol through
// the whole wire in-process, for tests.
package sdk

import (
	"context"
	"time"

	"github.com/hashicorp/go-plugin"
	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/zclconf/go-cty/cty"

	"github.com/hload/hload/plugins/proto"
	"github.com/hload/hload/protocols"
)

// Version is the SDK's version, reported by `hload plugin describe`.
const Version = "0.1.0"

// ProtocolVersion is the wire protocol's version. It goes up whenever host
// and plugin could no longer safely talk; go-plugin refuses a mismatch.
const ProtocolVersion = 1

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
	panic("not implemented")
}

// Serve runs impl as a plugin. It is a plugin binary's whole main.
func Serve(impl protocols.Protocol) { panic("not implemented") }

// Harness runs a protocol through the whole wire (the plugin's server and
// the host's Remote over an in-memory gRPC connection) without a process,
// so a plugin's author can test it with `go test`. It implements
// protocols.Protocol.
type Harness struct{ *Remote }

// NewHarness starts impl behind an in-memory connection.
func NewHarness(impl protocols.Protocol) (*Harness, error) { panic("not implemented") }

// Close stops the harness.
func (h *Harness) Close() error { panic("not implemented") }

// RemoteOptions tune the host's end of the wire.
type RemoteOptions struct {
	// Name names the plugin in errors.
	Name string
	// HangTimeout is how long the plugin may send nothing, not even a
	// heartbeat, while calls are pending, before it is declared hung.
	HangTimeout time.Duration
	// Stderr returns the plugin's last stderr lines, for errors.
	Stderr func() []string
}

// Remote is a plugin's protocol seen from the host: it implements
// protocols.Protocol over the wire. Its clients also implement
// protocols.Failer.
type Remote struct{}

// NewRemote describes the plugin behind c and returns its protocol.
func NewRemote(ctx context.Context, c proto.ProtocolClient, opts RemoteOptions) (*Remote, error) {
	panic("not implemented")
}

// Describe implements protocols.Protocol.
func (r *Remote) Describe() protocols.Info { panic("not implemented") }

// Open implements protocols.Protocol.
func (r *Remote) Open(ctx context.Context, target cty.Value) (protocols.Client, error) {
	panic("not implemented")
}

// SchemaToProto encodes a schema of attributes for the wire.
func SchemaToProto(spec hcldec.ObjectSpec) ([]*proto.Attribute, error) { panic("not implemented") }

// SchemaFromProto decodes a schema of attributes from the wire.
func SchemaFromProto(attrs []*proto.Attribute) (hcldec.ObjectSpec, error) {
	panic("not implemented")
}
