package protocoltest

import (
	"context"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/zclconf/go-cty/cty"

	"github.com/hload/hload/protocols"
)

// echo emits the VU it was called for, so a test can tell the call
// arrived with its values.
type echo struct{ calls int }

func (e *echo) Describe() protocols.Info {
	return protocols.Info{
		Name:        "echo",
		Version:     "1",
		TargetSpec:  hcldec.ObjectSpec{"address": &hcldec.AttrSpec{Name: "address", Type: cty.String}},
		RequestSpec: hcldec.ObjectSpec{"message": &hcldec.AttrSpec{Name: "message", Type: cty.String}},
	}
}

func (e *echo) Open(context.Context, cty.Value) (protocols.Client, error) { return e, nil }
func (e *echo) Close() error                                              { return nil }
func (e *echo) Do(_ context.Context, call protocols.Call, emit func(protocols.Sample)) {
	e.calls++
	emit(protocols.Sample{Metric: protocols.MetricRequest, Time: time.Now(), Status: int(call.VU)})
}

func TestRunReachesTheProtocolBothWays(t *testing.T) {
	impl := &echo{}
	var names []string
	Run(t, impl, func(t *testing.T, path Path, p protocols.Protocol) {
		names = append(names, path.Name)
		if _, direct := p.(*echo); direct == path.Isolated {
			t.Errorf("%s path reached the protocol as %T", path.Name, p)
		}
		target := cty.ObjectVal(map[string]cty.Value{"address": cty.StringVal("x")})
		c, err := p.Open(context.Background(), target)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		var status int
		c.Do(context.Background(), protocols.Call{VU: 42}, func(s protocols.Sample) { status = s.Status })
		if status != 42 {
			t.Errorf("status %d, want the VU, 42", status)
		}
	})
	if len(names) != 2 || impl.calls != 2 {
		t.Errorf("paths %v, calls %d; want both paths, one call each", names, impl.calls)
	}
}
