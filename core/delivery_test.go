package core

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/zclconf/go-cty/cty"

	"github.com/hload/hload/protocols"
	"github.com/hload/hload/protocols/delivery"
)

// sendProtocol answers each call with the status its request names, and
// remembers the ids it answered 200 to, as a server that accepted them.
// Any other status is a failed call of kind "refused".
type sendProtocol struct {
	mu       sync.Mutex
	accepted map[string]bool
	ledger   *delivery.Ledger // seen by Open
}

func (p *sendProtocol) Describe() protocols.Info {
	return protocols.Info{
		Name:       "send",
		TargetSpec: hcldec.ObjectSpec{},
		RequestSpec: hcldec.ObjectSpec{
			"status": &hcldec.AttrSpec{Name: "status", Type: cty.Number},
			"id":     &hcldec.AttrSpec{Name: "id", Type: cty.String},
			"hold":   &hcldec.AttrSpec{Name: "hold", Type: cty.Bool},
		},
	}
}

func (p *sendProtocol) Open(ctx context.Context, _ cty.Value) (protocols.Client, error) {
	p.ledger = delivery.LedgerFrom(ctx)
	return p, nil
}

func (p *sendProtocol) Do(ctx context.Context, call protocols.Call, emit func(protocols.Sample)) {
	start := time.Now()
	if hold := protocols.Attr(call.Request, "hold"); !hold.IsNull() && hold.True() {
		// A subscription: held until the scenario ends, then a success.
		select {
		case <-protocols.Ending(ctx):
			emit(protocols.Sample{Metric: protocols.MetricRequest, Time: time.Now(), Value: time.Since(start)})
		case <-ctx.Done():
			emit(protocols.Sample{Metric: protocols.MetricRequest, Time: time.Now(), Value: time.Since(start), Error: protocols.ErrInterrupted})
		}
		return
	}
	n, _ := protocols.Attr(call.Request, "status").AsBigFloat().Int64()
	if n == 200 {
		id, _ := protocols.StringAttr(call.Request, "id")
		p.mu.Lock()
		p.accepted[id] = true
		p.mu.Unlock()
	}
	s := protocols.Sample{Metric: protocols.MetricRequest, Time: time.Now(), Value: time.Since(start), Status: int(n)}
	if n >= 400 {
		// The protocol, not the core, says that a refusal failed.
		s.Error, s.Message = "refused", "the server refused it"
	}
	emit(s)
}

func (p *sendProtocol) Close() error { return nil }

// TestDeliveryRecordsSuccessfulSends: the core records a request's
// delivery id in the run's ledger, as expected only when the call
// succeeded, under the key its let chose.
func TestDeliveryRecordsSuccessfulSends(t *testing.T) {
	p := &sendProtocol{accepted: map[string]bool{}}
	test := loadWith(t, `
target "t" { protocol = "send" }
scenario "s" {
  executor   = "iterations"
  vus        = 4
  iterations = 100
  request "r" {
    let      = { user = random_int(1, 2), status = random_choice([200, 200, 500, 429]) }
    status   = let.status
    id       = "${vu.id}-${vu.iteration}"
    delivery = { key = "user-${let.user}", id = "${vu.id}-${vu.iteration}" }
  }
}
`, p)
	l := delivery.NewLedger()
	watches := map[string]*delivery.Watch{"user-1": l.Watch("user-1"), "user-2": l.Watch("user-2")}
	sum, err := Run(delivery.WithLedger(context.Background(), l), test, Options{Protocols: protocols.NewRegistry(p)})
	if err != nil {
		t.Fatal(err)
	}
	if p.ledger != l {
		t.Fatal("Open did not find the run's ledger in its context")
	}
	figures := sum.Scenarios["s"].Requests["r"]
	if figures.Count != 400 || figures.Status["200"] == 0 || figures.Status["200"] == 400 {
		t.Fatalf("count %d, statuses %v: want 400 calls, some refused", figures.Count, figures.Status)
	}
	// The watches received what the server accepted for their key; the
	// ledger must know every accepted id under exactly one key, and expect
	// none of the refused ones.
	received := 0
	for id := range p.accepted {
		found := 0
		for _, w := range watches {
			if w.Received([]byte(id)) == delivery.ReceiptFirst {
				found++
			}
		}
		if found != 1 {
			t.Fatalf("accepted id %s matched %d keys, want 1", id, found)
		}
		received++
	}
	missed := 0
	for _, w := range watches {
		missed += w.Close(time.Now().Add(time.Hour), 0)
	}
	if int64(received) != figures.Status["200"] || missed != 0 {
		t.Errorf("received %d of %d accepted ids, missed %d; want all and none missed", received, figures.Status["200"], missed)
	}
}

// TestEndingEndsHeldCalls: a call that holds until the scenario ends gets
// the ending channel in its context, so it ends as a success at the
// scenario's end instead of being interrupted after the graceful stop.
func TestEndingEndsHeldCalls(t *testing.T) {
	p := &sendProtocol{accepted: map[string]bool{}}
	test := loadWith(t, strings.TrimSpace(`
target "t" { protocol = "send" }
scenario "s" {
  executor      = "constant-vus"
  vus           = 3
  duration      = "300ms"
  graceful_stop = "1m"
  request "r" {
    hold = true
  }
}
`), p)
	// Were the calls not ended by the ending channel, they would be cut
	// after the 1m graceful stop and count as interrupted errors.
	sum, err := Run(context.Background(), test, Options{Protocols: protocols.NewRegistry(p)})
	if err != nil {
		t.Fatal(err)
	}
	figures := sum.Scenarios["s"].Requests["r"]
	if figures.Count != 3 || figures.Errors != 0 {
		t.Errorf("count %d, errors %d (%v): want 3 held calls ended as successes", figures.Count, figures.Errors, figures.ErrorsByKind)
	}
}

// TestRunCreatesALedger: a run whose context has no ledger gets its own,
// so the CLI's subscribers can match what they receive.
func TestRunCreatesALedger(t *testing.T) {
	p := &sendProtocol{accepted: map[string]bool{}}
	test := loadWith(t, `
target "t" { protocol = "send" }
scenario "s" {
  executor   = "iterations"
  vus        = 1
  iterations = 1
  request "r" {
    status   = 200
    id       = "only"
    delivery = { key = "k", id = "only" }
  }
}
`, p)
	if _, err := Run(context.Background(), test, Options{Protocols: protocols.NewRegistry(p)}); err != nil {
		t.Fatal(err)
	}
	if p.ledger == nil {
		t.Fatal("Open found no ledger in its context")
	}
}
