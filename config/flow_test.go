package config

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zclconf/go-cty/cty"

	"github.com/hload/hload/metrics"
	hloadhttp "github.com/hload/hload/protocols/http"
)

// journey wraps the body of a scenario in a minimal valid test.
func journey(body string) string {
	return `
target "shop" { base_url = "http://127.0.0.1:8080" }
scenario "shop" {
  executor = "constant-vus"
  vus      = 1
  duration = "1s"
` + body + `
}
`
}

// authorization returns the Authorization header of a request value, or
// "(none)" when its headers are null.
func authorization(v cty.Value) string {
	h := v.GetAttr("headers")
	if h.IsNull() || !h.IsWhollyKnown() {
		return "(none)"
	}
	return h.Index(cty.StringVal("Authorization")).AsString()
}

func requestNames(reqs []*Request) []string {
	names := make([]string, len(reqs))
	for i, r := range reqs {
		names[i] = r.Name
	}
	return names
}

func TestLoadJourney(t *testing.T) {
	test, diags := Load([]string{filepath.Join("testdata", "valid", "journey.hcl")}, testOptions())
	if diags.HasErrors() {
		t.Fatalf("unexpected errors:\n%s", render(t, test, diags))
	}
	s := test.Scenarios[0]

	// Every request, wherever it sits, in file order.
	if got, want := strings.Join(requestNames(s.Requests), " "), "login home list buy detail"; got != want {
		t.Errorf("requests = %s, want %s", got, want)
	}
	byName := map[string]*Request{}
	for _, r := range s.Requests {
		byName[r.Name] = r
	}

	if s.Setup == nil || s.Setup.Name != metrics.SetupFlow || len(s.Setup.Steps) != 1 || s.Setup.Steps[0] != byName["login"] {
		t.Fatalf("setup = %+v", s.Setup)
	}
	if s.Setup.ThinkTime != (ThinkTime{}) {
		t.Errorf("setup think time = %+v, want 0", s.Setup.ThinkTime)
	}

	wantMix := []struct {
		name   string
		weight int
		single bool
		steps  string
		think  ThinkTime
	}{
		{"home", 60, true, "home", ThinkTime{}},
		{"order", 10, false, "list buy", ThinkTime{50 * time.Millisecond, 150 * time.Millisecond}},
		{"browse", 1, false, "detail", ThinkTime{}},
	}
	if len(s.Mix) != len(wantMix) {
		t.Fatalf("mix has %d flows, want %d", len(s.Mix), len(wantMix))
	}
	for i, w := range wantMix {
		f := s.Mix[i]
		if f.Name != w.name || f.Weight != w.weight || f.Single != w.single || strings.Join(requestNames(f.Steps), " ") != w.steps || f.ThinkTime != w.think {
			t.Errorf("mix[%d] = %s weight %d single %v steps %v think %+v, want %+v",
				i, f.Name, f.Weight, f.Single, requestNames(f.Steps), f.ThinkTime, w)
		}
		for _, r := range f.Steps {
			if byName[r.Name] != r {
				t.Errorf("step %s of %s is not the request in Requests", r.Name, f.Name)
			}
			if !f.Single && r.Weight != 1 {
				t.Errorf("step %s has weight %d, want 1", r.Name, r.Weight)
			}
		}
	}

	// Captures in file order, not in the map order hcl hands them over.
	wantCaptures := map[string][]Capture{
		"login": {{Name: "token", Source: CaptureJSON, Arg: "token"}, {Name: "session", Source: CaptureCookie, Arg: "session"}},
		"list": {
			{Name: "product", Source: CaptureJSON, Arg: "items.0.id"},
			{Name: "location", Source: CaptureHeader, Arg: "Location"},
			{Name: "code", Source: CaptureStatus},
			{Name: "first", Source: CaptureRegex, Arg: `id=(\d+)`},
		},
	}
	for _, r := range s.Requests {
		want := wantCaptures[r.Name]
		if len(r.Captures) != len(want) {
			t.Errorf("%s captures %+v, want %+v", r.Name, r.Captures, want)
			continue
		}
		line := 0
		for i, c := range r.Captures {
			w := want[i]
			if c.Name != w.Name || c.Source != w.Source || c.Arg != w.Arg {
				t.Errorf("%s capture %d = %s %s(%q), want %s %s(%q)", r.Name, i, c.Name, c.Source, c.Arg, w.Name, w.Source, w.Arg)
			}
			if (c.Source == CaptureRegex) != (c.Regexp != nil) {
				t.Errorf("%s capture %s: Regexp = %v", r.Name, c.Name, c.Regexp)
			}
			if c.DeclRange.Start.Line <= line || !strings.HasSuffix(c.DeclRange.Filename, "journey.hcl") {
				t.Errorf("%s capture %s at %s, after line %d", r.Name, c.Name, c.DeclRange, line)
			}
			line = c.DeclRange.Start.Line
		}
	}
	for _, c := range byName["list"].Captures {
		if c.Source != CaptureRegex || c.Regexp == nil {
			continue
		}
		if m := c.Regexp.FindStringSubmatch("a?id=42&b"); len(m) != 2 || m[1] != "42" {
			t.Errorf("regex capture matches %q", m)
		}
	}
	if !byName["list"].NeedsBody() || !byName["list"].NeedsHeaders() || byName["login"].NeedsBody() != true || byName["home"].NeedsBody() {
		t.Error("NeedsBody/NeedsHeaders do not follow the captures")
	}

	for name, want := range map[string]bool{"login": false, "home": false, "list": false, "buy": true, "detail": false} {
		if got := byName[name].ContinueOnFailure; got != want {
			t.Errorf("%s ContinueOnFailure = %v, want %v", name, got, want)
		}
	}

	if len(test.Thresholds) != 2 {
		t.Fatalf("thresholds = %d", len(test.Thresholds))
	}
	if th := test.Thresholds[0]; th.Metric != "flow_duration" || th.Flow != "order" || th.Condition.Percentile != 95 || th.Condition.Value != 2000 {
		t.Errorf("threshold 0 = %+v", th)
	}
	if th := test.Thresholds[1]; th.Metric != "flow_failures" || th.Flow != "" || th.Condition.Aggregation != "rate" || th.Condition.Value != 0.1 {
		t.Errorf("threshold 1 = %+v", th)
	}
}

// TestEvalReadsVars checks that vu.vars holds the iteration's Vars, and
// that a value of any type, unknown at load, is checked per call.
func TestEvalReadsVars(t *testing.T) {
	test := mustParse(t, journey(`
  setup {
    request "login" {
      capture { token = json("token") }
    }
  }
  flow "order" {
    request "list" {
      capture { product = json("items.0.id") }
    }
    request "buy" {
      path    = "/orders/${vu.id}"
      headers = { Authorization = "Bearer ${vu.vars.token}" }
      json    = { product_id = vu.vars.product, next = vu.vars.product + 1 }
    }
  }
`), testOptions())
	buy := test.Scenarios[0].Requests[2]
	if buy.Name != "buy" || !buy.usesVars || !buy.Dynamic() {
		t.Fatalf("request %s usesVars %v dynamic %v", buy.Name, buy.usesVars, buy.Dynamic())
	}
	for _, tc := range []struct {
		token   string
		product int64
	}{{"abc", 42}, {"xyz", 7}} {
		v, diags := buy.Value(Iteration{VU: 3, Vars: map[string]cty.Value{
			"token":   cty.StringVal(tc.token),
			"product": cty.NumberIntVal(tc.product),
		}})
		if diags.HasErrors() {
			t.Fatal(diags)
		}
		if got := authorization(v); got != "Bearer "+tc.token {
			t.Errorf("Authorization = %q, want Bearer %s", got, tc.token)
		}
		id, _ := v.GetAttr("json").GetAttr("product_id").AsBigFloat().Int64()
		next, _ := v.GetAttr("json").GetAttr("next").AsBigFloat().Int64()
		if id != tc.product || next != tc.product+1 {
			t.Errorf("json = %#v, want product_id %d and next %d", v.GetAttr("json"), tc.product, tc.product+1)
		}
		if got := v.GetAttr("path").AsString(); got != "/orders/3" {
			t.Errorf("path = %q", got)
		}
	}
	// A value of the wrong type is an error of that call, not a panic.
	_, diags := buy.Value(Iteration{VU: 1, Vars: map[string]cty.Value{"token": cty.StringVal("t"), "product": cty.StringVal("x")}})
	if !diags.HasErrors() {
		t.Error(`"x" + 1 evaluated without an error`)
	}
	// So is a value not captured yet, when the core evaluates too early.
	if _, diags := buy.Value(Iteration{VU: 1}); !diags.HasErrors() {
		t.Error("nil Vars evaluated without an error")
	}
}

// TestVarsOnlyWhenRead checks which requests build vu.vars per call: only
// those that read it, or the whole vu.
func TestVarsOnlyWhenRead(t *testing.T) {
	test := mustParse(t, journey(`
  setup {
    request "login" {
      capture { token = json("token") }
    }
  }
  request "static" { path = "/" }
  request "id" { path = "/${vu.id}" }
  request "reads" { path = "/${vu.vars.token}" }
  request "whole" { body = jsonencode(vu) }
`), testOptions())
	vars := map[string]cty.Value{"token": cty.StringVal("tok")}
	for _, r := range test.Scenarios[0].Requests {
		want := r.Name == "reads" || r.Name == "whole"
		if r.usesVars != want {
			t.Errorf("%s usesVars = %v, want %v", r.Name, r.usesVars, want)
		}
		v, diags := r.Value(Iteration{VU: 2, Iteration: 5, Vars: vars})
		if diags.HasErrors() {
			t.Fatalf("%s: %s", r.Name, diags)
		}
		switch r.Name {
		case "reads":
			if got := v.GetAttr("path").AsString(); got != "/tok" {
				t.Errorf("reads path = %q", got)
			}
		case "whole":
			if got, want := v.GetAttr("body").AsString(), `{"id":2,"iteration":5,"vars":{"token":"tok"}}`; got != want {
				t.Errorf("whole body = %s, want %s", got, want)
			}
		}
	}
	// The static request returns its value from load, even with Vars set,
	// and allocates nothing for them.
	static := test.Scenarios[0].Requests[1]
	loaded, _ := static.Value(Iteration{})
	allocs := testing.AllocsPerRun(100, func() {
		v, diags := static.Value(Iteration{VU: 1, Vars: vars})
		if diags != nil || !v.RawEquals(loaded) {
			t.Fatal(v, diags)
		}
	})
	if allocs != 0 {
		t.Errorf("static Value with Vars allocates %v times, want 0", allocs)
	}
}

// TestVarsInLetAndDelivery checks that let and delivery may read captured
// values, which are checked per call.
func TestVarsInLetAndDelivery(t *testing.T) {
	test := mustParse(t, journey(`
  setup {
    request "login" {
      capture { token = json("token") }
    }
  }
  request "r" {
    let      = { auth = "Bearer ${vu.vars.token}" }
    headers  = { Authorization = let.auth }
    delivery = { key = vu.vars.token, id = "${vu.id}" }
  }
`), testOptions())
	r := test.Scenarios[0].Requests[1]
	v, d, diags := r.Eval(Iteration{VU: 4, Vars: map[string]cty.Value{"token": cty.StringVal("tok")}})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	if got := authorization(v); got != "Bearer tok" {
		t.Errorf("Authorization = %q", got)
	}
	if d != (Delivery{Set: true, Key: "tok", ID: "4"}) {
		t.Errorf("delivery = %+v", d)
	}
}

// TestVarsCheckedByProtocolPerCall loads a request whose headers read a
// captured value with the real http protocol: its validator must not see
// the value, unknown at load, and reject it.
func TestVarsCheckedByProtocolPerCall(t *testing.T) {
	opts := testOptions()
	opts.Protocols = opts.Protocols.With(hloadhttp.New())
	test := mustParse(t, journey(`
  setup {
    request "login" {
      capture { token = json("token") }
    }
  }
  request "r" {
    headers = { Authorization = "Bearer ${vu.vars.token}" }
  }
`), opts)
	r := test.Scenarios[0].Requests[1]
	v, diags := r.Value(Iteration{VU: 1, Vars: map[string]cty.Value{"token": cty.StringVal("tok")}})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	if got := authorization(v); got != "Bearer tok" {
		t.Errorf("Authorization = %q", got)
	}
}

// TestVarsScope checks which captured names each kind of step may read.
func TestVarsScope(t *testing.T) {
	const setup = `
  setup {
    request "login" {
      capture { token = json("token") }
    }
    request "profile" {
      headers = { Authorization = vu.vars.token }
      capture { user = json("id") }
    }
  }
`
	for _, tc := range []struct {
		name, body string
		want       string // "" for no error
	}{
		{"setup step reads earlier setup step", setup + `request "home" { path = "/" }`, ""},
		{"bare request reads setup", setup + `request "me" { path = "/${vu.vars.user}/${vu.vars.token}" }`, ""},
		{"setup after the bare request in the file", `request "me" { path = "/${vu.vars.token}" }` + setup, ""},
		{"flow step reads setup and earlier step", setup + `
  flow "f" {
    request "a" {
      capture { item = json("id") }
    }
    request "b" { path = "/${vu.vars.item}/${vu.vars.user}" }
  }`, ""},
		{"whole vars object", `request "r" { body = jsonencode(vu.vars) }`, ""},
		{"bare request capture read by nobody", `request "r" {
      capture { x = status() }
    }`, ""},
		{"nothing captures", setup + `request "me" { path = "/${vu.vars.usr}" }`, `Nothing captures "usr"`},
		{"did you mean", setup + `request "me" { path = "/${vu.vars.usr}" }`, `Did you mean "user"?`},
		{"flow step reads another flow", setup + `
  flow "f" {
    request "a" {
      capture { item = json("id") }
    }
  }
  flow "g" {
    request "b" { path = "/${vu.vars.item}" }
  }`, `captured by request "a" in flow "f", which does not run before this step`},
		{"index form", setup + `request "me" { path = "/${vu.vars["nope"]}" }`, `Nothing captures "nope"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			test, diags := parseString(t, journey(tc.body), testOptions())
			got := render(t, test, diags)
			if tc.want == "" {
				if diags.HasErrors() {
					t.Fatalf("unexpected errors:\n%s", got)
				}
				return
			}
			if !diags.HasErrors() || !strings.Contains(got, tc.want) {
				t.Errorf("diagnostics do not say %q:\n%s", tc.want, got)
			}
			if n := len(diags.Errs()); n != 1 {
				t.Errorf("%d errors, want 1:\n%s", n, got)
			}
		})
	}
}

// TestFlowThresholds checks the flow filter of the flow metrics.
func TestFlowThresholds(t *testing.T) {
	const twoScenarios = `
target "shop" { base_url = "http://127.0.0.1:8080" }
scenario "journey" {
  executor = "constant-vus"
  vus      = 1
  duration = "1s"
  setup {
    request "login" { path = "/login" }
  }
  flow "order" {
    request "list" { path = "/" }
  }
}
scenario "plain" {
  executor = "constant-vus"
  vus      = 1
  duration = "1s"
  request "home" { path = "/" }
}
`
	for _, tc := range []struct {
		name, threshold string
		want            string // "" for no error
	}{
		{"setup is a flow", `metric = "flow_failures"
  flow = "setup"
  condition = "count == 0"`, ""},
		{"flow of the filtered scenario", `metric = "flow_duration"
  scenario = "journey"
  flow = "order"
  condition = "max < 5s"`, ""},
		{"count of completed flows", `metric = "flow_duration"
  condition = "count > 10"`, ""},
		{"scenario without flows", `metric = "flow_duration"
  scenario = "plain"
  condition = "p99 < 1s"`, `No flow records flow_duration`},
		{"flow not in the filtered scenario", `metric = "flow_duration"
  scenario = "plain"
  flow = "order"
  condition = "p99 < 1s"`, `No flow records flow_duration`},
		{"rate of a duration", `metric = "flow_duration"
  condition = "rate < 1%"`, `flow_duration metric takes a percentile`},
		{"failures compared with a duration", `metric = "flow_failures"
  condition = "count < 1s"`, `compared with a number, not a duration`},
		{"failures rate above 1", `metric = "flow_failures"
  condition = "rate < 2"`, `fraction between 0 and 1`},
		{"misspelled flow metric", `metric = "flow_duraton"
  condition = "p95 < 1s"`, `Did you mean "flow_duration"?`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := twoScenarios + "threshold {\n  " + tc.threshold + "\n}\n"
			test, diags := parseString(t, src, testOptions())
			got := render(t, test, diags)
			if tc.want == "" {
				if diags.HasErrors() {
					t.Fatalf("unexpected errors:\n%s", got)
				}
				return
			}
			if !strings.Contains(got, tc.want) {
				t.Errorf("diagnostics do not say %q:\n%s", tc.want, got)
			}
		})
	}
}

// TestCaptureArguments checks the arguments of the capture functions:
// constants, from var and local too, in the right number.
func TestCaptureArguments(t *testing.T) {
	for _, tc := range []struct {
		name, capture string
		want          string // "" for no error
		arg           string // the argument read, when no error
	}{
		{"variable", `x = json(var.path)`, "", "data.id"},
		{"local regex", `x = regex(local.pattern)`, "", `n=(\d)`},
		{"template", `x = header("X-${var.path}")`, "", "X-data.id"},
		{"status with an argument", `x = status("200")`, "Wrong number of arguments to status()", ""},
		{"header without its name", `x = header()`, "Wrong number of arguments to header()", ""},
		{"null argument", `x = cookie(null)`, "Invalid capture argument", ""},
		{"list argument", `x = cookie(["a"])`, "Invalid capture argument", ""},
		{"expanded argument", `x = json(["a"]...)`, "not expanded with ...", ""},
		{"misspelled function", `x = jsn("a")`, `Did you mean "json"?`, ""},
		{"per-iteration value", `x = json(vu.vars.x)`, "Per-iteration value not allowed here", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := `
variable "path" { default = "data.id" }
locals { pattern = "n=(\\d)" }
` + journey(`
  request "r" {
    capture { `+tc.capture+` }
  }`)
			test, diags := parseString(t, src, testOptions())
			got := render(t, test, diags)
			if tc.want != "" {
				if !strings.Contains(got, tc.want) || len(diags.Errs()) != 1 {
					t.Errorf("diagnostics do not say %q once:\n%s", tc.want, got)
				}
				return
			}
			if diags.HasErrors() {
				t.Fatalf("unexpected errors:\n%s", got)
			}
			cs := test.Scenarios[0].Requests[0].Captures
			if len(cs) != 1 || cs[0].Arg != tc.arg {
				t.Errorf("captures = %+v, want one with argument %q", cs, tc.arg)
			}
		})
	}
}
