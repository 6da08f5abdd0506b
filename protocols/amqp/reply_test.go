package amqp

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/zclconf/go-cty/cty"

	"github.com/hload/hload/plugins/protocoltest"
	"github.com/hload/hload/protocols"
)

// TestReplyHeaders: the properties a reply carries appear under their
// names, those it does not carry are absent, each table value is text, and
// a table entry named as a property comes second.
func TestReplyHeaders(t *testing.T) {
	stamp := time.Date(2026, 3, 4, 5, 6, 7, 0, time.FixedZone("x", 3600))
	d := amqp.Delivery{
		ContentType: "application/json", DeliveryMode: 2, Priority: 3, CorrelationId: "c-1",
		MessageId: "m-1", Timestamp: stamp, Type: "order.created", AppId: "shop",
		Headers: amqp.Table{
			"x-order":   "o-42",
			"x-bytes":   []byte("raw"),
			"x-int8":    int8(-8),
			"x-int16":   int16(16),
			"x-int32":   int32(32),
			"x-int64":   int64(1) << 40,
			"x-uint8":   uint8(200),
			"x-uint16":  uint16(65000),
			"x-float32": float32(1.5),
			"x-float64": 0.1,
			"x-bool":    true,
			"x-void":    nil,
			"x-decimal": amqp.Decimal{Scale: 2, Value: -12345},
			"x-time":    stamp,
			"x-list":    []any{"a", int32(1), []byte("b"), amqp.Table{"k": false}},
			"x-table":   amqp.Table{"id": int64(7), "at": stamp},
			"type":      "from-the-table",
		},
	}
	want := map[string][]string{
		"content_type":   {"application/json"},
		"delivery_mode":  {"2"},
		"priority":       {"3"},
		"correlation_id": {"c-1"},
		"message_id":     {"m-1"},
		"timestamp":      {"2026-03-04T04:06:07Z"},
		"type":           {"order.created", "from-the-table"},
		"app_id":         {"shop"},
		"x-order":        {"o-42"},
		"x-bytes":        {"raw"},
		"x-int8":         {"-8"},
		"x-int16":        {"16"},
		"x-int32":        {"32"},
		"x-int64":        {"1099511627776"},
		"x-uint8":        {"200"},
		"x-uint16":       {"65000"},
		"x-float32":      {"1.5"},
		"x-float64":      {"0.1"},
		"x-bool":         {"true"},
		"x-void":         {""},
		"x-decimal":      {"-123.45"},
		"x-time":         {"2026-03-04T04:06:07Z"},
		"x-list":         {`["a",1,"b",{"k":false}]`},
		"x-table":        {`{"at":"2026-03-04T04:06:07Z","id":7}`},
	}
	got := replyHeaders(&d)
	for name, w := range want {
		if !slices.Equal(got[name], w) {
			t.Errorf("%s = %q, want %q", name, got[name], w)
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			t.Errorf("unexpected %s = %q (a property the reply does not carry?)", name, got[name])
		}
	}
}

// rpcResponder answers the rpc requests on queue through its own
// connection, as a service would, with a reply whose body echoes the
// request's and whose properties and headers a capture may read. It
// notes each correlation id it answered, hload's own, so the test can
// compare what hload hands back with what the service saw.
type rpcResponder struct {
	mu      sync.Mutex
	answers map[string]string // correlation id -> the body answered
}

func startResponder(t *testing.T, url, queue string) *rpcResponder {
	t.Helper()
	conn, err := amqp.Dial(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ch.QueueDeclare(queue, false, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	deliveries, err := ch.Consume(queue, "", true, false, false, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := &rpcResponder{answers: map[string]string{}}
	go func() {
		for d := range deliveries { // ends when the connection closes
			// Noted before the reply goes, so that whoever got the reply
			// finds it noted.
			r.mu.Lock()
			n := len(r.answers) + 1
			body := fmt.Sprintf(`{"order":"o-%d","echo":%q}`, n, d.Body)
			r.answers[d.CorrelationId] = body
			r.mu.Unlock()
			_ = ch.Publish("", d.ReplyTo, false, false, amqp.Publishing{
				CorrelationId: d.CorrelationId,
				ContentType:   "application/json",
				MessageId:     "reply-" + d.CorrelationId,
				Type:          "order.created",
				Headers: amqp.Table{
					"x-order-id": fmt.Sprintf("o-%d", n),
					"x-count":    int32(n),
				},
				Body: []byte(body),
			})
		}
	}()
	return r
}

// TestRPCReplyForCaptures: an rpc hands back its reply's body and its
// properties and headers, each only when the call asks, on both paths; the
// correlation id and body it hands back are those of the reply the service
// sent to that very call. A publish, which has no reply, hands back
// nothing.
func TestRPCReplyForCaptures(t *testing.T) {
	url := brokerURL(t)
	str := cty.StringVal
	protocoltest.Run(t, New(), func(t *testing.T, _ protocoltest.Path, p protocols.Protocol) {
		queue := testQueue(t, url)
		service := startResponder(t, url, queue)
		c, err := p.Open(context.Background(), object(t, targetSpec(), map[string]cty.Value{"url": str(url)}))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		do := func(kind, body string, keepBody, keepHeaders bool) protocols.Sample {
			t.Helper()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			var req []protocols.Sample
			c.Do(ctx, protocols.Call{VU: 1, KeepBody: keepBody, KeepHeaders: keepHeaders, Request: object(t, requestSpec(), map[string]cty.Value{
				"kind": str(kind), "routing_key": str(queue), "body": str(body), "timeout": str("5s"),
			})}, func(s protocols.Sample) {
				if s.Metric != protocols.MetricRequest {
					return
				}
				// Copied: both are valid only during emit.
				s.Body = slices.Clone(s.Body)
				if s.Headers != nil {
					h := maps.Clone(s.Headers)
					for k, v := range h {
						h[k] = slices.Clone(v)
					}
					s.Headers = h
				}
				req = append(req, s)
			})
			if len(req) != 1 {
				t.Fatalf("%d request samples", len(req))
			}
			return req[0]
		}

		for i, tc := range []struct{ body, headers bool }{{true, true}, {true, false}, {false, true}, {false, false}} {
			name := fmt.Sprintf("keep_body=%v,keep_headers=%v", tc.body, tc.headers)
			sent := fmt.Sprint("call-", i)
			s := do("rpc", sent, tc.body, tc.headers)
			if s.Error != "" || s.Status != StatusOK {
				t.Fatalf("%s: %+v", name, s)
			}
			service.mu.Lock()
			answers := maps.Clone(service.answers)
			service.mu.Unlock()
			var id, answered string
			for k, v := range answers {
				if strings.Contains(v, fmt.Sprintf("%q", sent)) {
					id, answered = k, v
				}
			}
			if id == "" {
				t.Fatalf("%s: the service answered no request %q: %v", name, sent, answers)
			}
			if tc.body != (s.Body != nil) || (tc.body && string(s.Body) != answered) {
				t.Errorf("%s: body %q, the service answered %q", name, s.Body, answered)
			}
			if !tc.headers {
				if s.Headers != nil {
					t.Errorf("%s: headers %v, not asked for", name, s.Headers)
				}
				continue
			}
			order := fmt.Sprintf("o-%d", len(answers))
			for prop, want := range map[string]string{
				PropCorrelationID: id, PropContentType: "application/json", PropMessageID: "reply-" + id,
				PropType: "order.created", "x-order-id": order, "x-count": fmt.Sprint(len(answers)),
			} {
				if got := s.Headers[prop]; len(got) != 1 || got[0] != want {
					t.Errorf("%s: %s = %q, want [%s]", name, prop, got, want)
				}
			}
			if _, ok := s.Headers[PropReplyTo]; ok {
				t.Errorf("%s: reply_to %q, which the reply does not carry", name, s.Headers[PropReplyTo])
			}
		}

		if s := do("publish", "no reply", true, true); s.Error != "" || s.Body != nil || s.Headers != nil {
			t.Errorf("publish: %+v; want a success with no body and no headers", s)
		}
	})
}

const rpcJourney = `
target "broker" {
  protocol = "amqp"
  url      = "%[1]s"
  queues   = [{ name = "%[3]s" }]
}

scenario "orders" {
  executor     = "iterations"
  vus          = 3
  iterations   = 10
  max_duration = "30s"
  flow "order" {
    request "place" {
      kind        = "rpc"
      routing_key = "%[2]s"
      body        = "vu-${vu.id}-${vu.iteration}"
      timeout     = "5s"
      capture {
        order = json("order")
        id    = header("X-Order-Id")
        reply = header("correlation_id")
      }
    }
    request "ack" {
      kind        = "publish"
      routing_key = "%[3]s"
      body        = "${vu.vars.order} ${vu.vars.id} ${vu.vars.reply}"
    }
  }
}
`

// TestJourneyCapturesFromAnRPC runs a flow whose rpc step captures from
// the reply's body, a header and a property, and whose next step
// publishes them: on both paths, every message in the broker's queue names
// an order the service answered, with that reply's header and correlation
// id, and there is one per flow, by the broker's and the service's counts.
func TestJourneyCapturesFromAnRPC(t *testing.T) {
	url := brokerURL(t)
	protocoltest.Run(t, New(), func(t *testing.T, path protocoltest.Path, p protocols.Protocol) {
		rpcQ, ackQ := testQueue(t, url), testQueue(t, url)
		service := startResponder(t, url, rpcQ)
		sum := runTest(t, fmt.Sprintf(rpcJourney, url, rpcQ, ackQ), time.Minute, path, p)
		flow := sum.Scenarios["orders"].Flows["order"]

		conn, err := amqp.Dial(url)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		ch, err := conn.Channel()
		if err != nil {
			t.Fatal(err)
		}
		var acks []string
		for {
			d, ok, err := ch.Get(ackQ, true)
			if err != nil {
				t.Fatal(err)
			}
			if !ok {
				break
			}
			acks = append(acks, string(d.Body))
		}
		service.mu.Lock()
		answers := maps.Clone(service.answers)
		service.mu.Unlock()
		t.Logf("service answered %d, broker holds %d acks; hload: %+v", len(answers), len(acks), flow)
		seen := map[string]bool{}
		for _, ack := range acks {
			f := strings.Fields(ack)
			if len(f) != 3 || f[0] != f[1] || seen[f[2]] || !strings.Contains(answers[f[2]], fmt.Sprintf(`"order":%q`, f[0])) {
				t.Errorf("ack %q: not the order, header and correlation id of one reply (the service answered that id with %q)", ack, answers[f[2]])
			}
			seen[f[2]] = true
		}
		if len(answers) != 30 || len(acks) != 30 {
			t.Errorf("the service answered %d rpcs and the broker holds %d acks; want 30 each (3 VUs, 10 iterations)", len(answers), len(acks))
		}
		if flow == nil || flow.Completed != int64(len(acks)) || flow.Failed != 0 {
			t.Errorf("hload's flows: %+v; the broker holds %d acks", flow, len(acks))
		}
	})
}
