package csv_test

import (
	"encoding/csv"
	"os"
	"strconv"
	"testing"

	"github.com/hashicorp/hcl/v2/hcldec"

	"github.com/hload/hload/config"
	"github.com/hload/hload/core"
	csvsink "github.com/hload/hload/sinks/csv"
	"github.com/hload/hload/sinks/sinktest"
)

// TestFlowRowsAddUp runs a test with a setup, a flow and a bare request
// into the csv sink: the interval file's flow rows add up to what the
// target counted on its side (a login per VU, a /flaky call per order
// that ended, a failed order per 500 it answered), and its request rows
// still add up to the summary's requests, as they did before flows.
func TestFlowRowsAddUp(t *testing.T) {
	var sink *csvsink.Sink
	sum, shop := sinktest.RunFlows(t, `sink "csv" { path = "results.csv" }`,
		config.Options{Sinks: map[string]hcldec.ObjectSpec{"csv": csvsink.Spec()}},
		func(test *config.Test, dir string) []core.Sink {
			var err error
			if sink, err = csvsink.New(test.Sinks[0].Config, dir); err != nil {
				t.Fatal(err)
			}
			return []core.Sink{sink}
		})

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
	t.Logf("server: %d logins, %d /flaky calls, %d answered 500; csv counts %v, errors %v", shop.Logins, shop.Flaky, shop.Failed, counts, errs)

	if got := counts["flow/shop/setup"]; got != shop.Logins || got != 3 || errs["flow/shop/setup"] != 0 {
		t.Errorf("setup rows: %d ended, %d failed; the server saw %d logins from 3 VUs", got, errs["flow/shop/setup"], shop.Logins)
	}
	if got := counts["flow/shop/order"]; got != shop.Flaky || got < 10 || errs["flow/shop/order"] != shop.Failed || shop.Failed == 0 {
		t.Errorf("order rows: %d ended, %d failed; the server answered /flaky %d times, %d of them 500",
			got, errs["flow/shop/order"], shop.Flaky, shop.Failed)
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
