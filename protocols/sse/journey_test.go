package sse

import (
	"context"
	"fmt"
	nethttp "net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/hload/hload/config"
	"github.com/hload/hload/core"
	"github.com/hload/hload/plugins/protocoltest"
	"github.com/hload/hload/protocols"
	hloadhttp "github.com/hload/hload/protocols/http"
)

// orderFeed streams one order per subscription, its id in the event's data
// and the stream's id in a header, and takes confirmations by HTTP: it
// counts each confirmation that does not name the order and stream of one
// subscription, or names one twice.
type orderFeed struct {
	mu        sync.Mutex
	streams   int
	issued    map[string]string // order -> stream
	confirmed map[string]bool
	confirms  int
	wrong     int
	first     []string
}

func (f *orderFeed) ServeHTTP(w nethttp.ResponseWriter, r *nethttp.Request) {
	switch r.URL.Path {
	case "/orders/stream":
		f.mu.Lock()
		f.streams++
		order, stream := fmt.Sprint("o-", f.streams), fmt.Sprint("s-", f.streams)
		f.issued[order] = stream
		f.mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("X-Stream-Id", stream)
		w.WriteHeader(200)
		rc := nethttp.NewResponseController(w)
		fmt.Fprint(w, ": queued\n\n")
		rc.Flush()
		fmt.Fprintf(w, "event: placed\ndata: {\"order\":%q,\"state\":\"placed\"}\n\n", order)
		rc.Flush()
		<-r.Context().Done()
	case "/confirm":
		order, stream := r.URL.Query().Get("order"), r.Header.Get("X-Stream")
		f.mu.Lock()
		defer f.mu.Unlock()
		f.confirms++
		if f.issued[order] != stream || f.confirmed[order] {
			f.wrong++
			if len(f.first) < 5 {
				f.first = append(f.first, fmt.Sprintf("order %q with stream %q (issued with %q, confirmed before: %v)", order, stream, f.issued[order], f.confirmed[order]))
			}
		}
		f.confirmed[order] = true
	default:
		w.WriteHeader(nethttp.StatusNotFound)
	}
}

const orderJourney = `
target "feed" {
  protocol = "sse"
  base_url = "%[1]s"
}

target "api" {
  protocol = "http"
  base_url = "%[1]s"
}

scenario "track" {
  executor   = "iterations"
  vus        = 3
  iterations = 10
  max_duration = "20s"
  flow "order" {
    request "subscribe" {
      target = "feed"
      path   = "/orders/stream"
      events = 1
      capture {
        order  = json("order")
        stream = header("x-stream-id")
      }
    }
    request "confirm" {
      target  = "api"
      method  = "POST"
      path    = "/confirm"
      query   = { order = vu.vars.order }
      headers = { X-Stream = vu.vars.stream }
    }
  }
}
`

// TestJourneyCapturesFromASubscription runs a flow whose first step is a
// subscription: its captures read the event's data and the stream's
// response header, and the next step, an HTTP request, sends them back.
// On both paths (the SSE target in-process and isolated) every
// confirmation names the order and stream of one subscription, by the
// feed's own count.
func TestJourneyCapturesFromASubscription(t *testing.T) {
	protocoltest.Run(t, New(), func(t *testing.T, path protocoltest.Path, p protocols.Protocol) {
		f := &orderFeed{issued: map[string]string{}, confirmed: map[string]bool{}}
		srv := httptest.NewServer(f)
		defer srv.Close()
		registry := protocols.NewRegistry(New(), hloadhttp.New())
		test, diags := config.Parse(map[string][]byte{"test.hcl": fmt.Appendf(nil, orderJourney, srv.URL)}, t.TempDir(),
			config.Options{Protocols: registry})
		if diags.HasErrors() {
			t.Fatal(diags.Error())
		}
		opts := core.Options{Protocols: registry.With(p)}
		if path.Isolated {
			opts.Protocols = registry
			for _, tg := range test.Targets {
				tg.Isolate = tg.Protocol == Name
			}
			opts.Isolated = func(*config.Target) (protocols.Protocol, error) { return p, nil }
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		sum, err := core.Run(ctx, test, opts)
		if err != nil {
			t.Fatal(err)
		}
		flow := sum.Scenarios["track"].Flows["order"]
		f.mu.Lock()
		defer f.mu.Unlock()
		t.Logf("feed: %d streams, %d confirms, %d wrong; hload: %+v", f.streams, f.confirms, f.wrong, flow)
		if f.wrong != 0 {
			t.Errorf("the feed found %d wrong confirmations, such as %q", f.wrong, f.first)
		}
		if f.streams != 30 || f.confirms != 30 {
			t.Errorf("the feed took %d streams and %d confirms; want 30 each (3 VUs, 10 iterations)", f.streams, f.confirms)
		}
		if flow == nil || flow.Completed != int64(f.confirms) || flow.Failed != 0 {
			t.Errorf("hload's flows: %+v; the feed took %d confirms", flow, f.confirms)
		}
	})
}
