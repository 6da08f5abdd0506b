package amqp

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/zclconf/go-cty/cty"

	"github.com/hload/hload/config"
	"github.com/hload/hload/core"
	"github.com/hload/hload/core/metrics"
	"github.com/hload/hload/protocols"
)

// brokerURL returns the test broker's URL from HLOAD_RABBITMQ_URL, which
// scripts/rabbitmq.sh start exports. Without it the test skips, unless
// CI=true, where a missing broker is a failure.
func brokerURL(t *testing.T) string {
	t.Helper()
	u := os.Getenv("HLOAD_RABBITMQ_URL")
	if u == "" {
		msg := `HLOAD_RABBITMQ_URL is not set: run eval "$(scripts/rabbitmq.sh start)" first`
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
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

// runTest parses src and runs it with the given protocols.
func runTest(t *testing.T, src string, timeout time.Duration, ps ...protocols.Protocol) *metrics.Summary {
	t.Helper()
	reg := protocols.NewRegistry(ps...)
	test, diags := config.Parse(map[string][]byte{"test.hcl": []byte(src)}, t.TempDir(), config.Options{Protocols: reg})
	if diags.HasErrors() {
		t.Fatalf("config: %s", diags.Error())
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	sum, err := core.Run(ctx, test, core.Options{Protocols: reg})
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

// recorder is the protocol with hooks that note which message bodies
// were confirmed and which were consumed, so a test can match them one by
// one rather than only by count.
type recorder struct {
	*Protocol
	mu        sync.Mutex
	confirmed map[string]time.Time
	consumed  map[string]int
}

func newRecorder() *recorder {
	r := &recorder{Protocol: New(), confirmed: map[string]time.Time{}, consumed: map[string]int{}}
	r.observe = func(body []byte) {
		r.mu.Lock()
		r.consumed[string(body)]++
		r.mu.Unlock()
	}
	return r
}

func (r *recorder) Open(ctx context.Context, target cty.Value) (protocols.Client, error) {
	c, err := r.Protocol.Open(ctx, target)
	if err != nil {
		return nil, err
	}
	return &recordingClient{Client: c, r: r}, nil
}

type recordingClient struct {
	protocols.Client
	r *recorder
}

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
