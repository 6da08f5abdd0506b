package core

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/hload/hload/metrics"
	"github.com/hload/hload/protocols"
	hloadhttp "github.com/hload/hload/protocols/http"
)

// bigBodyServer answers /big with a body of 3 MB that ends with MARKER on
// every other request (the server counts those), /json with a JSON object
// of about 3 MB whose id comes last, and /small with a small one.
type bigBodyServer struct {
	*countingServer
	marked atomic.Int64
	served atomic.Int64
}

func newBigBodyServer(t *testing.T) *bigBodyServer {
	s := &bigBodyServer{}
	filler := bytes.Repeat([]byte("0123456789abcdef"), 4096)
	const size = 3 << 20
	s.countingServer = newCountingServer(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/big":
			tail := ""
			if s.served.Add(1)%2 == 0 {
				tail = "MARKER"
				s.marked.Add(1)
			}
			w.Header().Set("Content-Length", strconv.Itoa(size+len(tail)))
			for n := 0; n < size; n += len(filler) {
				w.Write(filler)
			}
			w.Write([]byte(tail))
		case "/json":
			w.Write([]byte(`{"pad":"`))
			for n := 0; n < size; n += len(filler) {
				w.Write(filler)
			}
			w.Write([]byte(`","id":42}`))
		case "/small":
			w.Write([]byte(`{"id":7}`))
		}
	})
	return s
}

const bodyChecksTest = loopbackTarget + `
scenario "s" {
  executor   = "iterations"
  vus        = 2
  iterations = 10
  flow "f" {
    request "big" {
      path = "/big"
      check {
        body_contains = "MARKER"
      }
      check {
        status        = [200]
        body_contains = "NEVER"
      }
      check {
        status = [200]
      }
    }
    request "small" {
      path = "/small"
      capture {
        small_id = json("id")
      }
    }
    request "json_default" {
      path = "/json"
      on_failure = "continue"
      capture {
        id = json("id")
      }
    }
    request "json_raised" {
      path     = "/json"
      max_body = "4MiB"
      capture {
        id = json("id")
      }
    }
  }
}
`

// TestBodyChecksAndCaptures runs checks on 3 MB bodies and captures
// within and past max_body, with the HTTP protocol as it is (it searches
// bodies as they stream) and as a plugin built before BodyFound would be
// (hload keeps the body and searches it itself): the checks count what
// the server sent, by its own count, and a capture past max_body fails as
// body_too_large, while one on a body within it succeeds.
func TestBodyChecksAndCaptures(t *testing.T) {
	for _, old := range []bool{false, true} {
		t.Run(fmt.Sprintf("a plugin built before BodyFound %v", old), func(t *testing.T) {
			srv := newBigBodyServer(t)
			test := loadTest(t, bodyChecksTest, map[string]string{"base_url": srv.URL})
			p := protocols.Protocol(hloadhttp.New())
			if old {
				p = olderPlugin{p}
			}
			sum := runTest(t, test, Options{Protocols: protocols.NewRegistry(p)})
			reqs := sum.Scenarios["s"].Requests
			big, calls := reqs["big"], int64(20)
			if big.Count != calls || srv.served.Load() != calls {
				t.Fatalf("hload sent %d calls to /big, the server served %d; want %d", big.Count, srv.served.Load(), calls)
			}
			// Three checks a call: MARKER on the marked bodies, NEVER on
			// none, the status on all.
			marked := srv.marked.Load()
			if want := marked + calls; big.Checks.Passed != want || big.Checks.Failed != 3*calls-want {
				t.Errorf("checks passed %d, failed %d; the server marked %d of %d bodies, so want %d and %d",
					big.Checks.Passed, big.Checks.Failed, marked, calls, want, 3*calls-want)
			}
			if r := reqs["small"]; r.Errors != 0 {
				t.Errorf("a capture within max_body failed: %v %v", r.ErrorsByKind, r.ErrorMessages)
			}
			def := reqs["json_default"]
			if def.ErrorsByKind["body_too_large"] != calls || def.Errors != calls {
				t.Errorf("a capture past the default max_body: errors %v, want %d of kind body_too_large", def.ErrorsByKind, calls)
			}
			if msgs := def.ErrorMessages["body_too_large"]; len(msgs) == 0 || !strings.Contains(msgs[0], `capture "id": the response body is 3145746 bytes, more than max_body keeps (1048576)`) {
				t.Errorf("messages %q", msgs)
			}
			if r := reqs["json_raised"]; r.Errors != 0 || r.Count != calls {
				t.Errorf("a capture within a raised max_body: %d calls, errors %v %v", r.Count, r.ErrorsByKind, r.ErrorMessages)
			}
		})
	}
}

// olderPlugin is a protocol as a plugin built before Call.MaxBody,
// Call.BodyContains and Sample.BodyFound looks to the core: its client is
// no BodySearcher, knows none of those fields, and keeps whole bodies.
type olderPlugin struct{ protocols.Protocol }

func (o olderPlugin) Open(ctx context.Context, target cty.Value) (protocols.Client, error) {
	c, err := o.Protocol.Open(ctx, target)
	return olderClient{c}, err
}

type olderClient struct{ c protocols.Client }

func (o olderClient) Do(ctx context.Context, call protocols.Call, emit func(protocols.Sample)) {
	call.MaxBody, call.BodyContains = 0, nil
	o.c.Do(ctx, call, func(s protocols.Sample) {
		s.BodySize, s.BodyFound = 0, nil
		emit(s)
	})
}

func (o olderClient) Close() error { return o.c.Close() }

// TestChecksKeepNoBodyFromASearcher: a check's body_contains travels with
// the call, and only a client that does not search bodies itself is asked
// to keep the body for it.
func TestChecksKeepNoBodyFromASearcher(t *testing.T) {
	test := loadTest(t, loopbackTarget+`scenario "s" {
  executor   = "iterations"
  vus        = 1
  iterations = 1
  request "check" {
    path = "/"
    check {
      body_contains = "ok"
    }
    check {
      body_contains = "fine"
    }
    check {
      body_contains = "ok"
    }
  }
}
`, map[string]string{"base_url": "http://127.0.0.1:1"})
	for _, searches := range []bool{true, false} {
		c, err := hloadhttp.New().Open(context.Background(), test.Targets[0].Config)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if !searches {
			c = olderClient{c}
		}
		r := &run{state: &runState{}, agg: metrics.NewAggregator(), runCtx: context.Background(), clients: map[string]protocols.Client{"t": c}}
		req := newScenarioRun(r, test.Scenarios[0], -1).requests[0]
		if req.keepBody == searches || fmt.Sprint(req.bodyContains, req.needle) != "[ok fine] [0 1 0]" {
			t.Errorf("searches %v: keep body %v, substrings %q by check %v", searches, req.keepBody, req.bodyContains, req.needle)
		}
	}
}
