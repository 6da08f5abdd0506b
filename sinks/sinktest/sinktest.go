// Package sinktest runs a test with a setup, a flow and a bare request
// against a loopback shop that counts what it receives, for the sinks'
// tests of flow figures: what a sink shows of the flows must add up to
// the shop's own counts, which hload did not write.
package sinktest

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hload/hload/config"
	"github.com/hload/hload/core"
	"github.com/hload/hload/metrics"
	"github.com/hload/hload/protocols"
	hloadhttp "github.com/hload/hload/protocols/http"
)

// flowTest logs each of 3 VUs in once (setup), then mixes a flow "order"
// (cart, then pay on /flaky) with a bare request "home", for 3 s. extra
// is appended: a sink block, say.
const flowTest = `
target "web" {
  protocol = "http"
  base_url = %q
}
scenario "shop" {
  executor   = "constant-vus"
  vus        = 3
  duration   = "3s"
  think_time = "5ms"
  setup {
    request "login" { path = "/login" }
  }
  flow "order" {
    weight = 2
    request "cart" { path = "/cart" }
    request "pay" { path = "/flaky" }
  }
  request "home" { path = "/" }
}
%s`

// Counts are the shop's own counts: logins, calls of /flaky (one per
// order flow that ended), and the ones it answered 500 (one per failed
// order flow).
type Counts struct {
	Logins, Flaky, Failed int64
}

// RunFlows runs the flow test with extra appended to it, loaded with
// opts (its Protocols are set here) and run with sinks made by newSinks
// from the loaded test and its folder. It returns the summary and the
// shop's counts.
func RunFlows(t testing.TB, extra string, opts config.Options, newSinks func(test *config.Test, dir string) []core.Sink) (*metrics.Summary, Counts) {
	t.Helper()
	var logins, flaky, failed atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/login":
			logins.Add(1)
		case "/flaky":
			// Every third answer fails, so that some flows fail.
			if flaky.Add(1)%3 == 0 {
				failed.Add(1)
				http.Error(w, "flaky", http.StatusInternalServerError)
				return
			}
		}
		io.WriteString(w, "ok")
	}))
	defer srv.Close()

	reg := protocols.NewRegistry(hloadhttp.New())
	opts.Protocols = reg
	dir := t.TempDir()
	test, diags := config.Parse(map[string][]byte{"test.hcl": fmt.Appendf(nil, flowTest, srv.URL, extra)}, dir, opts)
	if diags.HasErrors() {
		t.Fatalf("config: %s", diags.Error())
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sum, err := core.Run(ctx, test, core.Options{Protocols: reg, Sinks: newSinks(test, dir)})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	return sum, Counts{Logins: logins.Load(), Flaky: flaky.Load(), Failed: failed.Load()}
}
