package core

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/hload/hload/config"
	"github.com/hload/hload/metrics"
	"github.com/hload/hload/protocols"
)

// TestSentNothingHasNoServiceTime: in the open model, a call whose
// expressions failed sent nothing, so it has no service time; it counts
// among the calls and the errors only. service_time counts the calls the
// protocol received.
func TestSentNothingHasNoServiceTime(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "rows.csv"), []byte("payload\n1\nx\n3\ny\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := newFaultProtocol()
	test, diags := config.Load([]string{writeHCL(t, dir, `
data "csv" "rows" {
  path = "rows.csv"
  mode = "sequential"
}
target "t" { protocol = "fault" }
scenario "s" {
  executor = "constant-arrival-rate"
  rate     = 20
  duration = "1s"
  request "r" {
    message = tostring(jsondecode(data.rows.payload))
  }
}
`)}, config.Options{Protocols: protocols.NewRegistry(p)})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	sum, err := Run(context.Background(), test, Options{Protocols: protocols.NewRegistry(p)})
	if err != nil {
		t.Fatal(err)
	}
	r := sum.Scenarios["s"].Requests["r"]
	sent := p.calls.Load()
	if r.Count == 0 || r.ErrorsByKind["eval"] != r.Count-sent || sent == 0 {
		t.Fatalf("%d calls, eval errors %d; the protocol received %d", r.Count, r.ErrorsByKind["eval"], sent)
	}
	if n := r.Metrics[metrics.MetricServiceTime].Count; n != sent {
		t.Errorf("service_time counts %d calls, want the %d the protocol received (of %d)", n, sent, r.Count)
	}
}
