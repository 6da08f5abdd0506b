package main

import (
	"fmt"
	"strings"
	"testing"
)

// TestJourneyMistakesRejectedFirst: a reference to a captured name that
// nothing captures before it, and a flow with no steps, are refused by
// validate and by apply alike, exit 2 at their file:line:col, and apply
// sends nothing: the server counts no request.
func TestJourneyMistakesRejectedFirst(t *testing.T) {
	srv, served := okServer(t)
	cases := []struct {
		name, body string
		at         string // the place the error must name, as file:line:col
		title      string
	}{
		{
			name: "nothing captures the name",
			body: `
  setup {
    request "login" {
      method = "POST"
      path   = "/login"
      capture {
        token = json("token")
      }
    }
  }
  flow "order" {
    request "list" {
      path    = "/products"
      headers = { Authorization = "Bearer ${vu.vars.tokn}" }
    }
  }`,
			at:    "test.hcl:22:45",
			title: `Nothing captures "tokn"`,
		},
		{
			name: "captured only by a later step",
			body: `
  flow "order" {
    request "buy" {
      method = "POST"
      path   = "/orders"
      json   = { product_id = vu.vars.product }
    }
    request "list" {
      path = "/products"
      capture {
        product = json("items.0.id")
      }
    }
  }`,
			at:    "test.hcl:14:31",
			title: `"product" is not captured before this step`,
		},
		{
			name: "a flow with no steps",
			body: `
  request "home" {
    path = "/"
  }
  flow "order" {
    weight = 10
  }`,
			at:    "test.hcl:13:3",
			title: "Flow without steps",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, dir, "test.hcl", fmt.Sprintf(`target "shop" {
  base_url = %q
}

scenario "shop" {
  executor = "constant-vus"
  vus      = 2
  duration = "2s"
%s
}
`, srv.URL, c.body))
			for _, cmd := range []string{"validate", "apply"} {
				r := hload(t, dir, cmd, "test.hcl")
				if r.code != 2 {
					t.Errorf("%s: exit %d, want 2\n%s%s", cmd, r.code, r.stdout, r.stderr)
				}
				if !strings.Contains(r.stderr, c.title) || !strings.Contains(r.stderr, c.at) {
					t.Errorf("%s: stderr does not say %q at %s:\n%s", cmd, c.title, c.at, r.stderr)
				}
			}
			if n := served.Load(); n != 0 {
				t.Errorf("the server received %d requests; a rejected test sends none", n)
			}
		})
	}
}
