package main

import (
	"strings"
	"testing"
)

// journeyPlan has a setup, two flows and a bare request whose weights add
// up to 100, so each share is its weight in percent.
const journeyPlan = `
target "web" {
  base_url = "http://127.0.0.1:1"
}
target "auth" {
  base_url = "http://127.0.0.1:2"
}
scenario "shop" {
  executor = "constant-vus"
  vus      = 4
  duration = "10s"
  target   = "web"
  setup {
    request "login" {
      target = "auth"
      method = "POST"
      path   = "/api/login"
      capture {
        token = json("token")
      }
    }
  }
  request "home" {
    weight = 60
    path   = "/"
  }
  flow "order" {
    weight     = 10
    think_time = "50ms"
    request "list" {
      path    = "/api/products"
      headers = { Authorization = "Bearer ${vu.vars.token}" }
      capture {
        product = json("items.0.id")
      }
    }
    request "detail" {
      path = "/api/products/${vu.vars.product}"
    }
    request "buy" {
      target     = "auth"
      method     = "POST"
      path       = "/api/orders"
      on_failure = "continue"
    }
  }
  flow "browse" {
    weight     = 30
    think_time = uniform("10ms", "30ms")
    request "search" {
      path = "/search"
    }
    request "results" {
      path = "/results"
    }
  }
}
`

// TestPlanListsFlows: hload plan prints the setup's steps, then each mix
// entry with its weight and share, and each flow's steps in order, with
// what they capture and the think time between them.
func TestPlanListsFlows(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "test.hcl", journeyPlan)
	r := hload(t, dir, "plan", "test.hcl")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	want := `  setup        target auth: login (captures token); once per VU, before its first iteration
  mix (an iteration runs one entry, picked by weight):
    request home  target web        weight 60  60.0 %
    flow order    target web, auth  weight 10  10.0 %  list (captures product) -> detail -> buy (on_failure continue); 50ms between steps
    flow browse   target web        weight 30  30.0 %  search -> results; uniform(10ms, 30ms) between steps
`
	// The schedule ends with the mix; what the test needs of the machine
	// follows.
	if !strings.Contains(r.stdout, want+"\nthis machine:") {
		t.Errorf("plan ends:\n%s\nwant it to end:\n%s", r.stdout, want)
	}
}

// TestPlanLatencyMustBePositive: --latency sizes the VU pool by Little's
// law, so a latency of zero or less is refused, naming the flag, rather
// than printing a pool of negative VUs.
func TestPlanLatencyMustBePositive(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "test.hcl", `
target "web" {
  base_url = "http://127.0.0.1:1"
}
scenario "open" {
  executor = "constant-arrival-rate"
  rate     = 100
  duration = "10s"
  request "home" {
    path = "/"
  }
}
`)
	for _, tt := range []struct {
		latency string
		code    int
	}{
		{"-5s", 2},
		{"0s", 2},
		{"250ms", 0},
	} {
		t.Run(tt.latency, func(t *testing.T) {
			r := hload(t, dir, "plan", "--latency", tt.latency, "test.hcl")
			if r.code != tt.code {
				t.Fatalf("exit %d, want %d\n%s%s", r.code, tt.code, r.stdout, r.stderr)
			}
			if tt.code == 0 {
				if !strings.Contains(r.stdout, "at 250ms  25 VUs") {
					t.Errorf("no pool sized for 250ms:\n%s", r.stdout)
				}
				// The estimate counts max_vus, by default the rate x 1 s.
				for _, want := range []string{
					"this machine: at its peak the test runs 100 VUs at once",
					"about 2.0 MiB, at 20 KiB per VU",
					"164: 100 connections and 64 for hload",
				} {
					if !strings.Contains(r.stdout, want) {
						t.Errorf("plan does not say %q:\n%s", want, r.stdout)
					}
				}
				return
			}
			if !strings.Contains(r.stderr, "--latency "+tt.latency+": the latency of an iteration must be longer than zero") || r.stdout != "" {
				t.Errorf("stdout %q, stderr %q: want only the refusal, naming --latency", r.stdout, r.stderr)
			}
		})
	}
}
