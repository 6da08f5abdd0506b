package config

import (
	"context"
	"errors"

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
}}

// fakeEcho is a second protocol with a required request attribute.
var fakeEcho = fakeProtocol{protocols.Info{
	Name:       "echo",
	Version:    "0.0.0-test",
	TargetSpec: hcldec.ObjectSpec{"address": attr("address", cty.String, true)},
	RequestSpec: hcldec.ObjectSpec{
		"message": attr("message", cty.String, true),
	},
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
