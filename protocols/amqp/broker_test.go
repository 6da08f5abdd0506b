package amqp

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/zclconf/go-cty/cty"

	"github.com/hload/hload/config"
	"github.com/hload/hload/core"
	"github.com/hload/hload/internal/servicetest"
	"github.com/hload/hload/metrics"
	"github.com/hload/hload/plugins/protocoltest"
	"github.com/hload/hload/protocols"
)

// brokerURL returns the test broker's URL from HLOAD_RABBITMQ_URL, which
// scripts/rabbitmq.sh start exports, once its port answers. Unset, the
// test fails or skips by servicetest's rule. A broker that is named but
// does not answer is a failure, required or not: whoever set the variable
// meant the test to run against it.
func brokerURL(t *testing.T) string {
	t.Helper()
	u := servicetest.RabbitMQ.Env(t, "HLOAD_RABBITMQ_URL")
	parsed, err := amqp.ParseURI(u)
	if err != nil {
		t.Fatalf("HLOAD_RABBITMQ_URL=%q: %v", u, err)
	}
	addr := net.JoinHostPort(parsed.Host, strconv.Itoa(parsed.Port))
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatalf("HLOAD_RABBITMQ_URL=%s: the broker does not answer: %v", u, err)
	}
	conn.Close()
	return u
}

// testQueue returns a queue name of its own for this test, and deletes the
// queue when the test ends.
func testQueue(t *testing.T, url string) string {
	t.Helper()
	name := fmt.Sprintf("hload-test-%s-%d", strings.ToLower(t.Name()), time.Now().UnixNano())
	name = strings.NewReplacer("/", "-", " ", "-").Replace(name)
	t.Cleanup(func() {
		conn, err := amqp.Dial(url)
		if err != nil {
			t.Logf("cleanup: %v", err)
			return
		}
		defer conn.Close()
		ch, err := conn.Channel()
		if err != nil {
			return
		}
		_, _ = ch.QueueDelete(name, false, false, false)
	})
	return name
}

// runTest parses src against the built-in protocol, as hload does, and
// runs it with p, the protocol as path reaches it.
func runTest(t *testing.T, src string, timeout time.Duration, path protocoltest.Path, p protocols.Protocol) *metrics.Summary {
	t.Helper()
	test, diags := config.Parse(map[string][]byte{"test.hcl": []byte(src)}, t.TempDir(), config.Options{Protocols: protocols.NewRegistry(New())})
	if diags.HasErrors() {
		t.Fatalf("config: %s", diags.Error())
	}
	return runOn(t, test, timeout, path, p)
}

// runOn runs test with p, the protocol as path reaches it. On the isolated
// path every target runs as isolate = true runs it: the core takes the
// target's protocol from Options.Isolated, which hload answers with a
// plugin process and this test with the path's harness.
func runOn(t *testing.T, test *config.Test, timeout time.Duration, path protocoltest.Path, p protocols.Protocol) *metrics.Summary {
	t.Helper()
	opts := core.Options{Protocols: protocols.NewRegistry(p)}
	if path.Isolated {
		for _, tg := range test.Targets {
			tg.Isolate = true
		}
		opts.Protocols = protocols.NewRegistry(New())
		opts.Isolated = func(*config.Target) (protocols.Protocol, error) { return p, nil }
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	sum, err := core.Run(ctx, test, opts)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	if sum == nil {
		t.Fatal("no summary")
	}
	return sum
}

// queueDepth returns how many messages wait in queue.
func queueDepth(t *testing.T, url, queue string) int {
	t.Helper()
	conn, err := amqp.Dial(url)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		t.Fatalf("channel: %v", err)
	}
	q, err := ch.QueueDeclarePassive(queue, true, false, false, false, nil)
	if err != nil {
		t.Fatalf("inspect %s: %v", queue, err)
	}
	return q.Messages
}

func figures(t *testing.T, sum *metrics.Summary, scenario, req string) *metrics.RequestFigures {
	t.Helper()
	s := sum.Scenarios[scenario]
	if s == nil || s.Requests[req] == nil {
		t.Fatalf("summary has no %s/%s", scenario, req)
	}
	return s.Requests[req]
}

// recorder notes which message bodies were confirmed and which were
// consumed, so a test can match them one by one rather than only by count.
// Confirms are noted from the request samples as they reach the core,
// after the wire on the isolated path; consumes by the protocol's observe
// hook, which sees each message a consume call counts (on the isolated
// path, on the plugin's side of the in-memory wire).
type recorder struct {
	mu        sync.Mutex
	confirmed map[string]time.Time
	consumed  map[string]int
}

// newRecorder returns a recorder and the AMQP protocol whose consume calls
// it watches.
func newRecorder() (*recorder, *Protocol) {
	r := &recorder{}
	r.reset()
	p := New()
	p.observe = func(body []byte) {
		r.mu.Lock()
		r.consumed[string(body)]++
		r.mu.Unlock()
	}
	return r, p
}

// reset forgets what was noted, so each path starts from nothing.
func (r *recorder) reset() {
	r.mu.Lock()
	r.confirmed, r.consumed = map[string]time.Time{}, map[string]int{}
	r.mu.Unlock()
}

// wrap returns p, whose clients note the bodies of the publishes the
// broker confirmed.
func (r *recorder) wrap(p protocols.Protocol) protocols.Protocol {
	return &recordingProtocol{Protocol: p, r: r}
}

type recordingProtocol struct {
	protocols.Protocol
	r *recorder
}

func (p *recordingProtocol) Open(ctx context.Context, target cty.Value) (protocols.Client, error) {
	c, err := p.Protocol.Open(ctx, target)
	if err != nil {
		return nil, err
	}
	return &recordingClient{Client: c, r: p.r}, nil
}

// recordingClient passes on its client's gauges and failures, so the core
// sees what it would see without the recorder: on the isolated path, a
// failed plugin ends the run.
type recordingClient struct {
	protocols.Client
	r *recorder
}

var (
	_ protocols.Gauger = (*recordingClient)(nil)
	_ protocols.Failer = (*recordingClient)(nil)
)

func (c *recordingClient) Do(ctx context.Context, call protocols.Call, emit func(protocols.Sample)) {
	kind, _ := protocols.StringAttr(call.Request, "kind")
	body, _ := protocols.StringAttr(call.Request, "body")
	c.Client.Do(ctx, call, func(s protocols.Sample) {
		if kind == "publish" && s.Metric == protocols.MetricRequest && s.Error == protocols.ErrNone && s.Status == StatusOK {
			c.r.mu.Lock()
			c.r.confirmed[body] = s.Time
			c.r.mu.Unlock()
		}
		emit(s)
	})
}

func (c *recordingClient) Gauges(report func(name string, value int64)) {
	if g, ok := c.Client.(protocols.Gauger); ok {
		g.Gauges(report)
	}
}

// Failed returns nil, a channel that never delivers, for a client that
// cannot fail as a whole.
func (c *recordingClient) Failed() <-chan error {
	if f, ok := c.Client.(protocols.Failer); ok {
		return f.Failed()
	}
	return nil
}
