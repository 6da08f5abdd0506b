package config

import (
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/zclconf/go-cty/cty"

	"github.com/hload/hload/protocols"
)

// fakeMQTT is what a plugin's protocol looks like to config.
var fakeMQTT = fakeProtocol{protocols.Info{
	Name:        "mqtt-plugin", // the plugin's own name; the block names it
	TargetSpec:  hcldec.ObjectSpec{"broker": attr("broker", cty.String, true)},
	RequestSpec: hcldec.ObjectSpec{"topic": attr("topic", cty.String, true)},
}}

// pluginHost is an Options.Plugins that knows fakeMQTT and reports any
// other plugin as missing, as the CLI does when it cannot start one.
func pluginHost(got *[]*Plugin) func([]*Plugin) (*protocols.Registry, hcl.Diagnostics) {
	return func(decls []*Plugin) (*protocols.Registry, hcl.Diagnostics) {
		*got = decls
		reg := testOptions().Protocols
		var diags hcl.Diagnostics
		for _, d := range decls {
			if d.Name != "mqtt" {
				diags = append(diags, errorDiag(d.DeclRange, "Cannot start plugin", "no binary for %q", d.Name))
				continue
			}
			p := fakeMQTT
			p.info.Name = d.Name
			reg = reg.With(p)
		}
		return reg, diags
	}
}

const pluginTarget = `
plugin "mqtt" {
  source = "./bin/hload-plugin-mqtt"
  sha256 = "E3B0C44298FC1C149AFBF4C8996FB92427AE41E4649B934CA495991B7852B855"
}
target "broker" {
  protocol = "mqtt"
  broker   = "tcp://127.0.0.1:1883"
  %s
}
scenario "s" {
  executor = "constant-vus"
  vus      = 1
  duration = "1s"
  request "publish" {
    topic = "a/b"
    %s
  }
}
`

func loadPlugin(t *testing.T, targetExtra, requestExtra string) (*Test, hcl.Diagnostics, []*Plugin) {
	t.Helper()
	var decls []*Plugin
	opts := testOptions()
	opts.Plugins = pluginHost(&decls)
	src := strings.Replace(strings.Replace(pluginTarget, "%s", targetExtra, 1), "%s", requestExtra, 1)
	test, diags := Parse(map[string][]byte{"conf/test.hcl": []byte(src)}, "conf", opts)
	return test, diags, decls
}

func TestPluginProtocolDecodesTargetsAndRequests(t *testing.T) {
	test, diags, decls := loadPlugin(t, "", "")
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	if len(decls) != 1 || decls[0] != test.Plugins[0] {
		t.Fatalf("the plugin host got %v, want the decoded blocks", decls)
	}
	p := test.Plugins[0]
	if p.Name != "mqtt" || p.Source != "./bin/hload-plugin-mqtt" || p.Dir() != "conf" ||
		p.SHA256 != "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" || p.DeclRange.Start.Line != 2 {
		t.Errorf("plugin = %+v", p)
	}
	tg := test.Targets[0]
	if tg.Protocol != "mqtt" || tg.Isolate || tg.Config.GetAttr("broker").AsString() != "tcp://127.0.0.1:1883" {
		t.Errorf("target = %+v", tg)
	}
	if r := test.Scenarios[0].Requests[0]; r.Protocol != "mqtt" {
		t.Errorf("request protocol = %q", r.Protocol)
	}
}

// TestPluginSchemaChecksRequests: an unknown attribute in a request to a
// plugin's protocol is reported with its line, before anything runs.
func TestPluginSchemaChecksRequests(t *testing.T) {
	_, diags, _ := loadPlugin(t, "", `qos = 1`)
	if len(diags.Errs()) != 1 {
		t.Fatalf("want one error, got %s", diags.Error())
	}
	d := diags[0]
	if d.Summary != "Unsupported argument" || d.Subject == nil || d.Subject.Filename != "conf/test.hcl" || d.Subject.Start.Line != 17 {
		t.Errorf("diagnostic = %s at %v", d.Error(), d.Subject)
	}
}

func TestIsolate(t *testing.T) {
	_, diags, _ := loadPlugin(t, "isolate = true", "")
	if len(diags.Errs()) != 1 || !strings.Contains(diags.Error(), "always runs in its own process") || diags[0].Subject.Start.Line != 9 {
		t.Errorf("isolate on a plugin's target: %s", diags.Error())
	}

	src := `
target "shop" {
  base_url = "http://127.0.0.1:1"
  isolate  = true
}
scenario "s" {
  executor = "constant-vus"
  vus      = 1
  duration = "1s"
  request "r" {}
}
`
	test, diags := Parse(map[string][]byte{"t.hcl": []byte(src)}, ".", testOptions())
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	if !test.Targets[0].Isolate {
		t.Error("isolate = true on a built-in did not set Target.Isolate")
	}
}

// TestPluginHostFailure: a plugin the host could not start is reported by
// the host alone; its targets and requests get no follow-up errors.
func TestPluginHostFailure(t *testing.T) {
	var decls []*Plugin
	opts := testOptions()
	opts.Plugins = pluginHost(&decls)
	src := strings.Replace(pluginTarget, `plugin "mqtt"`, `plugin "amqp"`, 1)
	src = strings.Replace(src, `protocol = "mqtt"`, `protocol = "amqp"`, 1)
	src = strings.ReplaceAll(src, "%s", "")
	_, diags := Parse(map[string][]byte{"t.hcl": []byte(src)}, ".", opts)
	if len(diags.Errs()) != 1 || diags[0].Summary != "Cannot start plugin" {
		t.Errorf("want only the host's error, got %s", diags.Error())
	}
}
