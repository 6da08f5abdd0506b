package csv_test

import (
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2/hcldec"

	"github.com/hload/hload/config"
	"github.com/hload/hload/core"
	"github.com/hload/hload/protocols"
	hloadhttp "github.com/hload/hload/protocols/http"
	csvsink "github.com/hload/hload/sinks/csv"
)

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
sink "csv" { path = "results.csv" }
`

// TestFlowRowsAddUp runs a test with a setup, a flow and a bare request
// into the csv sink: the interval file's flow rows add up to what the
// target counted on its side (a login per VU, a /flaky call per order
// that ended, a failed order per 500 it answered), and its request rows
// still add up to the summary's requests, as they did before flows.
func TestFlowRowsAddUp(t *testing.T) {
	var logins, flaky, failed atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/login":
			logins.Add(1)
		case "/flaky":
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
	dir := t.TempDir()
	test, diags := config.Parse(map[string][]byte{"test.hcl": fmt.Appendf(nil, flowTest, srv.URL)}, dir, config.Options{
		Protocols: reg,
		Sinks:     map[string]hcldec.ObjectSpec{"csv": csvsink.Spec()},
	})
	if diags.HasErrors() {
		t.Fatalf("config: %s", diags.Error())
	}
	sink, err := csvsink.New(test.Sinks[0].Config, dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sum, err := core.Run(ctx, test, core.Options{Protocols: reg, Sinks: []core.Sink{sink}})
	if err != nil {
		t.Fatalf("run: %v", err)
	}

	f, err := os.Open(sink.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	// count and errors per "kind/scenario/request", and the intervals in
	// which a completed flow left its latency columns empty.
	counts, errs := map[string]int64{}, map[string]int64{}
	for _, r := range rows[1:] {
		if r[3] == "" {
			continue // a scenario's VUs in an interval without requests
		}
		key := r[17] + "/" + r[2] + "/" + r[3]
		n, _ := strconv.ParseInt(r[4], 10, 64)
		e, _ := strconv.ParseInt(r[5], 10, 64)
		counts[key] += n
		errs[key] += e
		if r[17] == "flow" && n > e && r[10] == "" {
			t.Errorf("flow row %q: flows completed but no duration", r)
		}
	}
	t.Logf("server: %d logins, %d /flaky calls, %d answered 500; csv counts %v, errors %v", logins.Load(), flaky.Load(), failed.Load(), counts, errs)

	if got := counts["flow/shop/setup"]; got != logins.Load() || got != 3 || errs["flow/shop/setup"] != 0 {
		t.Errorf("setup rows: %d ended, %d failed; the server saw %d logins from 3 VUs", got, errs["flow/shop/setup"], logins.Load())
	}
	if got := counts["flow/shop/order"]; got != flaky.Load() || got < 10 || errs["flow/shop/order"] != failed.Load() || failed.Load() == 0 {
		t.Errorf("order rows: %d ended, %d failed; the server answered /flaky %d times, %d of them 500",
			got, errs["flow/shop/order"], flaky.Load(), failed.Load())
	}
	var requestRows int
	for rq, fig := range sum.Scenarios["shop"].Requests {
		requestRows++
		if got := counts["request/shop/"+rq]; got != fig.Count {
			t.Errorf("request %s: its rows add up to %d, the summary says %d", rq, got, fig.Count)
		}
	}
	if requestRows != 4 || len(counts) != 4+2 {
		t.Errorf("rows by kind, scenario and request: %v; want the 4 requests and the 2 flows", counts)
	}
}
