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
	"github.com/hload/hload/metrics"
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

// closingSink fails as a sink whose path was read from env() would: at its
// start, or at its close, with an error quoting the secret.
type closingSink struct{ failStart bool }

func (s closingSink) Start(context.Context, metrics.RunInfo) error {
	if s.failStart {
		return fmt.Errorf("open /data/%s/out.csv: no such file or directory", coreSecret)
	}
	return nil
}
func (closingSink) Write(metrics.Snapshot) error { return nil }
func (closingSink) Close(metrics.Summary) error {
	return fmt.Errorf("close /data/%s/out.csv: no space left on device", coreSecret)
}

// TestSinkErrorsAreRedacted: a sink's error at its start or its close,
// which come after the summary's own redaction, holds no sensitive value
// in the summary, in the run's error, or in what the other sinks get.
func TestSinkErrorsAreRedacted(t *testing.T) {
	p := echoingProtocol{failAfter: -1}
	hcl := `
variable "token" {
  sensitive = true
  default   = "` + coreSecret + `"
}
target "t" {
  protocol = "echoing"
}
scenario "s" {
  executor   = "iterations"
  vus        = 1
  iterations = 3
  request "r" {
    path = "/${var.token}"
  }
}
`
	for _, failStart := range []bool{false, true} {
		t.Run(fmt.Sprintf("at the start %v", failStart), func(t *testing.T) {
			test := loadWith(t, hcl, p)
			sink := &snapshotSink{}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			sum, err := Run(ctx, test, Options{Protocols: protocols.NewRegistry(p), Sinks: []Sink{sink, closingSink{failStart: failStart}}})
			if err == nil || sum == nil {
				t.Fatalf("the run did not fail: %v", err)
			}
			seen, _ := json.Marshal(struct {
				Sum, Given any
				Err        string
			}{sum, sink.sum, err.Error()})
			if strings.Contains(string(seen), coreSecret) {
				t.Errorf("%q reached the summary, a sink or the error:\n%s", coreSecret, excerptAround(string(seen), coreSecret))
			}
			if !strings.Contains(string(seen), config.Redacted+"/out.csv") {
				t.Errorf("the sink's error is not there, redacted:\n%s", seen)
			}
		})
	}
}
