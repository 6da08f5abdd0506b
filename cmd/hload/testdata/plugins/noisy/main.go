// Command noisy is a test plugin for hload's plugin diagnostics: it writes
// to os.Stderr with fmt.Fprintln and through the log package, its call
// number panic_at panics inside Do (the SDK recovers it), and its call
// number crash_at crashes the whole process with a panic in a goroutine of
// its own, outside the SDK's recovery; its call number stuck_at ignores its
// cancellation for 20 s. It counts its calls and writes the
// count, at each call, to a file next to its binary, so a test can check
// hload's figures against the plugin's own.
package main

import (
	"context"
	"fmt"
	"log"
	"math/big"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/zclconf/go-cty/cty"

	"github.com/hload/hload/plugins/sdk"
	"github.com/hload/hload/protocols"
)

func main() {
	sdk.Serve(protocol{})
}

type protocol struct{}

func (protocol) Describe() protocols.Info {
	return protocols.Info{
		Name:    "noisy",
		Version: "0.0.1",
		TargetSpec: hcldec.ObjectSpec{
			"panic_at": &hcldec.AttrSpec{Name: "panic_at", Type: cty.Number},
			"crash_at": &hcldec.AttrSpec{Name: "crash_at", Type: cty.Number},
			"stuck_at": &hcldec.AttrSpec{Name: "stuck_at", Type: cty.Number},
			// A call that emits its request sample, then panics.
			"late_panic_at": &hcldec.AttrSpec{Name: "late_panic_at", Type: cty.Number},
		},
		RequestSpec: hcldec.ObjectSpec{
			"payload": &hcldec.AttrSpec{Name: "payload", Type: cty.String},
		},
	}
}

func number(v cty.Value) int64 {
	if v.IsNull() {
		return 0
	}
	n, _ := v.AsBigFloat().Int(new(big.Int))
	return n.Int64()
}

func (protocol) Open(ctx context.Context, target cty.Value) (protocols.Client, error) {
	c := &client{panicAt: number(target.GetAttr("panic_at")), crashAt: number(target.GetAttr("crash_at")), stuckAt: number(target.GetAttr("stuck_at")),
		latePanicAt: number(target.GetAttr("late_panic_at"))}
	if exe, err := os.Executable(); err == nil {
		c.countFile = exe + ".calls"
	}
	// After sdk.Serve, os.Stderr is go-plugin's pipe, not the process's.
	fmt.Fprintln(os.Stderr, "noisy: opened, pid", os.Getpid())
	log.Printf("noisy: a line through the log package")
	return c, nil
}

type client struct {
	panicAt, crashAt, stuckAt int64
	latePanicAt               int64
	countFile                 string
	calls                     atomic.Int64

	mu      sync.Mutex
	written int64
}

// writeCount writes the highest call number so far to countFile, whole
// (renamed into place), so a crash never leaves a half-written count.
func (c *client) writeCount(n int64) {
	if c.countFile == "" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if n <= c.written {
		return
	}
	c.written = n
	tmp := c.countFile + ".tmp"
	if os.WriteFile(tmp, []byte(strconv.FormatInt(n, 10)), 0o644) == nil {
		os.Rename(tmp, c.countFile)
	}
}

func (c *client) Do(ctx context.Context, call protocols.Call, emit func(protocols.Sample)) {
	start := time.Now()
	n := c.calls.Add(1)
	c.writeCount(n)
	if n == c.panicAt {
		panic(fmt.Sprintf("noisy: panic on purpose in call %d", n))
	}
	if n == c.crashAt {
		fmt.Fprintln(os.Stderr, "noisy: crashing in call", n)
		// Let the line above reach the host before the process dies.
		time.Sleep(100 * time.Millisecond)
		go func() { panic(fmt.Sprintf("noisy: crash outside the SDK in call %d", n)) }()
		time.Sleep(time.Second) // the crash ends the process first
	}
	if n == c.stuckAt {
		// Ignores its cancellation: hload must stop waiting, and say so.
		time.Sleep(20 * time.Second)
	}
	select {
	case <-time.After(2 * time.Millisecond):
	case <-ctx.Done():
	}
	end := time.Now()
	s := protocols.Sample{Metric: protocols.MetricRequest, Time: end, Value: end.Sub(start), Status: 200}
	if ctx.Err() != nil {
		s.Status, s.Error = 0, protocols.ErrInterrupted
	}
	emit(s)
	if n == c.latePanicAt {
		panic(fmt.Sprintf("noisy: panic after its sample in call %d", n))
	}
}

func (c *client) Close() error { return nil }
