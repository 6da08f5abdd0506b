// The race detector's instrumentation makes every frame larger, so a race
// build's stacks say nothing about a normal build's frame budget; the
// test suite's full pass (scripts/test.sh) builds this test without it.

//go:build !race

package sse_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/hload/hload/plugins/protocoltest"
	"github.com/hload/hload/protocols"
	"github.com/hload/hload/protocols/sse"
)

// stackChildEnv makes TestIdleStreamStack measure, in the child process
// it runs in, instead of starting children; its value names the case.
const stackChildEnv = "HLOAD_SSE_STACK_CHILD"

// TestIdleStreamStack checks that a VU of a run holding an idle stream
// keeps a goroutine stack of 4 KB, not 8 KB: 4 KB of each stream's cost.
// The stack grows to 8 KB on the way to the stream (the dial is deep), and
// the collector halves it only while the frames from the VU's goroutine
// down to the stream's wait take less than 1,248 bytes (see Client.Do).
// "after a collection" measures the streams as a run holds them;
// "after a deep call" holds them through deepProtocol, whose calls grow
// their stack to 8 KB first, so that the frames are checked even should
// the way to the stream no longer grow it.
//
// Each case measures in a child process that held no stream before, after
// a collection. The figure is the growth of the stacks in use between a
// run of 200 streams and one of 1,200, so that the runs' fixed goroutines
// cancel out; the server, in a process of its own, counts the streams it
// holds.
func TestIdleStreamStack(t *testing.T) {
	if c := os.Getenv(stackChildEnv); c != "" {
		measureStack(t, c == "deep")
		return
	}
	for _, tc := range []struct {
		name, child string
	}{
		{"after a collection", "plain"},
		{"after a deep call", "deep"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			per := stackInChild(t, tc.child)
			t.Logf("%d bytes of stack per stream", per)
			// Halfway between the two sizes a stack can have here.
			if per > 6<<10 {
				t.Errorf("each idle stream of a run holds %d bytes of stack, want about 4,096 (8,192 is a VU's stack the collector did not halve)", per)
			}
		})
	}
}

// stackInChild runs TestIdleStreamStack's case child in a child process
// and returns the stack per stream it measured.
func stackInChild(t *testing.T, child string) int64 {
	cmd := exec.Command(os.Args[0], "-test.run=^TestIdleStreamStack$", "-test.count=1")
	cmd.Env = append(os.Environ(), stackChildEnv+"="+child)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the child process: %v\n%s", err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if v, ok := strings.CutPrefix(line, "stack-per-stream "); ok {
			per, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatalf("the child's figure %q: %v", v, err)
			}
			return per
		}
	}
	t.Fatalf("the child process printed no figure:\n%s", out)
	return 0
}

// measureStack prints the stack per stream of a run's idle streams, held
// through deepProtocol when deep is set.
func measureStack(t *testing.T, deep bool) {
	const small, large = 200, 1_200
	var proto protocols.Protocol = sse.New()
	if deep {
		proto = deepProtocol{proto}
	}
	addr := protocoltest.StartChild(t, sse.IdleServerEnv)
	s := holdIdleBy(t, addr, small, proto)
	l := holdIdleBy(t, addr, large, proto)
	fmt.Printf("stack-per-stream %d\n", (int64(l.mem.StackInuse)-int64(s.mem.StackInuse))/(large-small))
}

// deepProtocol is the sse protocol, whose calls first make a deep call, as
// a VU might before its stream: it grows their goroutine's stack to 8 KB.
type deepProtocol struct{ protocols.Protocol }

func (p deepProtocol) Open(ctx context.Context, target cty.Value) (protocols.Client, error) {
	c, err := p.Protocol.Open(ctx, target)
	if err != nil {
		return nil, err
	}
	return deepClient{c.(*sse.Client)}, nil
}

type deepClient struct{ *sse.Client }

func (c deepClient) Do(ctx context.Context, call protocols.Call, emit func(protocols.Sample)) {
	c.DoCall(ctx, &call, emit)
}

func (c deepClient) DoCall(ctx context.Context, call *protocols.Call, emit func(protocols.Sample)) {
	deepen(6)
	c.Client.DoCall(ctx, call, emit)
}

// deepen calls itself n times, each frame over 512 bytes: 6 take the
// stack of a VU past 4 KB, and not past 8.
//
//go:noinline
func deepen(n int) byte {
	var frame [512]byte
	frame[n] = byte(n)
	if n == 0 {
		return frame[0]
	}
	return deepen(n-1) + frame[n]
}
