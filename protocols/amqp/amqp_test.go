package amqp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/zclconf/go-cty/cty"

	"github.com/hload/hload/plugins/protocoltest"
	"github.com/hload/hload/protocols"
)

// object builds a value conforming to spec, null where vals has nothing,
// as the core hands a protocol its target and request values.
func object(t *testing.T, spec hcldec.ObjectSpec, vals map[string]cty.Value) cty.Value {
	t.Helper()
	ty := hcldec.ImpliedType(spec)
	attrs := map[string]cty.Value{}
	for name, at := range ty.AttributeTypes() {
		if v, ok := vals[name]; ok {
			attrs[name] = v
		} else {
			attrs[name] = cty.NullVal(at)
		}
	}
	for name := range vals {
		if !ty.HasAttribute(name) {
			t.Fatalf("%s is not in the spec", name)
		}
	}
	return cty.ObjectVal(attrs)
}

// TestTargetErrors stays in-process: it calls the unexported parseTarget.
func TestTargetErrors(t *testing.T) {
	url := cty.StringVal("amqp://guest:secret@127.0.0.1:5672/")
	queue := func(kv map[string]cty.Value) cty.Value { return cty.TupleVal([]cty.Value{cty.ObjectVal(kv)}) }
	cases := []struct {
		name string
		vals map[string]cty.Value
		want string
	}{
		{"no url", map[string]cty.Value{}, "url is required"},
		{"bad scheme", map[string]cty.Value{"url": cty.StringVal("http://127.0.0.1/")}, "target url"},
		{"tls on plain", map[string]cty.Value{"url": url, "tls_ca": cty.StringVal("x")}, "need an amqps:// url"},
		{"password hidden", map[string]cty.Value{"url": url, "insecure_skip_verify": cty.True}, "guest:xxxxx@"},
		{"bad ca", map[string]cty.Value{"url": cty.StringVal("amqps://127.0.0.1/"), "tls_ca": cty.StringVal("x")}, "tls_ca holds no PEM"},
		{"cert without key", map[string]cty.Value{"url": cty.StringVal("amqps://127.0.0.1/"), "tls_cert": cty.StringVal("x")}, "tls_cert and tls_key go together"},
		{"channels", map[string]cty.Value{"url": url, "channels": cty.NumberIntVal(0)}, "channels must be a whole number from 1"},
		{"heartbeat", map[string]cty.Value{"url": url, "heartbeat": cty.StringVal("soon")}, "heartbeat \"soon\" must be a positive duration"},
		{"queues not a list", map[string]cty.Value{"url": url, "queues": cty.StringVal("q")}, "queues must be a list of objects"},
		{"queue unknown key", map[string]cty.Value{"url": url, "queues": queue(map[string]cty.Value{"name": cty.StringVal("q"), "durabel": cty.True})}, `queues[0] has no attribute "durabel"`},
		{"queue without name", map[string]cty.Value{"url": url, "queues": queue(map[string]cty.Value{"durable": cty.True})}, "queues[0].name is required"},
		{"queue durable type", map[string]cty.Value{"url": url, "queues": queue(map[string]cty.Value{"name": cty.StringVal("q"), "durable": cty.StringVal("yes")})}, "queues[0] durable must be a bool"},
		{"binding without queue", map[string]cty.Value{"url": url, "bindings": queue(map[string]cty.Value{"exchange": cty.StringVal("x")})}, "bindings[0].queue is required"},
		{"arguments", map[string]cty.Value{"url": url, "queues": queue(map[string]cty.Value{"name": cty.StringVal("q"), "arguments": cty.StringVal("x")})}, "queues[0] arguments must be an object"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseTarget(object(t, targetSpec(), tc.vals))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v; want one containing %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "secret") {
				t.Errorf("error shows the password: %v", err)
			}
		})
	}
}

// TestTargetTopology stays in-process: it reads the unexported targetConfig.
func TestTargetTopology(t *testing.T) {
	cfg, err := parseTarget(object(t, targetSpec(), map[string]cty.Value{
		"url":       cty.StringVal("amqp://127.0.0.1:5672/"),
		"exchanges": cty.TupleVal([]cty.Value{cty.ObjectVal(map[string]cty.Value{"name": cty.StringVal("logs"), "type": cty.StringVal("topic"), "durable": cty.True})}),
		"queues": cty.TupleVal([]cty.Value{cty.ObjectVal(map[string]cty.Value{
			"name": cty.StringVal("q"), "durable": cty.True,
			"arguments": cty.ObjectVal(map[string]cty.Value{"x-max-length": cty.NumberIntVal(10), "x-queue-type": cty.StringVal("classic")}),
		})}),
		"bindings": cty.TupleVal([]cty.Value{cty.ObjectVal(map[string]cty.Value{"exchange": cty.StringVal("logs"), "queue": cty.StringVal("q"), "routing_key": cty.StringVal("#")})}),
	}))
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.exchanges) != 1 || cfg.exchanges[0].kind != "topic" || !cfg.exchanges[0].durable {
		t.Errorf("exchanges = %+v", cfg.exchanges)
	}
	if len(cfg.queues) != 1 || cfg.queues[0].args["x-max-length"] != int64(10) || cfg.queues[0].args["x-queue-type"] != "classic" {
		t.Errorf("queues = %+v", cfg.queues)
	}
	if len(cfg.bindings) != 1 || cfg.bindings[0].key != "#" {
		t.Errorf("bindings = %+v", cfg.bindings)
	}
	if cfg.channels != DefaultChannels || cfg.reconnectWait != DefaultReconnectWait {
		t.Errorf("defaults: channels=%d reconnect_wait=%s", cfg.channels, cfg.reconnectWait)
	}
}

// TestRequestErrors stays in-process: it calls the unexported parseRequest.
func TestRequestErrors(t *testing.T) {
	cases := []struct {
		name string
		vals map[string]cty.Value
		want string
	}{
		{"kind", map[string]cty.Value{"kind": cty.StringVal("send")}, `kind "send" must be publish, consume or rpc`},
		{"misplaced", map[string]cty.Value{"kind": cty.StringVal("publish"), "routing_key": cty.StringVal("q"), "queue": cty.StringVal("q")}, `queue does not apply to kind "publish"`},
		{"no destination", map[string]cty.Value{"kind": cty.StringVal("publish")}, "needs exchange or routing_key"},
		{"body and json", map[string]cty.Value{"kind": cty.StringVal("publish"), "routing_key": cty.StringVal("q"), "body": cty.StringVal("x"), "json": cty.NumberIntVal(1)}, "both body and json"},
		{"sent-at header", map[string]cty.Value{"kind": cty.StringVal("publish"), "routing_key": cty.StringVal("q"), "headers": cty.MapVal(map[string]cty.Value{HeaderSentAt: cty.StringVal("1")})}, "is set by hload"},
		{"consume queue", map[string]cty.Value{"kind": cty.StringVal("consume")}, `kind "consume" needs queue`},
		{"messages", map[string]cty.Value{"kind": cty.StringVal("consume"), "queue": cty.StringVal("q"), "messages": cty.NumberIntVal(0)}, "messages must be a whole number from 1"},
		{"duration", map[string]cty.Value{"kind": cty.StringVal("consume"), "queue": cty.StringVal("q"), "duration": cty.StringVal("-1s")}, "duration \"-1s\" must be a positive duration"},
		{"timeout", map[string]cty.Value{"kind": cty.StringVal("rpc"), "routing_key": cty.StringVal("q"), "timeout": cty.StringVal("x")}, "timeout \"x\""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseRequest(object(t, requestSpec(), tc.vals))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v; want one containing %q", err, tc.want)
			}
		})
	}
}

// TestRequestJSONBody stays in-process: it reads the unexported request and its publishing.
func TestRequestJSONBody(t *testing.T) {
	q, err := parseRequest(object(t, requestSpec(), map[string]cty.Value{
		"kind": cty.StringVal("publish"), "routing_key": cty.StringVal("q"),
		"json": cty.ObjectVal(map[string]cty.Value{"level": cty.StringVal("info")}),
	}))
	if err != nil {
		t.Fatal(err)
	}
	if string(q.body) != `{"level":"info"}` || q.contentType != "application/json" || !q.confirm {
		t.Errorf("body=%s content_type=%q confirm=%v", q.body, q.contentType, q.confirm)
	}
	m := q.publishing(time.Unix(0, 42))
	if m.Headers[HeaderSentAt] != int64(42) {
		t.Errorf("%s = %v; want 42", HeaderSentAt, m.Headers[HeaderSentAt])
	}
	if at, ok := sentAt(m.Headers); !ok || at.UnixNano() != 42 {
		t.Errorf("sentAt = %v, %v", at, ok)
	}
}

// TestOpenRefused: a broker that is not there fails Open at once, with
// the address, so no load is sent.
func TestOpenRefused(t *testing.T) {
	protocoltest.Run(t, New(), func(t *testing.T, _ protocoltest.Path, p protocols.Protocol) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		_, err = p.Open(ctx, object(t, targetSpec(), map[string]cty.Value{"url": cty.StringVal("amqp://" + addr + "/")}))
		if err == nil || !strings.Contains(err.Error(), addr) {
			t.Fatalf("Open = %v; want an error naming %s", err, addr)
		}
	})
}

// call runs one call and returns its samples.
func call(t *testing.T, c protocols.Client, vals map[string]cty.Value) []protocols.Sample {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out []protocols.Sample
	c.Do(ctx, protocols.Call{VU: 1, Request: object(t, requestSpec(), vals)}, func(s protocols.Sample) { out = append(out, s) })
	return out
}

func requestSample(t *testing.T, ss []protocols.Sample) protocols.Sample {
	t.Helper()
	var found []protocols.Sample
	for _, s := range ss {
		if s.Metric == protocols.MetricRequest {
			found = append(found, s)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d request samples; want exactly 1 (%+v)", len(found), ss)
	}
	return found[0]
}

func countMetric(ss []protocols.Sample, metric string) int {
	n := 0
	for _, s := range ss {
		if s.Metric == metric {
			n++
		}
	}
	return n
}

// TestOutcomes checks each outcome a call can have against a real broker:
// confirmed, returned, nacked, a channel error by its code, consume's
// counts, and an rpc answered by a consume with reply that the run's end
// (its context) stops. Each path has queues of its own.
func TestOutcomes(t *testing.T) {
	url := brokerURL(t)
	str := cty.StringVal
	protocoltest.Run(t, New(), func(t *testing.T, _ protocoltest.Path, p protocols.Protocol) {
		q := testQueue(t, url)
		full := testQueue(t, url) // holds one message; the broker nacks the rest
		rpcQ := testQueue(t, url)
		c, err := p.Open(context.Background(), object(t, targetSpec(), map[string]cty.Value{
			"url": str(url),
			"queues": cty.TupleVal([]cty.Value{
				cty.ObjectVal(map[string]cty.Value{"name": str(q)}),
				cty.ObjectVal(map[string]cty.Value{"name": str(full), "arguments": cty.ObjectVal(map[string]cty.Value{
					"x-max-length": cty.NumberIntVal(1), "x-overflow": str("reject-publish"),
				})}),
				cty.ObjectVal(map[string]cty.Value{"name": str(rpcQ)}),
			}),
		}))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()

		t.Run("confirmed", func(t *testing.T) {
			ss := call(t, c, map[string]cty.Value{"kind": str("publish"), "routing_key": str(q), "body": str("hello")})
			r := requestSample(t, ss)
			if r.Error != "" || r.Status != StatusOK || r.BytesSent != 5 || countMetric(ss, MetricConfirmed) != 1 {
				t.Errorf("request %+v, confirmed %d", r, countMetric(ss, MetricConfirmed))
			}
		})
		t.Run("returned", func(t *testing.T) {
			ss := call(t, c, map[string]cty.Value{"kind": str("publish"), "routing_key": str("no-such-queue-" + q), "mandatory": cty.True})
			r := requestSample(t, ss)
			if r.Error != ErrReturned || r.Status != 312 || countMetric(ss, MetricReturned) != 1 {
				t.Errorf("request %+v, returned %d", r, countMetric(ss, MetricReturned))
			}
		})
		t.Run("nacked", func(t *testing.T) {
			var last protocols.Sample
			for range 2 {
				last = requestSample(t, call(t, c, map[string]cty.Value{"kind": str("publish"), "routing_key": str(full)}))
			}
			if last.Error != ErrNacked {
				t.Errorf("second publish to a full reject-publish queue: %+v; want nacked", last)
			}
		})
		t.Run("channel error", func(t *testing.T) {
			r := requestSample(t, call(t, c, map[string]cty.Value{"kind": str("consume"), "queue": str("no-such-queue-" + q), "duration": str("1s")}))
			if r.Error != ErrChannel || r.Status != 404 {
				t.Errorf("consume from a missing queue: %+v; want channel_error 404", r)
			}
			// The channel error closed the consume's own channel only.
			r = requestSample(t, call(t, c, map[string]cty.Value{"kind": str("publish"), "routing_key": str(q), "body": str("again")}))
			if r.Error != "" {
				t.Errorf("publish after a channel error: %+v", r)
			}
		})
		t.Run("consume", func(t *testing.T) {
			ss := call(t, c, map[string]cty.Value{"kind": str("consume"), "queue": str(q), "messages": cty.NumberIntVal(2), "duration": str("10s")})
			r := requestSample(t, ss)
			if r.Error != "" || r.BytesReceived != int64(len("hello")+len("again")) || countMetric(ss, MetricConsumed) != 2 {
				t.Errorf("request %+v, consumed %d", r, countMetric(ss, MetricConsumed))
			}
			ss = call(t, c, map[string]cty.Value{"kind": str("consume"), "queue": str(q), "duration": str("200ms")})
			if n := countMetric(ss, MetricConsumed); n != 0 || requestSample(t, ss).Error != "" {
				t.Errorf("an empty queue: consumed %d, %+v", n, requestSample(t, ss))
			}
		})
		t.Run("rpc", func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			wg.Add(1)
			var server []protocols.Sample
			go func() {
				defer wg.Done()
				c.Do(ctx, protocols.Call{VU: 2, Request: object(t, requestSpec(), map[string]cty.Value{
					"kind": str("consume"), "queue": str(rpcQ), "reply": str("pong"),
				})}, func(s protocols.Sample) { server = append(server, s) })
			}()
			var r protocols.Sample
			for range 3 {
				r = requestSample(t, call(t, c, map[string]cty.Value{"kind": str("rpc"), "routing_key": str(rpcQ), "body": str("ping"), "timeout": str("5s")}))
				if r.Error != "" {
					break
				}
			}
			cancel()
			wg.Wait()
			if r.Error != "" || r.BytesReceived != 4 {
				t.Errorf("rpc: %+v; want the reply pong", r)
			}
			if n := countMetric(server, MetricConsumed); n != 3 || requestSample(t, server).Error != "" {
				t.Errorf("the replying consume counted %d; want 3, and no error when the run ends it", n)
			}
			r = requestSample(t, call(t, c, map[string]cty.Value{"kind": str("rpc"), "routing_key": str(rpcQ), "timeout": str("300ms")}))
			if r.Error != protocols.ErrTimeout {
				t.Errorf("rpc with nobody answering: %+v; want timeout", r)
			}
		})
		t.Run("bad request", func(t *testing.T) {
			r := requestSample(t, call(t, c, map[string]cty.Value{"kind": str("get")}))
			if r.Error != ErrRequest {
				t.Errorf("%+v; want bad_request", r)
			}
		})
	})
}

// TestGauges: an open client reports its connection up and not blocked.
// On the isolated path the levels cross the wire with the plugin's
// batches, at most every 250 ms, so the test waits a little for the first
// report; the levels it then checks are the same on both paths.
func TestGauges(t *testing.T) {
	url := brokerURL(t)
	protocoltest.Run(t, New(), func(t *testing.T, _ protocoltest.Path, p protocols.Protocol) {
		c, err := p.Open(context.Background(), object(t, targetSpec(), map[string]cty.Value{"url": cty.StringVal(url)}))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		g, ok := c.(protocols.Gauger)
		if !ok {
			t.Fatalf("the client, a %T, reports no gauges", c)
		}
		levels := func() map[string]int64 {
			m := map[string]int64{}
			g.Gauges(func(name string, v int64) { m[name] = v })
			return m
		}
		got := levels()
		for deadline := time.Now().Add(5 * time.Second); len(got) == 0 && time.Now().Before(deadline); got = levels() {
			time.Sleep(10 * time.Millisecond)
		}
		if len(got) != 2 || got[GaugeConnected] != 1 || got[GaugeBlocked] != 0 {
			t.Errorf("gauges %v; want %s 1 and %s 0", got, GaugeConnected, GaugeBlocked)
		}
	})
}

// TestFailClassifiesSocketErrors: a publish whose frame write fails gets
// the socket's error before amqp091-go marks the connection closed, so a
// broker going away mid-publish must read as connection_lost, not as a
// protocol error.
func TestFailClassifiesSocketErrors(t *testing.T) {
	c := &Client{}
	ctx := context.Background()
	for _, tc := range []struct {
		err  error
		want protocols.ErrorKind
	}{
		{&net.OpError{Op: "write", Net: "tcp", Err: os.NewSyscallError("write", syscall.EPIPE)}, ErrConnectionLost},
		{fmt.Errorf("frame: %w", syscall.ECONNRESET), ErrConnectionLost},
		{io.EOF, ErrConnectionLost},
		{errors.New("unexpected frame"), protocols.ErrProtocol},
	} {
		if got := c.fail(ctx, nil, nil, tc.err).err; got != tc.want {
			t.Errorf("fail(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}
