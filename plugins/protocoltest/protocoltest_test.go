package protocoltest

import (
	"context"
	"os/exec"
	"strings"
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

// TestProtocolsImportNothingAbove: no package of protocols imports a
// package above its floor (plugins, config, core, sinks, cmd) outside its
// tests, this one included: the arrows point down, and a protocol's tests
// reach the plugin wire through this package, which sits beside plugins.
func TestProtocolsImportNothingAbove(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{.Imports}}", "../../protocols/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	const module = "github.com/hload/hload/"
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	for _, line := range lines {
		fields := strings.Fields(strings.NewReplacer("[", " ", "]", " ").Replace(line))
		for _, dep := range fields[1:] {
			for _, above := range []string{"plugins", "config", "core", "sinks", "cmd"} {
				if dep == module+above || strings.HasPrefix(dep, module+above+"/") {
					t.Errorf("%s imports %s, above protocols", fields[0], dep)
				}
			}
		}
	}
	if len(lines) < 5 {
		t.Errorf("go list found %d packages under protocols, want protocols, http, sse, amqp, delivery at least:\n%s", len(lines), out)
	}
}
