package config

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
)

// parseString parses one in-memory file named test.hcl.
func parseString(t *testing.T, src string, opts Options) (*Test, hcl.Diagnostics) {
	t.Helper()
	return Parse(map[string][]byte{"test.hcl": []byte(src)}, t.TempDir(), opts)
}

// mustParse parses src and fails the test on any error.
func mustParse(t *testing.T, src string, opts Options) *Test {
	t.Helper()
	test, diags := parseString(t, src, opts)
	if diags.HasErrors() {
		t.Fatalf("unexpected errors:\n%s", render(t, test, diags))
	}
	return test
}

// oneRequest wraps the body of one request in a minimal valid test.
func oneRequest(request string) string {
	return `
target "shop" { base_url = "http://127.0.0.1:8080" }
scenario "browse" {
  executor = "constant-vus"
  vus      = 1
  duration = "1s"
  request "r" {
` + request + `
  }
}
`
}

func TestLoadShopMix(t *testing.T) {
	test, diags := Load([]string{filepath.Join("testdata", "valid", "shop.hcl")}, testOptions())
	if diags.HasErrors() {
		t.Fatalf("unexpected errors:\n%s", render(t, test, diags))
	}
	if len(test.Targets) != 1 || test.Targets[0].Name != "shop" || test.Targets[0].Protocol != "http" {
		t.Fatalf("targets = %+v", test.Targets)
	}
	cfg := test.Targets[0].Config
	if got := cfg.GetAttr("base_url").AsString(); got != "http://127.0.0.1:8080" {
		t.Errorf("base_url = %q", got)
	}
	if got := cfg.GetAttr("headers").Index(cty.StringVal("X-Run")).AsString(); got != "shop-20" {
		t.Errorf("headers[X-Run] = %q, want shop-20 (locals in any order)", got)
	}

	if len(test.Scenarios) != 1 {
		t.Fatalf("scenarios = %d", len(test.Scenarios))
	}
	s := test.Scenarios[0]
	want := RampingVUs{StartVUs: 1, Stages: []Stage{{time.Minute, 20}, {3 * time.Minute, 20}, {30 * time.Second, 0}}}
	if got, ok := s.Executor.(RampingVUs); !ok || !equalStages(got, want) {
		t.Errorf("executor = %#v, want %#v", s.Executor, want)
	}
	if s.ThinkTime != (ThinkTime{500 * time.Millisecond, 1500 * time.Millisecond}) {
		t.Errorf("think time = %+v", s.ThinkTime)
	}
	if s.GracefulStop != 30*time.Second {
		t.Errorf("graceful stop = %s, want the 30s default", s.GracefulStop)
	}

	wantReqs := []struct {
		name    string
		weight  int
		dynamic bool
		checks  int
	}{
		{"main", 60, false, 0},
		{"search", 5, true, 0},
		{"detail", 20, true, 1},
		{"profile", 10, true, 0},
		{"login", 5, true, 1},
	}
	if len(s.Requests) != len(wantReqs) {
		t.Fatalf("requests = %d, want %d", len(s.Requests), len(wantReqs))
	}
	for i, w := range wantReqs {
		r := s.Requests[i]
		if r.Name != w.name || r.Weight != w.weight || r.Dynamic() != w.dynamic || len(r.Checks) != w.checks {
			t.Errorf("request %d = %s weight %d dynamic %v checks %d, want %+v", i, r.Name, r.Weight, r.Dynamic(), len(r.Checks), w)
		}
		if r.Target != "shop" || r.Protocol != "http" {
			t.Errorf("request %s target %q protocol %q", r.Name, r.Target, r.Protocol)
		}
	}
	login := s.Requests[4]
	if c := login.Checks[0]; len(c.Status) != 2 || c.Status[1] != 201 || c.BodyContains != "token" {
		t.Errorf("login check = %+v", c)
	}

	if len(test.Thresholds) != 2 {
		t.Fatalf("thresholds = %d", len(test.Thresholds))
	}
	th := test.Thresholds[0]
	if th.Metric != "latency" || th.Request != "detail" || th.Condition.Percentile != 95 || th.Condition.Value != 200 || !th.Condition.IsDuration {
		t.Errorf("threshold 0 = %+v", th)
	}
	th = test.Thresholds[1]
	if th.Metric != "errors" || th.Scenario != "browse" || !th.Abort || th.Condition.Aggregation != "rate" || th.Condition.Value != 0.01 {
		t.Errorf("threshold 1 = %+v", th)
	}
	if len(test.Sinks) != 1 || test.Sinks[0].Type != "csv" || test.Sinks[0].Config.GetAttr("path").AsString() != "results.csv" {
		t.Errorf("sinks = %+v", test.Sinks)
	}
	if !test.Sinks[0].Config.GetAttr("raw").IsNull() {
		t.Errorf("raw = %#v, want null", test.Sinks[0].Config.GetAttr("raw"))
	}
}

func equalStages(a, b RampingVUs) bool {
	if a.StartVUs != b.StartVUs || len(a.Stages) != len(b.Stages) {
		return false
	}
	for i := range a.Stages {
		if a.Stages[i] != b.Stages[i] {
			return false
		}
	}
	return true
}

func TestLoadJMeterStyle(t *testing.T) {
	test, diags := Load([]string{filepath.Join("testdata", "valid", "jmeter.hcl")}, testOptions())
	if diags.HasErrors() {
		t.Fatalf("unexpected errors:\n%s", render(t, test, diags))
	}
	smoke, steady := test.Scenarios[0], test.Scenarios[1]
	if want := (Iterations{VUs: 5, Iterations: 10, RampUp: 10 * time.Second, MaxDuration: 5 * time.Minute}); smoke.Executor != want {
		t.Errorf("smoke executor = %#v, want %#v", smoke.Executor, want)
	}
	if smoke.ThinkTime != (ThinkTime{500 * time.Millisecond, 500 * time.Millisecond}) || smoke.GracefulStop != 5*time.Second {
		t.Errorf("smoke think %+v graceful %s", smoke.ThinkTime, smoke.GracefulStop)
	}
	if smoke.Requests[0].Target != "api" || smoke.Requests[1].Target != "web" {
		t.Errorf("smoke targets = %s, %s; want the scenario's api, then web", smoke.Requests[0].Target, smoke.Requests[1].Target)
	}
	if want := (ConstantVUs{VUs: 3, Duration: 90 * time.Second}); steady.Executor != want {
		t.Errorf("steady executor = %#v, want %#v", steady.Executor, want)
	}
	c := test.Thresholds[0].Condition
	if c.Percentile != 99.9 || c.Op != "<=" || c.Value != 1500 || !c.IsDuration {
		t.Errorf("condition = %+v", c)
	}
	if !test.Targets[1].Config.GetAttr("insecure_skip_verify").True() {
		t.Error("insecure_skip_verify not set")
	}
}

func TestParseMergesFiles(t *testing.T) {
	files := map[string][]byte{
		"a-targets.hcl":   []byte(`target "shop" { base_url = var.url }`),
		"b-scenarios.hcl": []byte("scenario \"s\" {\nexecutor = \"constant-vus\"\nvus = 1\nduration = \"1s\"\nrequest \"r\" { path = local.p }\n}"),
		"c-vars.hcl":      []byte(`variable "url" { default = "http://x" }` + "\n" + `locals { p = "/p" }`),
	}
	test, diags := Parse(files, t.TempDir(), testOptions())
	if diags.HasErrors() {
		t.Fatalf("unexpected errors:\n%s", render(t, test, diags))
	}
	if len(test.Files) != 3 {
		t.Errorf("files = %d", len(test.Files))
	}
	v, _ := test.Scenarios[0].Requests[0].Value(Iteration{})
	if v.GetAttr("path").AsString() != "/p" {
		t.Errorf("path = %#v", v.GetAttr("path"))
	}
}

func TestVariables(t *testing.T) {
	const src = `
variable "url" { default = "http://default" }
variable "vus" {
  type    = number
  default = 2
}
variable "hosts" { default = ["a"] }
target "shop" { base_url = var.url }
scenario "s" {
  executor = "constant-vus"
  vus      = var.vus
  duration = "1s"
  request "r" { headers = { hosts = join(",", var.hosts) } }
}
`
	tests := []struct {
		name      string
		vars      map[string]string
		env       map[string]string
		wantURL   string
		wantVUs   int
		wantHosts string
		wantErr   string // a substring of the first error's summary or detail
	}{
		{name: "defaults", wantURL: "http://default", wantVUs: 2, wantHosts: "a"},
		{name: "env over default", env: map[string]string{"HLOAD_VAR_url": "http://env", "HLOAD_VAR_vus": "3"},
			wantURL: "http://env", wantVUs: 3, wantHosts: "a"},
		{name: "flag over env", vars: map[string]string{"url": "http://flag"}, env: map[string]string{"HLOAD_VAR_url": "http://env"},
			wantURL: "http://flag", wantVUs: 2, wantHosts: "a"},
		{name: "flag converted to number", vars: map[string]string{"vus": "7"}, wantURL: "http://default", wantVUs: 7, wantHosts: "a"},
		{name: "flag as a list", vars: map[string]string{"hosts": `["x", "y"]`}, wantURL: "http://default", wantVUs: 2, wantHosts: "x,y"},
		{name: "flag not a number", vars: map[string]string{"vus": "ten"}, wantErr: "--var vus"},
		{name: "env not a number", env: map[string]string{"HLOAD_VAR_vus": "ten"}, wantErr: "HLOAD_VAR_vus"},
		{name: "undeclared flag", vars: map[string]string{"ulr": "x"}, wantErr: "--var ulr"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := testOptions()
			opts.Vars = tt.vars
			opts.LookupEnv = func(k string) (string, bool) { v, ok := tt.env[k]; return v, ok }
			test, diags := parseString(t, src, opts)
			if tt.wantErr != "" {
				if !diags.HasErrors() {
					t.Fatalf("no error, want one mentioning %q", tt.wantErr)
				}
				text := render(t, test, diags)
				if !strings.Contains(text, tt.wantErr) {
					t.Fatalf("errors do not mention %q:\n%s", tt.wantErr, text)
				}
				return
			}
			if diags.HasErrors() {
				t.Fatalf("unexpected errors:\n%s", render(t, test, diags))
			}
			if got := test.Targets[0].Config.GetAttr("base_url").AsString(); got != tt.wantURL {
				t.Errorf("url = %q, want %q", got, tt.wantURL)
			}
			if got := test.Scenarios[0].Executor.(ConstantVUs).VUs; got != tt.wantVUs {
				t.Errorf("vus = %d, want %d", got, tt.wantVUs)
			}
			v, _ := test.Scenarios[0].Requests[0].Value(Iteration{})
			if got := v.GetAttr("headers").Index(cty.StringVal("hosts")).AsString(); got != tt.wantHosts {
				t.Errorf("hosts = %q, want %q", got, tt.wantHosts)
			}
		})
	}
}

func TestUndeclaredVarHasNoRangeButNamesFlag(t *testing.T) {
	opts := testOptions()
	opts.Vars = map[string]string{"nope": "1"}
	_, diags := parseString(t, oneRequest(`path = "/"`), opts)
	if len(diags) != 1 || diags[0].Summary != "Undeclared variable in --var nope" {
		t.Fatalf("diags = %v", diags)
	}
}

func TestStaticAttributes(t *testing.T) {
	opts := testOptions()
	opts.LookupEnv = func(k string) (string, bool) {
		if k == "TOKEN" {
			return "s3cret", true
		}
		return "", false
	}
	tests := []struct {
		expr string
		want cty.Value
	}{
		{`upper("abc")`, cty.StringVal("ABC")},
		{`format("/p/%03d", 7)`, cty.StringVal("/p/007")},
		{`jsonencode({ a = 1 })`, cty.StringVal(`{"a":1}`)},
		{`"${duration("1m30s")}"`, cty.StringVal("90")},
		{`"${duration(2.5)}"`, cty.StringVal("2.5")},
		{`env("TOKEN")`, cty.StringVal("s3cret")},
		{`env("UNSET")`, cty.StringVal("")},
		{`demo_url()`, cty.StringVal("http://127.0.0.1:9999")},
		{`join("-", reverse(sort(["b", "a", "c"])))`, cty.StringVal("c-b-a")},
		{`tostring(length(range(5)))`, cty.StringVal("5")},
		{`trimprefix(lower(" /X"), " ")`, cty.StringVal("/x")},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			test := mustParse(t, oneRequest("path = "+tt.expr), opts)
			r := test.Scenarios[0].Requests[0]
			if r.Dynamic() {
				t.Fatal("request is dynamic, want static")
			}
			v, diags := r.Value(Iteration{VU: 1})
			if diags.HasErrors() {
				t.Fatal(diags)
			}
			if got := v.GetAttr("path"); !got.RawEquals(tt.want) {
				t.Errorf("path = %#v, want %#v", got, tt.want)
			}
		})
	}
}

func TestDemoURLCalledOnce(t *testing.T) {
	calls := 0
	opts := testOptions()
	opts.DemoURL = func() (string, error) { calls++; return "http://demo", nil }
	mustParse(t, `
target "a" { base_url = demo_url() }
target "b" { base_url = "${demo_url()}/b" }
scenario "s" {
  executor = "constant-vus"
  vus      = 1
  duration = "1s"
  target   = "a"
  request "r" { path = demo_url() }
}`, opts)
	if calls != 1 {
		t.Errorf("DemoURL called %d times, want 1", calls)
	}
}

func TestDynamicDetection(t *testing.T) {
	tests := []struct {
		attr    string
		dynamic bool
	}{
		{`path = "/"`, false},
		{`path = "/${upper("a")}"`, false},
		{`path = "/${vu.id}"`, true},
		{`path = "/${vu.iteration}"`, true},
		{`path = scenario.name`, true},
		{`path = "/${random_int(1, 10)}"`, true},
		{`path = random_choice(["/a", "/b"])`, true},
		{`path = "/${random_string(8)}"`, true},
		{`path = "/${uuid()}"`, true},
		{`json = { nested = [{ id = uuid() }] }`, true},
		{`json = [for i in range(3): i * 2]`, false},
		{`json = [for i in range(3): i + vu.id]`, true},
		{`headers = { A = lower("X") }`, false},
	}
	for _, tt := range tests {
		t.Run(tt.attr, func(t *testing.T) {
			test := mustParse(t, oneRequest(tt.attr), testOptions())
			if got := test.Scenarios[0].Requests[0].Dynamic(); got != tt.dynamic {
				t.Errorf("Dynamic() = %v, want %v", got, tt.dynamic)
			}
		})
	}
}

func TestTargetResolution(t *testing.T) {
	test := mustParse(t, `
target "only" { base_url = "http://only" }
scenario "s" {
  executor = "constant-vus"
  vus      = 1
  duration = "1s"
  request "r" { path = "/" }
}`, testOptions())
	if got := test.Scenarios[0].Requests[0].Target; got != "only" {
		t.Errorf("target = %q, want the only target", got)
	}

	test = mustParse(t, `
target "web" { base_url = "http://web" }
target "echo" {
  protocol = "echo"
  address  = "127.0.0.1:7"
}
scenario "s" {
  executor = "constant-vus"
  vus      = 1
  duration = "1s"
  target   = "echo"
  request "say" { message = "hi" }
  request "page" {
    target = "web"
    path   = "/"
  }
}`, testOptions())
	say, page := test.Scenarios[0].Requests[0], test.Scenarios[0].Requests[1]
	if say.Target != "echo" || say.Protocol != "echo" || page.Target != "web" || page.Protocol != "http" {
		t.Errorf("say -> %s/%s, page -> %s/%s", say.Target, say.Protocol, page.Target, page.Protocol)
	}
	v, _ := say.Value(Iteration{})
	if v.GetAttr("message").AsString() != "hi" || len(v.Type().AttributeTypes()) != 1 {
		t.Errorf("echo value = %#v", v)
	}
}

// TestMoreInvalid covers mistakes beyond the golden cases, each by a
// substring of the rendered diagnostics.
func TestMoreInvalid(t *testing.T) {
	tests := []struct {
		name, src, want string
	}{
		{"data type", `data "json" "users" { path = "u.json" }` + oneRequest(`path = data.users.email`), `Unknown data type "json"`},
		{"plugin block without a plugin host", `plugin "mqtt" { source = "./x" }` + oneRequest(`path = "/"`), "does not start plugins"},
		{"data reference", oneRequest(`path = data.users.email`), `Unknown data block "users"`},
		{"vu in locals", `locals { a = vu.id }` + oneRequest(`path = "/"`), "Per-iteration value not allowed here"},
		{"unknown local", oneRequest(`path = local.nope`), "nope"},
		{"required echo message", `target "e" {
  protocol = "echo"
  address  = "x"
}
scenario "s" {
  executor = "constant-vus"
  vus      = 1
  duration = "1s"
  request "r" {}
}`, `"message" is required`},
		{"uniform outside think_time", oneRequest(`path = uniform("1s", "2s")`), "Incorrect attribute value type"},
		{"random_int reversed", oneRequest(`path = "/${random_int(5, 1)}"`), "max (1) is less than min (5)"},
		{"check status text", oneRequest(`check { status = ["ok"] }`), "status"},
		{"latency rate", oneRequest(`path = "/"`) + `threshold {
  metric    = "latency"
  condition = "rate < 1%"
}`, "latency metric takes a percentile"},
		{"unknown threshold scenario", oneRequest(`path = "/"`) + `threshold {
  metric    = "latency"
  scenario  = "brose"
  condition = "p95 < 1s"
}`, `Unknown scenario "brose"`},
		{"request not in that scenario", oneRequest(`path = "/"`) + `scenario "other" {
  executor = "constant-vus"
  vus      = 1
  duration = "1s"
  request "x" { path = "/" }
}
threshold {
  metric    = "latency"
  scenario  = "browse"
  request   = "x"
  condition = "p95 < 1s"
}`, `No request block in scenario "browse" is named "x"`},
		{"variable type", `variable "x" { type = "string" }` + oneRequest(`path = "/"`), "Invalid variable type"},
		{"negative think time", strings.Replace(oneRequest(`path = "/"`), `duration = "1s"`, `duration = "1s"
think_time = -1`, 1), "think_time must not be negative"},
		{"ramping all zero", `target "shop" { base_url = "http://x" }
scenario "s" {
  executor = "ramping-vus"
  stages   = [{ duration = "1m", target = 0 }]
  request "r" { path = "/" }
}`, "no virtual user would ever run"},
		{"stage typo", `target "shop" { base_url = "http://x" }
scenario "s" {
  executor = "ramping-vus"
  stages   = [{ duration = "1m", traget = 5 }]
  request "r" { path = "/" }
}`, `Did you mean "target"?`},
		{"duplicate variable", `variable "a" { default = 1 }
variable "a" { default = 2 }` + oneRequest(`path = "/"`), "test.hcl:1,1"},
		{"empty file", ``, "No scenario"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			test, diags := parseString(t, tt.src, testOptions())
			if !diags.HasErrors() {
				t.Fatalf("no error, want one mentioning %q", tt.want)
			}
			if text := render(t, test, diags); !strings.Contains(text, tt.want) {
				t.Fatalf("errors do not mention %q:\n%s", tt.want, text)
			}
		})
	}
}
