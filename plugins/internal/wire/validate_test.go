package wire

import (
	"context"
	"errors"
	"testing"

	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/zclconf/go-cty/cty"
	"google.golang.org/grpc"

	"github.com/hload/hload/plugins/proto"
	"github.com/hload/hload/protocols"
)

// validating is a protocol with validators that check with the same
// function its Open uses, as a plugin's should.
type validating struct {
	fake
	targets, requests int // values its validators were asked about
}

func checkTarget(target cty.Value) (string, error) {
	address, err := protocols.StringAttr(target, "address")
	if err != nil {
		return "address", err
	}
	if address == "unreachable:1" {
		return "", nil // fine to validate: nothing is dialled
	}
	if address == "" || address[0] == ':' {
		return "address", errors.New("address must be host:port")
	}
	return "", nil
}

func (v *validating) Open(ctx context.Context, target cty.Value) (protocols.Client, error) {
	if _, err := checkTarget(target); err != nil {
		return nil, err
	}
	return v.fake.Open(ctx, target)
}

func (v *validating) ValidateTarget(target cty.Value) (string, error) {
	v.targets++
	return checkTarget(target)
}

func (v *validating) ValidateRequest(request cty.Value) (string, error) {
	v.requests++
	if p, _ := protocols.StringAttr(request, "path"); p != "" && p[0] != '/' {
		return "path", errors.New(`path must start with "/"`)
	}
	if request.IsNull() {
		panic("a validator's bug")
	}
	return "", nil
}

var _ interface {
	protocols.TargetValidator
	protocols.RequestValidator
} = (*validating)(nil)

// TestHarnessValidates: the host's Remote asks the plugin's validators,
// which get the values as the plugin's Open would, and their verdict
// comes back with the attribute at fault.
func TestHarnessValidates(t *testing.T) {
	v := &validating{}
	h, err := newHarness(v, RemoteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	var (
		tv protocols.TargetValidator  = h
		rv protocols.RequestValidator = h
	)
	target := func(address string) cty.Value {
		return cty.ObjectVal(map[string]cty.Value{"address": cty.StringVal(address), "options": cty.NullVal(cty.Map(cty.String))})
	}
	for _, tc := range []struct {
		name, address, attr, err string
	}{
		{"good", "127.0.0.1:1", "", ""},
		{"unreachable is not checked", "unreachable:1", "", ""},
		{"bad", ":1", "address", "address must be host:port"},
	} {
		attr, err := tv.ValidateTarget(target(tc.address))
		if attr != tc.attr || errString(err) != tc.err {
			t.Errorf("target %s: got %q, %v; want %q, %q", tc.name, attr, err, tc.attr, tc.err)
		}
	}
	if attr, err := rv.ValidateRequest(request("relative")); attr != "path" || errString(err) != `path must start with "/"` {
		t.Errorf("bad request: got %q, %v", attr, err)
	}
	if attr, err := rv.ValidateRequest(request("/ok")); attr != "" || err != nil {
		t.Errorf("good request: got %q, %v", attr, err)
	}
	// Attributes left out of the value are null, as protocols.Attr reads
	// them in-process.
	partial := cty.ObjectVal(map[string]cty.Value{"path": cty.StringVal("relative")})
	if attr, err := rv.ValidateRequest(partial); attr != "path" || errString(err) != `path must start with "/"` {
		t.Errorf("a request without its other attributes: got %q, %v", attr, err)
	}
	if attr, err := tv.ValidateTarget(cty.ObjectVal(map[string]cty.Value{"address": cty.StringVal(":1")})); attr != "address" {
		t.Errorf("a target without its options: got %q, %v", attr, err)
	}
	// A validator that panics fails the value, not the plugin.
	if _, err := rv.ValidateRequest(cty.NilVal); err == nil || errString(err) != "the plugin's validator panicked: a validator's bug" {
		t.Errorf("panicking validator: got %v", err)
	}
	if attr, err := rv.ValidateRequest(request("/still")); attr != "" || err != nil {
		t.Errorf("after a panic: got %q, %v", attr, err)
	}
	if v.targets != 4 || v.requests != 5 {
		t.Errorf("the plugin's validators saw %d targets and %d requests, want 4 and 5", v.targets, v.requests)
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// TestHarnessWithoutValidators: a plugin whose protocol has no validator
// accepts every value, and is not even asked.
func TestHarnessWithoutValidators(t *testing.T) {
	calls := 0
	h := harnessWith(t, &fake{}, grpc.UnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if info.FullMethod == proto.Protocol_Validate_FullMethodName {
			calls++
		}
		return handler(ctx, req)
	}))
	bad := cty.ObjectVal(map[string]cty.Value{"address": cty.StringVal(":1"), "options": cty.NullVal(cty.Map(cty.String))})
	if attr, err := h.ValidateTarget(bad); attr != "" || err != nil {
		t.Errorf("target: got %q, %v", attr, err)
	}
	if attr, err := h.ValidateRequest(request("relative")); attr != "" || err != nil {
		t.Errorf("request: got %q, %v", attr, err)
	}
	if calls != 0 {
		t.Errorf("Validate was called %d times", calls)
	}
}

// TestOldPluginHasNoValidator: a plugin built before Validate existed
// answers Unimplemented, which the host takes as "no validator", not as
// an error; even when its description claims validators.
func TestOldPluginHasNoValidator(t *testing.T) {
	h := harnessWith(t, &validating{}, grpc.UnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if info.FullMethod == proto.Protocol_Validate_FullMethodName {
			return (proto.UnimplementedProtocolServer{}).Validate(ctx, req.(*proto.ValidateRequest))
		}
		return handler(ctx, req)
	}))
	if !h.validatesTarget || !h.validatesRequest {
		t.Fatal("the plugin did not describe its validators")
	}
	bad := cty.ObjectVal(map[string]cty.Value{"address": cty.StringVal(":1"), "options": cty.NullVal(cty.Map(cty.String))})
	if attr, err := h.ValidateTarget(bad); attr != "" || err != nil {
		t.Errorf("target: got %q, %v", attr, err)
	}
	if attr, err := h.ValidateRequest(request("relative")); attr != "" || err != nil {
		t.Errorf("request: got %q, %v", attr, err)
	}
}

// TestHarnessMetrics: the metrics a protocol declares cross Describe.
func TestHarnessMetrics(t *testing.T) {
	m := &metricsFake{}
	h, err := newHarness(m, RemoteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	got := h.Describe().Metrics
	if len(got) != 1 || got[0] != "lines_sent" {
		t.Errorf("metrics: got %q", got)
	}
	if g := h.Describe().Gauges; len(g) != 1 || g[0] != "open_streams" {
		t.Errorf("gauges: got %q", g)
	}
}

type metricsFake struct{ fake }

func (*metricsFake) Describe() protocols.Info {
	info := fakeInfo
	info.Metrics = []string{"lines_sent"}
	info.Gauges = []string{"open_streams"}
	info.TargetSpec = hcldec.ObjectSpec{"address": info.TargetSpec["address"]}
	return info
}

// harnessWith is newHarness with server options, such as an interceptor
// that plays an older plugin.
func harnessWith(t *testing.T, impl protocols.Protocol, opts ...grpc.ServerOption) *Harness {
	t.Helper()
	h, err := newHarnessOpts(impl, RemoteOptions{}, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}
