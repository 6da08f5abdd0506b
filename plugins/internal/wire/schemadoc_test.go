package wire

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/go-plugin"
	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/zclconf/go-cty/cty"

	"github.com/hload/hload/plugins/proto"
	"github.com/hload/hload/protocols"
)

// documented is a protocol whose schemas carry descriptions and defaults.
// It notes the targets, the validated values and the requests it gets.
type documented struct {
	info protocols.Info

	mu        sync.Mutex
	targets   []cty.Value
	validated []cty.Value
	requests  []cty.Value
}

func newDocumented() *documented {
	return &documented{info: protocols.Info{
		Name: "documented",
		TargetSpec: hcldec.ObjectSpec{
			"address": &hcldec.AttrSpec{Name: "address", Type: cty.String, Required: true},
			"pool":    &hcldec.AttrSpec{Name: "pool", Type: cty.Number},
		},
		RequestSpec: hcldec.ObjectSpec{
			"command": &hcldec.AttrSpec{Name: "command", Type: cty.String},
			"args":    &hcldec.AttrSpec{Name: "args", Type: cty.List(cty.String)},
		},
		TargetDocs: map[string]protocols.AttrDoc{
			"address": {Description: "host:port of the server"},
			"pool":    {Description: "connections per target", Default: cty.NumberIntVal(4)},
		},
		RequestDocs: map[string]protocols.AttrDoc{
			"command": {Default: cty.StringVal("PING")},
			"args":    {Description: "the command's arguments", Default: cty.TupleVal([]cty.Value{cty.StringVal("a")})},
		},
	}}
}

func (d *documented) Describe() protocols.Info { return d.info }

func (d *documented) Open(_ context.Context, target cty.Value) (protocols.Client, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.targets = append(d.targets, target)
	return documentedClient{d}, nil
}

func (d *documented) ValidateRequest(request cty.Value) (string, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.validated = append(d.validated, request)
	return "", nil
}

type documentedClient struct{ d *documented }

func (c documentedClient) Do(_ context.Context, call protocols.Call, emit func(protocols.Sample)) {
	c.d.mu.Lock()
	c.d.requests = append(c.d.requests, call.Request)
	c.d.mu.Unlock()
	okSample(emit)
}

func (documentedClient) Close() error { return nil }

// TestSchemaDocs: descriptions and defaults cross the wire to the host's
// Info, and the protocol receives a default wherever the user left the
// attribute out (Open, Validate, Do), and the user's value elsewhere.
func TestSchemaDocs(t *testing.T) {
	d := newDocumented()
	h, err := newHarness(d, RemoteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	info := h.Describe()
	if got := info.TargetDocs["pool"]; got.Description != "connections per target" || !got.Default.RawEquals(cty.NumberIntVal(4)) {
		t.Errorf("pool: got %#v", got)
	}
	if got := info.TargetDocs["address"]; got.Description != "host:port of the server" || got.Default != cty.NilVal {
		t.Errorf("address: got %#v", got)
	}
	wantArgs := cty.ListVal([]cty.Value{cty.StringVal("a")}) // converted to the attribute's type
	if got := info.RequestDocs["args"]; !got.Default.RawEquals(wantArgs) {
		t.Errorf("args: got %#v", got)
	}

	c, err := h.Open(context.Background(), cty.ObjectVal(map[string]cty.Value{
		"address": cty.StringVal("127.0.0.1:1"), "pool": cty.NullVal(cty.Number),
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	left := cty.ObjectVal(map[string]cty.Value{"command": cty.NullVal(cty.String), "args": cty.NullVal(cty.List(cty.String))})
	given := cty.ObjectVal(map[string]cty.Value{"command": cty.StringVal("GET"), "args": cty.NullVal(cty.List(cty.String))})
	if _, err := h.ValidateRequest(left); err != nil {
		t.Fatal(err)
	}
	for range 3 { // a per-call request, sent by attribute
		collect(context.Background(), c, protocols.Call{Request: left})
		collect(context.Background(), c, protocols.Call{Request: given})
	}
	// A constant request, sent once (the Prepare RPC).
	pl, err := c.(protocols.Preparer).Prepare(left)
	if err != nil {
		t.Fatal(err)
	}
	pg, err := c.(protocols.Preparer).Prepare(given)
	if err != nil {
		t.Fatal(err)
	}
	collect(context.Background(), c, protocols.Call{Request: left, Prepared: pl})
	collect(context.Background(), c, protocols.Call{Request: given, Prepared: pg})
	// A request as one message, as wire version 2 sends it.
	c2 := openDocumented(t, d, 2)
	collect(context.Background(), c2, protocols.Call{Request: left})
	collect(context.Background(), c2, protocols.Call{Request: given})

	d.mu.Lock()
	defer d.mu.Unlock()
	if got := d.targets[0].GetAttr("pool"); !got.RawEquals(cty.NumberIntVal(4)) {
		t.Errorf("Open got pool %#v, want the default 4", got)
	}
	wantLeft := cty.ObjectVal(map[string]cty.Value{"command": cty.StringVal("PING"), "args": wantArgs})
	if len(d.validated) != 1 || !d.validated[0].RawEquals(wantLeft) {
		t.Errorf("ValidateRequest got %#v, want %#v", d.validated, wantLeft)
	}
	wantGiven := cty.ObjectVal(map[string]cty.Value{"command": cty.StringVal("GET"), "args": wantArgs})
	if len(d.requests) != 10 {
		t.Fatalf("Do got %d requests, want 10", len(d.requests))
	}
	for i, r := range d.requests {
		want := wantLeft
		if i%2 == 1 {
			want = wantGiven
		}
		if !r.RawEquals(want) {
			t.Errorf("call %d: Do got %#v, want %#v", i, r, want)
		}
	}
}

// openDocumented opens d through go-plugin's gRPC at a wire version,
// with the pool left out.
func openDocumented(t *testing.T, d *documented, version int) protocols.Client {
	t.Helper()
	gc, _ := plugin.TestPluginGRPCConn(t, false, PluginSets(d)[version])
	t.Cleanup(func() { gc.Close() })
	raw, err := gc.Dispense(PluginName)
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewRemote(context.Background(), raw.(proto.ProtocolClient), RemoteOptions{Name: "documented", ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	c, err := r.Open(context.Background(), cty.ObjectVal(map[string]cty.Value{
		"address": cty.StringVal("127.0.0.1:1"), "pool": cty.NullVal(cty.Number),
	}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestSchemaBadDefault: a default that does not fit its attribute stops
// the plugin at Describe, with its name and the attribute's.
func TestSchemaBadDefault(t *testing.T) {
	for _, tc := range []struct {
		name, attr string
		doc        protocols.AttrDoc
		want       string
	}{
		{"wrong type", "pool", protocols.AttrDoc{Default: cty.StringVal("four")}, `target schema: schema attribute "pool": default: string is not a number`},
		{"required", "address", protocols.AttrDoc{Default: cty.StringVal("127.0.0.1:1")}, `schema attribute "address": default: a required attribute has no default`},
		{"null", "pool", protocols.AttrDoc{Default: cty.NullVal(cty.Number)}, `schema attribute "pool": default: must be a known value, not null`},
		{"undeclared", "poll", protocols.AttrDoc{Description: "typo"}, `attribute "poll" is documented but not in the schema`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := newDocumented()
			d.info.TargetDocs = map[string]protocols.AttrDoc{tc.attr: tc.doc}
			h, err := newHarness(d, RemoteOptions{Name: "documented"})
			if err == nil {
				h.Close()
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), `plugin "documented"`) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %q, want the plugin's name and %q", err, tc.want)
			}
		})
	}
}
