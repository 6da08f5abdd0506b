package core

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/zclconf/go-cty/cty"

	"github.com/hload/hload/config"
	"github.com/hload/hload/core/metrics"
	"github.com/hload/hload/protocols"
)

// coreSecret is the sensitive value of TestRunRedactsSensitiveValues.
const coreSecret = "core-secret-9"

// echoingProtocol stands for a protocol or a plugin whose words quote what
// it was sent: each call fails with a message holding its path, and after
// failAfter calls the client fails the run with an error holding it too.
type echoingProtocol struct{ failAfter int64 }

func (echoingProtocol) Describe() protocols.Info {
	return protocols.Info{
		Name:        "echoing",
		TargetSpec:  hcldec.ObjectSpec{},
		RequestSpec: hcldec.ObjectSpec{"path": &hcldec.AttrSpec{Name: "path", Type: cty.String}},
	}
}

func (p echoingProtocol) Open(context.Context, cty.Value) (protocols.Client, error) {
	return &echoingClient{failAfter: p.failAfter, failed: make(chan error, 1)}, nil
}

type echoingClient struct {
	failAfter int64
	calls     atomic.Int64
	failed    chan error
}

func (c *echoingClient) Do(ctx context.Context, call protocols.Call, emit func(protocols.Sample)) {
	path := protocols.Attr(call.Request, "path").AsString() // a marked value would panic here
	if n := c.calls.Add(1); n == c.failAfter {
		c.failed <- fmt.Errorf("plugin exited; its last words: sent %s", path)
	}
	time.Sleep(time.Millisecond)
	emit(protocols.Sample{Metric: protocols.MetricRequest, Time: time.Now(), Value: time.Millisecond,
		Error: protocols.ErrProtocol, Message: "refused " + path})
}

func (c *echoingClient) Failed() <-chan error { return c.failed }
func (c *echoingClient) Close() error         { return nil }

// TestRunRedactsSensitiveValues: the messages of failed calls, the
// summary's warnings, a sink's error and the run's failure hold a
// sensitive value where a protocol or a sink quoted it; none reaches a
// sink.
func TestRunRedactsSensitiveValues(t *testing.T) {
	p := echoingProtocol{failAfter: 50}
	test := loadWith(t, `
variable "token" {
  sensitive = true
  default   = "`+coreSecret+`"
}
target "t" {
  protocol = "echoing"
}
scenario "s" {
  executor = "constant-vus"
  vus      = 2
  duration = "30s"
  request "r" {
    path = "/${var.token}/${vu.id}"
  }
}
`, p)
	sink := &snapshotSink{}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sum, err := Run(ctx, test, Options{Protocols: protocols.NewRegistry(p), Sinks: []Sink{sink, &quotingSink{}}, Interval: 100 * time.Millisecond})
	if err == nil || sum == nil {
		t.Fatalf("the run did not fail: %v", err)
	}
	seen, _ := json.Marshal(struct {
		Snaps any
		Sum   any
	}{sink.snaps, sink.sum})
	if strings.Contains(string(seen), coreSecret) {
		t.Errorf("a sink received %q:\n%s", coreSecret, excerptAround(string(seen), coreSecret))
	}
	if !strings.Contains(sum.Failed, "sent ") || !strings.Contains(sum.Failed, config.Redacted) {
		t.Errorf("failed %q: want the client's error, redacted", sum.Failed)
	}
	if len(sum.SinkErrors) != 1 || sum.SinkErrors[0] != "open /data/"+config.Redacted+"/out.csv: permission denied" {
		t.Errorf("sink errors %q: want the sink's, redacted", sum.SinkErrors)
	}
	messages := sum.Scenarios["s"].Requests["r"].ErrorMessages[string(protocols.ErrProtocol)]
	if len(messages) == 0 {
		t.Errorf("no message of the calls")
	}
	for _, m := range messages {
		if !strings.HasPrefix(m, "refused ") || !strings.Contains(m, config.Redacted) {
			t.Errorf("message %q: want the call's, redacted", m)
		}
	}
}

// quotingSink fails its writes with an error that quotes the secret, as a
// sink whose path was read from env() would.
type quotingSink struct{}

func (quotingSink) Start(context.Context, metrics.RunInfo) error { return nil }
func (quotingSink) Write(metrics.Snapshot) error {
	return fmt.Errorf("open /data/%s/out.csv: permission denied", coreSecret)
}
func (quotingSink) Close(metrics.Summary) error { return nil }

// excerptAround returns the text around each place s is found.
func excerptAround(text, s string) string {
	var out []string
	for i := 0; ; {
		j := strings.Index(text[i:], s)
		if j < 0 {
			return strings.Join(out, "\n")
		}
		j += i
		out = append(out, text[max(0, j-80):min(len(text), j+len(s)+80)])
		i = j + len(s)
	}
}
