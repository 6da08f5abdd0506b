// Command misbehave is a test plugin for hload's end-to-end failure tests.
// Each call sleeps for the target's delay and succeeds, until the target's
// stop_after'th call: that call stops the whole process with SIGSTOP, so
// the plugin neither answers nor heartbeats, as a hung plugin would.
//
// Its behaviour comes from target attributes, because a test's HCL cannot
// set a plugin's environment. It marks its start on stderr and in a file
// next to its binary, so a test can tell whether hload started it at all
// and whether hload shows a plugin's last stderr lines.
package main

import (
	"context"
	"fmt"
	"math/big"
	"os"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/zclconf/go-cty/cty"

	"github.com/hload/hload/plugins/sdk"
	"github.com/hload/hload/protocols"
)

// rawStderr is the process's own stderr. It is taken before sdk.Serve,
// which may redirect os.Stderr through the plugin connection: a line
// written just before the process stops must not wait on that connection.
var rawStderr = os.Stderr

func main() {
	if exe, err := os.Executable(); err == nil {
		os.WriteFile(exe+".started", []byte(strconv.Itoa(os.Getpid())), 0o644)
	}
	fmt.Fprintf(rawStderr, "misbehave plugin ready (pid %d)\n", os.Getpid())
	sdk.Serve(protocol{})
}

type protocol struct{}

func (protocol) Describe() protocols.Info {
	return protocols.Info{
		Name:    "misbehave",
		Version: "0.0.1",
		TargetSpec: hcldec.ObjectSpec{
			"delay":      &hcldec.AttrSpec{Name: "delay", Type: cty.String},
			"stop_after": &hcldec.AttrSpec{Name: "stop_after", Type: cty.Number},
		},
		RequestSpec: hcldec.ObjectSpec{
			"payload": &hcldec.AttrSpec{Name: "payload", Type: cty.String},
		},
	}
}

func (protocol) Open(ctx context.Context, target cty.Value) (protocols.Client, error) {
	c := &client{delay: 2 * time.Millisecond}
	if v := target.GetAttr("delay"); !v.IsNull() {
		d, err := time.ParseDuration(v.AsString())
		if err != nil {
			return nil, err
		}
		c.delay = d
	}
	if v := target.GetAttr("stop_after"); !v.IsNull() {
		n, _ := v.AsBigFloat().Int(new(big.Int))
		c.stopAfter = n.Int64()
	}
	return c, nil
}

type client struct {
	delay     time.Duration
	stopAfter int64
	calls     atomic.Int64
}

func (c *client) Do(ctx context.Context, call protocols.Call, emit func(protocols.Sample)) {
	start := time.Now()
	n := c.calls.Add(1)
	if c.stopAfter > 0 && n >= c.stopAfter {
		if n == c.stopAfter {
			// Let the calls already running finish and their samples reach
			// the host, so the test knows how many results to expect.
			time.Sleep(200 * time.Millisecond)
			fmt.Fprintf(rawStderr, "misbehave: stopping myself after %d calls (pid %d)\n", n-1, os.Getpid())
			syscall.Kill(os.Getpid(), syscall.SIGSTOP)
		}
		<-ctx.Done() // reached only if someone sends SIGCONT
	} else {
		select {
		case <-time.After(c.delay):
		case <-ctx.Done():
		}
	}
	end := time.Now()
	s := protocols.Sample{Metric: protocols.MetricRequest, Time: end, Value: end.Sub(start), Status: 200}
	if ctx.Err() != nil {
		s.Status, s.Error = 0, protocols.ErrInterrupted
	}
	if p := call.Request.GetAttr("payload"); !p.IsNull() {
		s.BytesSent = int64(len(p.AsString()))
	}
	emit(s)
}

func (c *client) Close() error { return nil }
