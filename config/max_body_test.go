package config

import (
	"strings"
	"testing"
)

// TestMaxBody checks how a request's max_body is resolved (its own, else
// its target's, else the default) and read (bytes, or a number and a
// unit).
func TestMaxBody(t *testing.T) {
	cases := []struct {
		name            string
		target, request string // max_body's expression, "" for none
		want            int64
	}{
		{"default", "", "", DefaultMaxBody},
		{"target's", `"4MiB"`, "", 4 << 20},
		{"request's over the target's", `"4MiB"`, `"512KiB"`, 512 << 10},
		{"bytes", "", "1000", 1000},
		{"decimal units", "", `"2MB"`, 2000000},
		{"a fraction of a unit", "", `"1.5KiB"`, 1536},
		{"any case, spaces", "", `" 1 gib "`, 1 << 30},
		{"plain B", "", `"64B"`, 64},
		{"a variable", "", `var.size`, 65536},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			target, request := "", ""
			if tc.target != "" {
				target = "max_body = " + tc.target
			}
			if tc.request != "" {
				request = "max_body = " + tc.request
			}
			src := `variable "size" { default = 65536 }
target "shop" {
  base_url = "http://127.0.0.1:8080"
  ` + target + `
}
scenario "browse" {
  executor = "constant-vus"
  vus      = 1
  duration = "1s"
  request "r" {
    path = "/"
    ` + request + `
  }
}`
			test, diags := parseString(t, src, testOptions())
			if diags.HasErrors() {
				t.Fatal(render(t, test, diags))
			}
			if got := test.Scenarios[0].Requests[0].MaxBody; got != tc.want {
				t.Errorf("MaxBody = %d, want %d", got, tc.want)
			}
		})
	}
}

// TestMaxBodyRefused checks that a size hload cannot use is an error at
// load, on the attribute, saying what a size looks like.
func TestMaxBodyRefused(t *testing.T) {
	cases := []struct{ where, value, want string }{
		{"request", `"1 megabyte"`, `got "1 megabyte"; write a number and one of the units`},
		{"request", `0`, "from 1 byte to 1GiB: got 0"},
		{"request", `"2GiB"`, `from 1 byte to 1GiB: got "2GiB"`},
		{"request", `1.5`, "not a whole number of bytes"},
		{"request", `"MiB"`, `got "MiB"`},
		{"request", `true`, "got true"},
		{"target", `"-1KiB"`, `got "-1KiB"`},
		{"request", `vu.id`, "Per-iteration value not allowed here"},
	}
	for _, tc := range cases {
		t.Run(tc.where+" "+tc.value, func(t *testing.T) {
			target, request := "", `path = "/"`
			if tc.where == "target" {
				target = "max_body = " + tc.value
			} else {
				request += "\nmax_body = " + tc.value
			}
			src := `target "shop" {
  base_url = "http://127.0.0.1:8080"
  ` + target + `
}
scenario "browse" {
  executor = "constant-vus"
  vus      = 1
  duration = "1s"
  request "r" {
    ` + request + `
  }
}`
			test, diags := parseString(t, src, testOptions())
			if !diags.HasErrors() {
				t.Fatal("no error")
			}
			text := render(t, test, diags)
			if !strings.Contains(text, tc.want) || !strings.Contains(text, "max_body =") {
				t.Errorf("errors do not mention %q at max_body:\n%s", tc.want, text)
			}
		})
	}
}
