package config

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
)

// kvTest is a test of one fakeKV plugin; %s is the plugin block's body.
const kvTest = `
variable "pin" {
  type    = string
  default = null
}
plugin "kv" {
  %s
}
target "store" {
  protocol = "kv"
  address  = "127.0.0.1:6379"
}
scenario "s" {
  executor = "constant-vus"
  vus      = 1
  duration = "1s"
  request "get" {
    key = "a"
  }
}
`

// TestPluginNullAndEmptyAttributes: source = null is a mistake at load,
// never a plugin without a path; sha256 = null or "" means no pin, so
// that a variable can make the pin optional.
func TestPluginNullAndEmptyAttributes(t *testing.T) {
	cases := []struct {
		name, body string
		vars       map[string]string
		err        string // "" when it loads
		source     string
	}{
		{"source null", `source = null`, nil, "Plugin source is null", ""},
		{"source null through a variable", `source = var.pin`, nil, "Plugin source is null", ""},
		{"sha256 null", "source = \"./kv\"\n  sha256 = null", nil, "", "./kv"},
		{"sha256 null through a variable", "source = \"./kv\"\n  sha256 = var.pin", nil, "", "./kv"},
		{"sha256 empty through a variable", "source = \"./kv\"\n  sha256 = var.pin", map[string]string{"pin": ""}, "", "./kv"},
		{"sha256 bad through a variable", "source = \"./kv\"\n  sha256 = var.pin", map[string]string{"pin": "abc"}, "Invalid sha256", ""},
		{"no source", `sha256 = var.pin`, nil, "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			opts := testOptions()
			opts.Plugins = fakePluginHost
			opts.Vars = c.vars
			src := strings.Replace(kvTest, "%s", c.body, 1)
			test, diags := Parse(map[string][]byte{"t.hcl": []byte(src)}, ".", opts)
			if c.err != "" {
				errs := diags.Errs()
				line := 7 + strings.Count(c.body, "\n") // the last attribute's
				if len(errs) != 1 || errs[0].(*hcl.Diagnostic).Summary != c.err || errs[0].(*hcl.Diagnostic).Subject.Start.Line != line {
					t.Fatalf("want one %q error on line %d, got %s", c.err, line, diags.Error())
				}
				return
			}
			if diags.HasErrors() {
				t.Fatal(diags.Error())
			}
			if len(test.Plugins) != 1 {
				t.Fatalf("%d plugins loaded, want 1: the plugin would not be started, and its targets would fail later", len(test.Plugins))
			}
			if p := test.Plugins[0]; p.Source != c.source || p.SHA256 != "" {
				t.Errorf("plugin = source %q sha256 %q, want source %q and no pin", p.Source, p.SHA256, c.source)
			}
		})
	}
}

// flaky fails for some draws of random_choice: tonumber("x") is an error.
// Evaluated with fresh random draws, validate said yes or no by chance.
const flaky = `
target "shop" {
  base_url = "http://127.0.0.1:8080"
}
scenario "s" {
  executor = "constant-vus"
  vus      = 1
  duration = "1s"
  request "r" {
    path = "/items/${tonumber(random_choice(["1", "2", "x", "y"]))}"
  }
  request "other" {
    path = "/users/${random_int(1, 1000) * tonumber(random_choice(["1", "z"]))}"
  }
}
`

// TestValidateIsDeterministic loads a config whose verdict hangs on random
// draws 40 times: every load must give the same verdict, where fresh
// draws would have differed (each expression fails for half the draws,
// so 40 equal verdicts by chance are about 2 in 10^12).
func TestValidateIsDeterministic(t *testing.T) {
	verdicts := map[string]int{}
	for range 40 {
		_, diags := Parse(map[string][]byte{"t.hcl": []byte(flaky)}, ".", testOptions())
		var lines []string
		for _, d := range diags.Errs() {
			lines = append(lines, d.Error())
		}
		verdicts[strings.Join(lines, "\n")]++
	}
	if len(verdicts) != 1 {
		var got []string
		for v, n := range verdicts {
			got = append(got, fmt.Sprintf("%d times:\n%s", n, v))
		}
		t.Fatalf("40 loads gave %d verdicts:\n%s", len(verdicts), strings.Join(got, "\n"))
	}
}

// TestSampleDrawsDoNotReachTheRun: the fixed draws are for load only; the
// run's calls still draw at random, and two runs of the same file draw
// different values.
func TestSampleDrawsDoNotReachTheRun(t *testing.T) {
	src := strings.Replace(flaky, `tonumber(random_choice(["1", "2", "x", "y"]))`, `random_int(1, 1000000)`, 1)
	src = strings.Replace(src, ` * tonumber(random_choice(["1", "z"]))`, ``, 1)
	run := func() []string {
		test, diags := Parse(map[string][]byte{"t.hcl": []byte(src)}, ".", testOptions())
		if diags.HasErrors() {
			t.Fatal(diags.Error())
		}
		r := test.Scenarios[0].Requests[0]
		var paths []string
		for i := range 20 {
			v, d := r.Value(Iteration{VU: 1, Iteration: uint64(i)})
			if d.HasErrors() {
				t.Fatal(d.Error())
			}
			if p := v.GetAttr("path").AsString(); !slices.Contains(paths, p) {
				paths = append(paths, p)
			}
		}
		return paths
	}
	first, second := run(), run()
	if len(first) < 15 {
		t.Errorf("20 calls drew %d distinct paths out of a million: the run's draws are not random", len(first))
	}
	if slices.Equal(first, second) {
		t.Errorf("two runs drew the same paths %v: the run draws from the load's fixed seed", first)
	}
}

// TestNotText: a file that is not UTF-8 text is one error at the first
// byte at fault, without echoing it.
func TestNotText(t *testing.T) {
	cases := []struct {
		name      string
		src       []byte
		line, col int
		contains  string
	}{
		{"latin-1", []byte("target \"caf\xe9\" {\n}\n"), 1, 12, "the byte 0xe9, which is not UTF-8"},
		{"nul on line 3", []byte("# é\n\nab\x00c\n"), 3, 3, "a NUL byte"},
		{"utf-16", []byte("\xff\xfet\x00a\x00"), 1, 1, "the byte 0xff"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			test, diags := Parse(map[string][]byte{"x.hcl": c.src}, ".", testOptions())
			if len(diags) != 1 {
				t.Fatalf("%d diagnostics, want 1:\n%s", len(diags), diags.Error())
			}
			d := diags[0]
			if d.Subject == nil || d.Subject.Filename != "x.hcl" || d.Subject.Start.Line != c.line || d.Subject.Start.Column != c.col ||
				!strings.Contains(d.Detail, "x.hcl is not a UTF-8 text file") || !strings.Contains(d.Detail, c.contains) {
				t.Errorf("diagnostic = %s: %s at %v, want %d:%d containing %q", d.Summary, d.Detail, d.Subject, c.line, c.col, c.contains)
			}
			if _, kept := test.Files["x.hcl"]; kept {
				t.Error("the file is kept for rendering: its snippet would echo the binary")
			}
		})
	}
}

// thresholdTest has an http target used by scenario "web" (closed model)
// and an echo target used by scenario "ping" (open model).
const thresholdTest = `
target "shop" {
  base_url = "http://127.0.0.1:8080"
}
target "echo" {
  protocol = "echo"
  address  = "127.0.0.1:7007"
}
scenario "web" {
  executor = "constant-vus"
  vus      = 1
  duration = "1s"
  target   = "shop"
  request "home" {
    path = "/"
  }
}
scenario "ping" {
  executor = "constant-arrival-rate"
  rate     = 10
  duration = "1s"
  target   = "echo"
  request "hello" {
    message = "hi"
  }
}
threshold {
  metric    = "%s"
  condition = "%s"
  %s
}
`

// TestThresholdMetrics: a threshold loads only when a request it watches
// can produce its metric.
func TestThresholdMetrics(t *testing.T) {
	cases := []struct {
		metric, condition, filter string
		err                       string // "" when it loads
	}{
		{"latency", "p95 < 1s", "", ""},
		{"errors", "rate < 1%", `scenario = "ping"`, ""},
		{"ttfb", "p95 < 1s", "", ""},
		{"ttfb", "p95 < 1s", `scenario = "web"`, ""},
		{"ttfb", "p95 < 1s", `request = "home"`, ""},
		{"ttfb", "p95 < 1s", `scenario = "ping"`, `No request produces ttfb; ttfb is a metric of the http protocol, and scenario "ping" only uses "echo"`},
		{"ttfb", "p95 < 1s", `request = "hello"`, `No request produces ttfb`},
		{"start_lateness", "p99 < 10ms", "", ""},
		{"service_time", "p99 < 10ms", `scenario = "ping"`, ""},
		{"start_lateness", "p99 < 10ms", `scenario = "web"`, `No scenario records start_lateness`},
		{"tffb", "p95 < 1s", "", `Unknown metric "tffb"; No protocol of this test produces a metric named "tffb", so this threshold would never see a sample. Did you mean "ttfb"?`},
		{"request", "p95 < 1s", "", `Unknown metric "request"`},
		{"", "p95 < 1s", "", `Empty metric`},
		// A filter already reported gets no second error on the metric.
		{"latncy", "p95 < 1s", `scenario = "nope"`, `Unknown scenario "nope"`},
	}
	for _, c := range cases {
		t.Run(c.metric+" "+c.filter, func(t *testing.T) {
			src := strings.Replace(thresholdTest, `"%s"`, `"`+c.metric+`"`, 1)
			src = strings.Replace(src, `"%s"`, `"`+c.condition+`"`, 1)
			src = strings.Replace(src, "%s", c.filter, 1)
			_, diags := Parse(map[string][]byte{"t.hcl": []byte(src)}, ".", testOptions())
			if c.err == "" {
				if diags.HasErrors() {
					t.Fatal(diags.Error())
				}
				return
			}
			errs := diags.Errs()
			if len(errs) != 1 || !strings.Contains(errs[0].Error(), c.err) {
				t.Fatalf("want one error containing %q, got %s", c.err, diags.Error())
			}
			d := errs[0].(*hcl.Diagnostic)
			if want := 28; strings.HasPrefix(c.err, "No ") || strings.HasPrefix(c.err, "Unknown metric") {
				if d.Subject.Start.Line != want || d.Subject.Start.Column != 15 {
					t.Errorf("error at %v, want the metric attribute at %d:15", d.Subject, want)
				}
			}
		})
	}
}

// flakyLocal draws a local once per load; the value fails for half the
// draws, and a target uses it.
const flakyLocal = `
locals {
  port = tonumber(random_choice(["8080", "80", "x", "y"]))
}
target "shop" {
  base_url = "http://127.0.0.1:${local.port}"
}
scenario "s" {
  executor = "constant-vus"
  vus      = 1
  duration = "1s"
  request "r" {
    path = "/"
  }
}
`

// TestFixedDrawsMakeLocalsDeterministic: with FixedDraws, as validate and
// plan load, a local drawn once per load gives one verdict on every load;
// without it, as apply loads, the local is drawn anew each time.
func TestFixedDrawsMakeLocalsDeterministic(t *testing.T) {
	verdicts := func(fixed bool) map[bool]int {
		opts := testOptions()
		opts.FixedDraws = fixed
		got := map[bool]int{}
		for range 40 {
			_, diags := Parse(map[string][]byte{"t.hcl": []byte(flakyLocal)}, ".", opts)
			got[diags.HasErrors()]++
		}
		return got
	}
	if v := verdicts(true); len(v) != 1 {
		t.Errorf("with FixedDraws, 40 loads gave %d failures and %d successes", v[true], v[false])
	}
	if v := verdicts(false); len(v) != 2 {
		t.Errorf("without FixedDraws, 40 loads gave %d failures and %d successes: the local is not drawn per load", v[true], v[false])
	}
}
