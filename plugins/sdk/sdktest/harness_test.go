package sdktest

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/zclconf/go-cty/cty"

	"github.com/hload/hload/plugins/sdk"
)

// upper answers each call with its request's word as the body and the
// call's VU as the status; it refuses the target "bad" at validation.
type upper struct{}

func (upper) Describe() sdk.Info {
	return sdk.Info{
		Name: "upper", Version: "1.0.0",
		TargetSpec:  hcldec.ObjectSpec{"address": &hcldec.AttrSpec{Name: "address", Type: cty.String, Required: true}},
		RequestSpec: hcldec.ObjectSpec{"word": &hcldec.AttrSpec{Name: "word", Type: cty.String}},
		TargetDocs:  map[string]sdk.AttrDoc{"address": {Description: "Where."}},
	}
}

func (upper) Open(context.Context, cty.Value) (sdk.Client, error) { return upperClient{}, nil }

func (upper) ValidateTarget(target cty.Value) (string, error) {
	if a, _ := sdk.StringAttr(target, "address"); a == "bad" {
		return "address", errors.New(`address "bad" is not an address`)
	}
	return "", nil
}

type upperClient struct{}

func (upperClient) Do(_ context.Context, call sdk.Call, emit func(sdk.Sample)) {
	word, _ := sdk.StringAttr(call.Request, "word")
	emit(sdk.Sample{Metric: sdk.MetricRequest, Time: time.Now(), Value: time.Millisecond, Status: int(call.VU), Body: []byte(word)})
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
	var got []sdk.Sample
	c.Do(context.Background(), sdk.Call{VU: 7, KeepBody: true, Request: cty.ObjectVal(map[string]cty.Value{"word": cty.StringVal("hi")})},
		func(s sdk.Sample) { got = append(got, s) })
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

// subscriber watches the key "k" in its calls' ledger from its first call
// on, and reports as each call's status what Watch.Received says of the
// call's id.
type subscriber struct {
	mu    sync.Mutex
	watch *sdk.Watch
}

func (*subscriber) Describe() sdk.Info {
	return sdk.Info{Name: "subscriber", Version: "1", TargetSpec: hcldec.ObjectSpec{},
		RequestSpec: hcldec.ObjectSpec{"id": &hcldec.AttrSpec{Name: "id", Type: cty.String}}}
}

func (s *subscriber) Open(context.Context, cty.Value) (sdk.Client, error) { return s, nil }
func (s *subscriber) Close() error                                        { return nil }
func (s *subscriber) Do(ctx context.Context, call sdk.Call, emit func(sdk.Sample)) {
	s.mu.Lock()
	if s.watch == nil {
		s.watch = sdk.LedgerFrom(ctx).Watch("k")
	}
	w := s.watch
	s.mu.Unlock()
	id, _ := sdk.StringAttr(call.Request, "id")
	emit(sdk.Sample{Metric: sdk.MetricRequest, Time: time.Now(), Status: int(w.Received([]byte(id)))})
}

// TestWithLedgerReachesThePlugin: the sends recorded in a ledger given to
// Open with WithLedger reach the plugin's watches, as a run's do, and are
// received as expected (ReceiptFirst); without it, none ever is.
func TestWithLedgerReachesThePlugin(t *testing.T) {
	for _, given := range []bool{true, false} {
		t.Run(fmt.Sprintf("given=%v", given), func(t *testing.T) {
			h, err := NewHarness(&subscriber{})
			if err != nil {
				t.Fatal(err)
			}
			defer h.Close()
			host, ctx := NewLedger(), context.Background()
			if given {
				ctx = WithLedger(ctx, host)
			}
			c, err := h.Open(ctx, cty.EmptyObjectVal)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			first := false
			// The first watch of a key reaches hload up to a round trip
			// later: send until a send is expected, for at most 2 s.
			for i := 0; i < 200 && !first; i++ {
				id := strconv.Itoa(i)
				host.Begin("k", id).Done(true)
				req := cty.ObjectVal(map[string]cty.Value{"id": cty.StringVal(id)})
				c.Do(context.Background(), sdk.Call{VU: 1, Request: req}, func(s sdk.Sample) {
					first = first || sdk.Receipt(s.Status) == sdk.ReceiptFirst
				})
				time.Sleep(10 * time.Millisecond)
			}
			if first != given {
				t.Errorf("a send was received as expected: %v, want %v", first, given)
			}
		})
	}
}
