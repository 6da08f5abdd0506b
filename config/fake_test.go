package config

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/hcl/v2"

	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/zclconf/go-cty/cty"

	"github.com/hload/hload/protocols"
)

// fakeProtocol is an "http"-like protocol that only declares schemas.
type fakeProtocol struct{ info protocols.Info }

func (p fakeProtocol) Describe() protocols.Info { return p.info }

func (p fakeProtocol) Open(context.Context, cty.Value) (protocols.Client, error) {
	return nil, errors.New("fake protocol: Open is not implemented")
}

var _ protocols.Protocol = fakeProtocol{}

func attr(name string, ty cty.Type, required bool) *hcldec.AttrSpec {
	return &hcldec.AttrSpec{Name: name, Type: ty, Required: required}
}

// fakeHTTP mirrors the schemas of the built-in http protocol.
var fakeHTTP = fakeProtocol{protocols.Info{
	Name:    "http",
	Version: "0.0.0-test",
	TargetSpec: hcldec.ObjectSpec{
		"base_url":             attr("base_url", cty.String, true),
		"headers":              attr("headers", cty.Map(cty.String), false),
		"timeout":              attr("timeout", cty.String, false),
		"insecure_skip_verify": attr("insecure_skip_verify", cty.Bool, false),
	},
	RequestSpec: hcldec.ObjectSpec{
		"method":  attr("method", cty.String, false),
		"path":    attr("path", cty.String, false),
		"query":   attr("query", cty.Map(cty.String), false),
		"headers": attr("headers", cty.Map(cty.String), false),
		"body":    attr("body", cty.String, false),
		"json":    attr("json", cty.DynamicPseudoType, false),
		"form":    attr("form", cty.Map(cty.String), false),
		"timeout": attr("timeout", cty.String, false),
	},
	Metrics: []string{protocols.MetricTTFB, protocols.MetricConnect},
}}

// fakeEcho is a second protocol with a required request attribute, and
// a gauge.
var fakeEcho = fakeProtocol{protocols.Info{
	Name:       "echo",
	Version:    "0.0.0-test",
	TargetSpec: hcldec.ObjectSpec{"address": attr("address", cty.String, true)},
	RequestSpec: hcldec.ObjectSpec{
		"message": attr("message", cty.String, true),
	},
	Gauges: []string{"echo_open_connections"},
}}

// testOptions returns the options every test loads with.
func testOptions() Options {
	return Options{
		Protocols: protocols.NewRegistry(fakeHTTP, fakeEcho),
		Sinks: map[string]hcldec.ObjectSpec{
			"csv": {
				"path": attr("path", cty.String, true),
				"raw":  attr("raw", cty.Bool, false),
			},
		},
		DemoURL: func() (string, error) { return "http://127.0.0.1:9999", nil },
	}
}

// fakeKV is a plugin's protocol that checks its values as the plugins'
// Validate call does: a timeout must be a duration, in the target and in a
// request. Open uses the same check, so the two cannot disagree.
type fakeKV struct{ fakeProtocol }

func newFakeKV(name string) fakeKV {
	return fakeKV{fakeProtocol{protocols.Info{
		Name:    name,
		Version: "0.0.0-test",
		TargetSpec: hcldec.ObjectSpec{
			"address": attr("address", cty.String, true),
			"timeout": attr("timeout", cty.String, false),
		},
		RequestSpec: hcldec.ObjectSpec{
			"key":     attr("key", cty.String, true),
			"timeout": attr("timeout", cty.String, false),
		},
		Metrics: []string{"kv_misses"},
	}}}
}

// checkTimeout is fakeKV's one decoder of a timeout attribute.
func checkTimeout(v cty.Value) (string, error) {
	s, err := protocols.StringAttr(v, "timeout")
	if err != nil || s == "" {
		return "", err
	}
	if d, err := time.ParseDuration(s); err != nil || d <= 0 {
		return "timeout", fmt.Errorf("timeout %q is not a duration; write one such as \"2s\" or \"500ms\"", s)
	}
	return "", nil
}

func (fakeKV) ValidateTarget(v cty.Value) (string, error)  { return checkTimeout(v) }
func (fakeKV) ValidateRequest(v cty.Value) (string, error) { return checkTimeout(v) }

func (p fakeKV) Open(ctx context.Context, v cty.Value) (protocols.Client, error) {
	if _, err := checkTimeout(v); err != nil {
		return nil, err
	}
	return p.fakeProtocol.Open(ctx, v)
}

var (
	_ protocols.TargetValidator  = fakeKV{}
	_ protocols.RequestValidator = fakeKV{}
)

// fakePluginHost is an Options.Plugins that provides every declared plugin
// as a fakeKV under its block's name.
func fakePluginHost(decls []*Plugin) (*protocols.Registry, hcl.Diagnostics) {
	reg := testOptions().Protocols
	for _, d := range decls {
		reg = reg.With(newFakeKV(d.Name))
	}
	return reg, nil
}
