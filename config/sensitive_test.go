package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
)

// sensitiveFiles are compiledFiles with the variable sensitive, and the
// local, the target's URL and a static method read through env(): every
// shape of request then computes from marked values, compiled and
// through HCL.
func sensitiveFiles(t *testing.T) map[string]string {
	t.Helper()
	files := map[string]string{}
	for name, content := range compiledFiles {
		for _, r := range [][2]string{
			{`variable "sku" { default = "A-100" }`, "variable \"sku\" {\n  default   = \"A-100\"\n  sensitive = true\n}"},
			{`locals { prefix = "/api" }`, `locals { prefix = "/api${env("EMPTY")}" }`},
			{`base_url = "http://127.0.0.1:8080"`, `base_url = "http://127.0.0.1:8080${env("EMPTY")}"`},
			{`method = "POST"`, `method = upper("post${env("EMPTY")}")`},
		} {
			if name == "test.hcl" && !strings.Contains(content, r[0]) {
				t.Fatalf("compiledFiles has no %s", r[0])
			}
			content = strings.Replace(content, r[0], r[1], 1)
		}
		files[name] = content
	}
	return files
}

// loadWithEnv loads files with fixed draws and an environment.
func loadWithEnv(t *testing.T, files map[string]string, env map[string]string) *Test {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	opts := testOptions()
	opts.FixedDraws = true
	opts.LookupEnv = func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	test, diags := Load([]string{filepath.Join(dir, "test.hcl")}, opts)
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	return test
}

// TestSensitiveValuesArePlain: a test whose values come from a sensitive
// variable and env() gives its targets and protocols the same plain
// values as one without, per call, compiled and through HCL; and its
// Redact knows the sensitive strings, derived ones included.
func TestSensitiveValuesArePlain(t *testing.T) {
	env := map[string]string{"EMPTY": ""}
	for _, mode := range []string{"compiled", "interpreted"} {
		t.Run(mode, func(t *testing.T) {
			// Loaded afresh each, so that both draw alike.
			plain, sensitive := loadWithEnv(t, compiledFiles, env), loadWithEnv(t, sensitiveFiles(t), env)
			if mode == "interpreted" {
				interpretOnly(plain)
				interpretOnly(sensitive)
			}
			if !sensitive.SensitiveVariable("sku") || plain.SensitiveVariable("sku") {
				t.Fatal("sku is not sensitive, or sensitive without sensitive = true")
			}
			if mode == "compiled" {
				// Sensitive constants do not cost the compiled form.
				for _, r := range sensitive.Scenarios[0].Requests[1:] {
					for _, a := range r.dynamic {
						if a.node == nil && a.key != "form" { // form is HCL's (compile_test.go)
							t.Errorf("request %s: %s is not compiled", r.Name, a.key)
						}
					}
				}
			}
			cfg := sensitive.Targets[0].Config
			if cfg.ContainsMarked() || !cfg.RawEquals(plain.Targets[0].Config) {
				t.Fatalf("target config %#v, want %#v, unmarked", cfg, plain.Targets[0].Config)
			}
			feeder := sensitive.Feeders[0]
			for i := range 50 {
				it := fixedIteration(i, feeder)
				for j, r := range sensitive.Scenarios[0].Requests {
					got, d, diags := r.Eval(it)
					want, wd, wdiags := plain.Scenarios[0].Requests[j].Eval(it)
					if diags.HasErrors() || wdiags.HasErrors() {
						t.Fatalf("%s: %v / %v", r.Name, diags, wdiags)
					}
					if got.ContainsMarked() {
						t.Fatalf("%s, iteration %d: %#v is marked; protocols get plain values", r.Name, i, got)
					}
					sameValue(t, fmt.Sprintf("%s, iteration %d", r.Name, i), got, want)
					if d != wd {
						t.Fatalf("%s: delivery %+v, want %+v", r.Name, d, wd)
					}
				}
			}
			for _, s := range []string{"A-100", "/api", "http://127.0.0.1:8080"} {
				if got := sensitive.Redact("a " + s + " b"); got != "a "+Redacted+" b" {
					t.Errorf("Redact(%q) = %q", s, got)
				}
			}
			if got := plain.Redact("A-100"); got != "A-100" {
				t.Errorf("a test without sensitive values redacted %q", got)
			}
		})
	}
}

// TestSensitiveVariableSources: a variable is sensitive with sensitive =
// true whatever sets it; from HLOAD_VAR_ unless it says sensitive =
// false; from --var or its default only with sensitive = true.
func TestSensitiveVariableSources(t *testing.T) {
	src := `
variable "flagged" {
  sensitive = true
  default   = "dflt-secret"
}
variable "from_env" {}
variable "env_shown" {
  sensitive = false
}
variable "from_flag" {}
variable "plain_default" {
  default = "plain-default"
}
target "t" {
  base_url = "http://127.0.0.1:1"
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
	opts := testOptions()
	opts.Vars = map[string]string{"from_flag": "flag-value"}
	opts.LookupEnv = func(k string) (string, bool) {
		v, ok := map[string]string{"HLOAD_VAR_from_env": "env-secret", "HLOAD_VAR_env_shown": "env-shown"}[k]
		return v, ok
	}
	test, diags := Parse(map[string][]byte{"test.hcl": []byte(src)}, t.TempDir(), opts)
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	for name, want := range map[string]bool{"flagged": true, "from_env": true, "env_shown": false, "from_flag": false, "plain_default": false} {
		if got := test.SensitiveVariable(name); got != want {
			t.Errorf("%s: sensitive %v, want %v", name, got, want)
		}
	}
	if got := test.Redact("dflt-secret env-secret env-shown flag-value"); got != Redacted+" "+Redacted+" env-shown flag-value" {
		t.Errorf("Redact: %q", got)
	}
	vars := test.RedactVariables(map[string]string{"flagged": "x-secret", "from_flag": "flag-value"})
	if vars["flagged"] != Redacted || vars["from_flag"] != "flag-value" {
		t.Errorf("RedactVariables: %v", vars)
	}

	// A value that is refused is not quoted when it is sensitive.
	opts.Vars = map[string]string{"n": "not-a-number-secret"}
	test, diags = Parse(map[string][]byte{"test.hcl": []byte(`
variable "n" {
  type      = number
  sensitive = true
}
`)}, t.TempDir(), opts)
	text := test.RedactDiagnostics(diags).Error()
	if !strings.Contains(text, `Variable "n" is a number, but --var n, a sensitive value, is not`) || strings.Contains(text, "not-a-number-secret") {
		t.Errorf("diagnostics: %s", text)
	}
}

// TestRedact: the longest secret is replaced first, the quoted form of a
// secret too, and a string shorter than minSecret is left alone.
func TestRedact(t *testing.T) {
	var s secrets
	for _, secret := range []string{"token", "token-long", `quo"te`, "abc"} {
		s.add(secret)
	}
	test := &Test{secrets: s.list()}
	for in, want := range map[string]string{
		"a token-long b":      "a " + Redacted + " b",
		"a token b":           "a " + Redacted + " b",
		`got "quo\"te"`:       `got "` + Redacted + `"`,
		`got quo"te`:          "got " + Redacted,
		"abc is too short":    "abc is too short",
		"nothing to see here": "nothing to see here",
	} {
		if got := test.Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
	if n := testing.AllocsPerRun(100, func() { test.Redact("a message without secrets") }); n != 0 {
		t.Errorf("Redact of a clean message allocates %v times", n)
	}
}

// TestSensitiveDiagnosticContext: hcl's writer says "with var.x as ..."
// from a diagnostic's expression and context; it skips marked values, so
// a sensitive variable and a local or let computed from it are never
// printed, while other values still are.
func TestSensitiveDiagnosticContext(t *testing.T) {
	src := `
variable "token" {
  sensitive = true
  default   = "tok-secret-1"
}
variable "n" {
  default = "shown-value"
}
locals {
  auth = "Bearer ${var.token}"
}
target "t" {
  base_url = "http://127.0.0.1:1"
}
scenario "s" {
  executor = "constant-vus"
  vus      = 1
  duration = "1s"
  request "a" {
    path = "/${local.auth * 2}"
  }
  request "b" {
    let  = { t = var.token }
    path = "/${let.t * 2}/${vu.id}"
  }
  request "c" {
    path = "/${var.n * 2}"
  }
}
`
	test, diags := Parse(map[string][]byte{"test.hcl": []byte(src)}, t.TempDir(), testOptions())
	if len(diags.Errs()) != 3 {
		t.Fatalf("want 3 errors, got %s", diags.Error())
	}
	var b strings.Builder
	w := hcl.NewDiagnosticTextWriter(&b, test.Files, 0, false)
	if err := w.WriteDiagnostics(test.RedactDiagnostics(diags)); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if strings.Contains(out, "tok-secret-1") || strings.Contains(out, "with local.auth") || strings.Contains(out, "with let.t") {
		t.Errorf("a sensitive value is printed:\n%s", out)
	}
	if !strings.Contains(out, `with var.n as "shown-value"`) {
		t.Errorf("a plain value is not printed:\n%s", out)
	}
}

// TestSensitiveSinkPaths: a sink knows which of its attributes were
// sensitive, so that one that would store them in clear can refuse.
func TestSensitiveSinkPaths(t *testing.T) {
	opts := testOptions()
	opts.LookupEnv = func(string) (string, bool) { return "from-env", true }
	test, diags := Parse(map[string][]byte{"test.hcl": []byte(`
sink "csv" {
  path = env("OUT")
  raw  = true
}
`)}, t.TempDir(), opts)
	if len(test.Sinks) != 1 {
		t.Fatalf("sinks: %v (%s)", test.Sinks, diags.Error())
	}
	s := test.Sinks[0]
	if !s.Sensitive("path") || s.Sensitive("raw") || s.Config.ContainsMarked() {
		t.Errorf("path sensitive %v, raw sensitive %v, config %#v", s.Sensitive("path"), s.Sensitive("raw"), s.Config)
	}
	if got := s.Config.GetAttr("path"); !got.RawEquals(cty.StringVal("from-env")) {
		t.Errorf("path %#v", got)
	}
}
