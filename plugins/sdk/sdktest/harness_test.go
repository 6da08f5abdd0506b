package sdktest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/zclconf/go-cty/cty"

	"github.com/hload/hload/protocols"
)

// upper answers each call with its request's word as the body and the
// call's VU as the status; it refuses the target "bad" at validation.
type upper struct{}

func (upper) Describe() protocols.Info {
	return protocols.Info{
		Name: "upper", Version: "1.0.0",
		TargetSpec:  hcldec.ObjectSpec{"address": &hcldec.AttrSpec{Name: "address", Type: cty.String, Required: true}},
		RequestSpec: hcldec.ObjectSpec{"word": &hcldec.AttrSpec{Name: "word", Type: cty.String}},
		TargetDocs:  map[string]protocols.AttrDoc{"address": {Description: "Where."}},
	}
}

func (upper) Open(context.Context, cty.Value) (protocols.Client, error) { return upperClient{}, nil }

func (upper) ValidateTarget(target cty.Value) (string, error) {
	if a, _ := protocols.StringAttr(target, "address"); a == "bad" {
		return "address", errors.New(`address "bad" is not an address`)
	}
	return "", nil
}

type upperClient struct{}

func (upperClient) Do(_ context.Context, call protocols.Call, emit func(protocols.Sample)) {
	word, _ := protocols.StringAttr(call.Request, "word")
	emit(protocols.Sample{Metric: protocols.MetricRequest, Time: time.Now(), Value: time.Millisecond, Status: int(call.VU), Body: []byte(word)})
}

func (upperClient) Close() error { return nil }

// TestHarness: a protocol behind the harness describes itself as it
// declared, validates through the wire, and its calls come back with their
// samples; Close is safe twice.
func TestHarness(t *testing.T) {
	h, err := NewHarness(upper{})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	info := h.Describe()
	if info.Name != "upper" || info.Version != "1.0.0" || info.TargetDocs["address"].Description != "Where." ||
		!hcldec.ImpliedType(info.RequestSpec).Equals(hcldec.ImpliedType(upper{}.Describe().RequestSpec)) {
		t.Errorf("Describe = %+v", info)
	}
	bad := cty.ObjectVal(map[string]cty.Value{"address": cty.StringVal("bad")})
	if attr, err := h.ValidateTarget(bad); attr != "address" || err == nil || err.Error() != `address "bad" is not an address` {
		t.Errorf("ValidateTarget = %q, %v; want the protocol's refusal of address", attr, err)
	}
	if attr, err := h.ValidateRequest(cty.ObjectVal(map[string]cty.Value{"word": cty.StringVal("x")})); attr != "" || err != nil {
		t.Errorf("ValidateRequest = %q, %v; the protocol has no request validator", attr, err)
	}
	c, err := h.Open(context.Background(), cty.ObjectVal(map[string]cty.Value{"address": cty.StringVal("here")}))
	if err != nil {
		t.Fatal(err)
	}
	var got []protocols.Sample
	c.Do(context.Background(), protocols.Call{VU: 7, KeepBody: true, Request: cty.ObjectVal(map[string]cty.Value{"word": cty.StringVal("hi")})},
		func(s protocols.Sample) { got = append(got, s) })
	if len(got) != 1 || got[0].Status != 7 || string(got[0].Body) != "hi" || got[0].Value != time.Millisecond {
		t.Errorf("samples %+v, want one of status 7, body hi, 1ms", got)
	}
	if err := h.Close(); err != nil {
		t.Errorf("Close = %v", err)
	}
	if err := h.Close(); err != nil {
		t.Errorf("a second Close = %v", err)
	}
}
