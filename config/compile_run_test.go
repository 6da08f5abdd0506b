package config_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hload/hload/config"
	"github.com/hload/hload/core"
	"github.com/hload/hload/protocols"
	hloadhttp "github.com/hload/hload/protocols/http"
)

// recorder is a test server that records every request it receives.
type recorder struct {
	mu       sync.Mutex
	requests []string
}

func (rec *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rec.mu.Lock()
	rec.requests = append(rec.requests, fmt.Sprintf("%s %s auth=%q body=%s", r.Method, r.URL.RequestURI(), r.Header.Get("Authorization"), body))
	rec.mu.Unlock()
	if r.URL.Path == "/login" {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"token":"tok-1"}`)
	}
}

// runRecorded runs the test in src, compiled or all through HCL, with
// fixed draws, against a new recorder, and returns what it received.
func runRecorded(t *testing.T, src string, interpret bool) []string {
	t.Helper()
	rec := &recorder{}
	srv := httptest.NewServer(rec)
	defer srv.Close()
	dir := t.TempDir()
	files := map[string]string{"test.hcl": src, "users.csv": "email\nada@example.com\nzoë@example.com\n"}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	reg := protocols.NewRegistry(hloadhttp.New())
	// Fixed draws make both runs draw the same values. Their generator is
	// not safe for concurrent use: the test has one VU.
	test, diags := config.Load([]string{filepath.Join(dir, "test.hcl")}, config.Options{
		Protocols: reg, Vars: map[string]string{"base_url": srv.URL}, FixedDraws: true,
	})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	order := test.Scenarios[0].Requests[1]
	if got, want := fmt.Sprint(config.CompiledAttributes(order)), "[headers json path query]"; got != want {
		t.Fatalf("compiled attributes %s, want %s", got, want)
	}
	if interpret {
		config.InterpretOnly(test)
		if got := config.CompiledAttributes(order); len(got) > 0 {
			t.Fatalf("compiled attributes %v after InterpretOnly", got)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sum, err := core.Run(ctx, test, core.Options{Protocols: reg})
	if err != nil {
		t.Fatal(err)
	}
	if it := sum.Scenarios["s"].Iterations; it != 30 {
		t.Fatalf("%d iterations, want 30", it)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return slices.Clone(rec.requests)
}

// TestCompiledRequestsThroughCore: a run whose requests are compiled sends
// what the same run sends when every expression goes through HCL, as the
// server received it, request for request.
func TestCompiledRequestsThroughCore(t *testing.T) {
	src := `
variable "base_url" {}
data "csv" "users" { path = "users.csv" }
target "t" { base_url = var.base_url }
scenario "s" {
  executor   = "iterations"
  vus        = 1
  iterations = 30
  setup {
    request "login" {
      path = "/login"
      capture { token = json("token") }
    }
  }
  request "order" {
    method  = "POST"
    path    = "/orders/${random_string(8)}/${vu.iteration}"
    query   = { page = "1", user = data.users.email, pick = random_choice(["a", "b", "c"]) }
    headers = { Authorization = "Bearer ${vu.vars.token}" }
    json = {
      sku       = "A-100"
      quantity  = random_int(1, 9)
      price     = 19.99
      tags      = ["red", "small"]
      user      = data.users.email
      vu        = vu.id
      iteration = vu.iteration
    }
  }
}
`
	compiled := runRecorded(t, src, false)
	interpreted := runRecorded(t, src, true)
	if len(compiled) != 31 {
		t.Fatalf("the server received %d requests, want 31 (a login and 30 orders)", len(compiled))
	}
	if !slices.Equal(compiled, interpreted) {
		for i := range min(len(compiled), len(interpreted)) {
			if compiled[i] != interpreted[i] {
				t.Fatalf("request %d differs:\ncompiled:    %s\nthrough HCL: %s", i, compiled[i], interpreted[i])
			}
		}
		t.Fatalf("compiled run sent %d requests, through HCL %d", len(compiled), len(interpreted))
	}
	t.Logf("first order: %s", compiled[1])
}
