package config

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/zclconf/go-cty/cty"
)

// FuzzParse checks that no input makes Parse panic, and that a config
// without errors yields a test. It is seeded with every testdata file.
func FuzzParse(f *testing.F) {
	seeds, err := filepath.Glob(filepath.Join("testdata", "*", "*.hcl"))
	if err != nil {
		f.Fatal(err)
	}
	for _, path := range seeds {
		src, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(src)
	}
	opts := testOptions()
	opts.Vars = map[string]string{"vus": "3"}
	dir := filepath.Join("testdata", "valid")
	f.Fuzz(func(t *testing.T, src []byte) {
		test, diags := Parse(map[string][]byte{"fuzz.hcl": src}, dir, opts)
		if test == nil {
			t.Fatal("Parse returned a nil Test")
		}
		if diags.HasErrors() {
			return
		}
		if len(test.Scenarios) == 0 {
			t.Fatal("no errors but no scenario")
		}
		// A valid test must also evaluate, with a row of each feeder and
		// a value for each name the scenario captures.
		for _, s := range test.Scenarios {
			vars := map[string]cty.Value{}
			for _, r := range s.Requests {
				for _, c := range r.Captures {
					vars[c.Name] = cty.StringVal("7")
				}
			}
			for _, r := range s.Requests {
				it := Iteration{VU: 2, Iteration: 3, Scenario: s.Name, Vars: vars}
				for _, f := range r.Feeders() {
					row, ok := f.NewCursor().Next()
					if !ok && f.Mode != modeUnique { // unique rows may run out
						t.Fatalf("feeder %s has no row", f.Name)
					}
					if it.Data == nil {
						it.Data = map[string]cty.Value{}
					}
					it.Data[f.Name] = f.Row(row)
				}
				// Errors are possible: a random row or value may not fit
				// where the sampled one did. Panics are not.
				r.Value(it)
			}
		}
	})
}
