package demo_test

import (
	"context"
	"testing"
	"time"

	"github.com/hload/hload/config"
	"github.com/hload/hload/core"
	"github.com/hload/hload/demo"
	"github.com/hload/hload/protocols"
	hloadhttp "github.com/hload/hload/protocols/http"
)

// TestJourneyExample runs examples/journey.hcl against a demo of its own
// and checks hload's figures against the demo's counts, which hload did
// not write: every order carried the token the demo issued to that VU and
// an id listed to it; the flows that failed are exactly the lists the demo
// left without items, and nothing was sent after them; setup ran once per
// VU of a ramp whose VUs come and go.
func TestJourneyExample(t *testing.T) {
	if testing.Short() {
		t.Skip("a 20 s run of examples/journey.hcl; skipped with -short")
	}
	srv, err := demo.Start(t.Context(), "", demo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	reg := protocols.NewRegistry(hloadhttp.New())
	test, diags := config.Load([]string{"../examples/journey.hcl"}, config.Options{
		Protocols: reg,
		DemoURL:   func() (string, error) { return srv.URL(), nil },
	})
	if diags.HasErrors() {
		t.Fatalf("examples/journey.hcl: %s", diags.Error())
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	sum, err := core.Run(ctx, test, core.Options{Protocols: reg})
	if err != nil {
		t.Fatal(err)
	}
	st := srv.JourneyStats()
	shop := sum.Scenarios["shop"]
	if shop == nil {
		t.Fatalf("no scenario shop in the summary: %+v", sum.Scenarios)
	}
	req := func(name string) (count, status, capture int64) {
		r := shop.Requests[name]
		if r == nil {
			t.Fatalf("no request %q in the summary", name)
		}
		return r.Count, r.Status["200"] + r.Status["201"], r.ErrorsByKind["capture"]
	}
	flow := func(name string) (completed, failed, capture int64) {
		f := shop.Flows[name]
		if f == nil {
			t.Fatalf("no flow %q in the summary", name)
		}
		return f.Completed, f.Failed, f.FailedByKind["capture"]
	}
	logins, loginsOK, _ := req("login")
	browseLists, _, browseMissed := req("browse_list")
	orderLists, _, orderMissed := req("order_list")
	_, browseDetails, _ := req("browse_detail")
	_, orderDetails, _ := req("order_detail")
	buys, bought, _ := req("order_buy")
	setups, setupsFailed, _ := flow("setup")
	browsed, browseFailed, browseFailedCapture := flow("browse")
	ordered, orderFailed, orderFailedCapture := flow("order")
	t.Logf("demo: %+v", st)
	t.Logf("hload: %d logins, %d setups; lists %d+%d, %d+%d without the id; details %d+%d; orders %d, %d created; flows browse %d/%d failed, order %d/%d failed",
		logins, setups, browseLists, orderLists, browseMissed, orderMissed, browseDetails, orderDetails, buys, bought,
		browseFailed, browsed+browseFailed, orderFailed, ordered+orderFailed)

	// Must-show 1: every order carried its VU's token and an id it saw.
	if st.OrdersBadToken != 0 || st.OrdersNotListed != 0 || st.DetailsNotListed != 0 || st.Unauthorized != 0 {
		t.Errorf("the demo counts %d orders with a wrong or missing token, %d orders and %d details of ids never listed to the token, %d unauthorized requests; want 0",
			st.OrdersBadToken, st.OrdersNotListed, st.DetailsNotListed, st.Unauthorized)
	}
	if st.Orders != buys || st.OrdersCreated != bought || bought != ordered || bought == 0 {
		t.Errorf("the demo received %d orders and created %d; hload sent %d, %d created, %d order flows completed",
			st.Orders, st.OrdersCreated, buys, bought, ordered)
	}
	// Must-show 2: the flows that failed a capture are the lists without
	// items, and no later step was sent for them.
	if st.ListsWithoutItems == 0 || st.ListsWithoutItems != browseMissed+orderMissed ||
		st.ListsWithoutItems != browseFailedCapture+orderFailedCapture || browseFailed+orderFailed != st.ListsWithoutItems {
		t.Errorf("the demo left the items out of %d lists; hload's captures failed on %d+%d, flows failed by capture %d+%d of %d+%d failed",
			st.ListsWithoutItems, browseMissed, orderMissed, browseFailedCapture, orderFailedCapture, browseFailed, orderFailed)
	}
	if st.SentAfterFailedCapture != 0 {
		t.Errorf("%d requests were sent after a failed capture, want 0", st.SentAfterFailedCapture)
	}
	if st.Lists != browseLists+orderLists || st.Details != browseDetails+orderDetails || browseDetails != browsed {
		t.Errorf("the demo served %d lists and %d details; hload sent %d+%d lists, %d+%d details, %d browse flows completed",
			st.Lists, st.Details, browseLists, orderLists, browseDetails, orderDetails, browsed)
	}
	// Must-show 3: setup once per VU, with VUs that came and went.
	const vus = 20 // the example's peak
	if st.Logins != vus || setups != vus || setupsFailed != 0 || logins != vus || loginsOK != vus {
		t.Errorf("the demo counts %d logins; hload %d login requests (%d succeeded), %d setups (%d failed); want %d each, none failed",
			st.Logins, logins, loginsOK, setups, setupsFailed, vus)
	}
	for user, n := range st.LoginsByUser {
		if n != 1 {
			t.Errorf("user %s logged in %d times, want once", user, n)
		}
	}
	if len(st.LoginsByUser) != vus {
		t.Errorf("%d users logged in, want %d", len(st.LoginsByUser), vus)
	}
	if !sum.Passed {
		t.Errorf("the example's thresholds failed: %+v", sum.Thresholds)
	}
}
