package config

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"

	hloadhttp "github.com/hload/hload/protocols/http"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/invalid")

// TestInvalidGolden loads each broken config in testdata/invalid and
// compares the rendered diagnostics with its .golden file. Each case must
// produce exactly one error that points into its own file.
func TestInvalidGolden(t *testing.T) {
	cases, err := filepath.Glob(filepath.Join("testdata", "invalid", "*.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	if len(cases) < 20 {
		t.Fatalf("found %d invalid cases, want at least 20", len(cases))
	}
	for _, path := range cases {
		name := strings.TrimSuffix(filepath.Base(path), ".hcl")
		t.Run(name, func(t *testing.T) {
			test, diags := Load([]string{path}, goldenOptions(name))
			var errs hcl.Diagnostics
			for _, d := range diags {
				if d.Severity == hcl.DiagError {
					errs = append(errs, d)
				}
			}
			if len(errs) != 1 {
				t.Fatalf("got %d errors, want exactly 1:\n%s", len(errs), render(t, test, diags))
			}
			d := errs[0]
			if d.Subject == nil || !strings.HasSuffix(d.Subject.Filename, filepath.Base(path)) || d.Subject.Start.Line <= 0 {
				t.Fatalf("error has no usable subject: %+v", d.Subject)
			}

			got := render(t, test, diags)
			golden := strings.TrimSuffix(path, ".hcl") + ".golden"
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test ./config -update)", err)
			}
			if got != string(want) {
				t.Errorf("diagnostics differ from %s (run go test ./config -update)\ngot:\n%s\nwant:\n%s", golden, got, want)
			}
		})
	}
}

// goldenOptions are the options a golden case loads with: the fake
// protocols, plugins provided as fakeKV, and no demo target
// (40-demo-url-unavailable). A case named "-http-" checks what the real
// http protocol's validators say, so it loads with the real http protocol;
// 59-plugin-without-plugin-host has no plugin host.
func goldenOptions(name string) Options {
	opts := testOptions()
	opts.DemoURL = nil
	opts.Plugins = fakePluginHost
	if strings.Contains(name, "-without-plugin-host") {
		opts.Plugins = nil
	}
	if strings.Contains(name, "-http-") {
		opts.Protocols = opts.Protocols.With(hloadhttp.New())
	}
	return opts
}

// render writes diags as the CLI does, without color or wrapping.
func render(t *testing.T, test *Test, diags hcl.Diagnostics) string {
	t.Helper()
	var files map[string]*hcl.File
	if test != nil {
		files = test.Files
	}
	var buf bytes.Buffer
	if err := hcl.NewDiagnosticTextWriter(&buf, files, 0, false).WriteDiagnostics(diags); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}
