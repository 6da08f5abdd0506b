package host

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/zclconf/go-cty/cty"

	"github.com/hload/hload/plugins/internal/wire"
	"github.com/hload/hload/protocols"
)

// slowLog is hload's stderr, slow: each line copied to it takes a while, as
// on a terminal that cannot keep up, so a plugin's stderr is read behind
// what it wrote.
type slowLog struct{ delay time.Duration }

func (w slowLog) Write(p []byte) (int, error) {
	time.Sleep(w.delay)
	return len(p), nil
}

// TestCrashWaitsForLastStderrLines: a plugin that writes its last lines to
// stderr and dies at once (as the Go runtime does with a crash's stack) is
// reported with those lines, the very last one included, though the host
// sees the broken connection long before it has read them: a dead
// plugin's failure waits for its stderr to be read to the end.
//
// "shows as dead late" stands for a busy machine, where the host reads the
// broken connection before /proc shows the process as a zombie: a process
// closes its files before it becomes one. A CI run saw that, and the
// failure came 8 ms after the call with only 2 of its lines.
func TestCrashWaitsForLastStderrLines(t *testing.T) {
	t.Run("shows as dead at once", func(t *testing.T) { testCrashLastLines(t, 0) })
	t.Run("shows as dead late", func(t *testing.T) { testCrashLastLines(t, 200*time.Millisecond) })
}

func testCrashLastLines(t *testing.T, deadAfter time.Duration) {
	const lines = 100
	p, err := Launch(context.Background(), LaunchSpec{Name: "fake", Path: fakeBin, Log: slowLog{delay: 3 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Kill()
	var broke time.Time // when lastLines first asked: the connection broke
	p.dead = func(pid int) bool {
		if broke.IsZero() {
			broke = time.Now()
		}
		return time.Since(broke) >= deadAfter && dead(pid)
	}
	c, err := p.Open(context.Background(), cty.ObjectVal(map[string]cty.Value{"address": cty.StringVal("crash:100")}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var got []protocols.Sample
	start := time.Now()
	c.Do(context.Background(), protocols.Call{VU: 1, Request: message("x")}, func(s protocols.Sample) { got = append(got, s) })
	if len(got) != 1 || got[0].Error != wire.ErrPlugin {
		t.Errorf("samples %+v, want one request sample of kind %q", got, wire.ErrPlugin)
	}
	var failure error
	select {
	case failure = <-c.(protocols.Failer).Failed():
	case <-time.After(10 * time.Second):
		t.Fatal("no failure 10 s after the plugin died")
	}
	took := time.Since(start)
	msg := failure.Error()
	for _, want := range []string{`plugin "fake" exited`, "last stderr lines:", "fake: crash line 100 of 100", "fake: crash line 81 of 100"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the failure lacks %q:\n%s", want, msg)
		}
	}
	t.Logf("%d lines at 3 ms each on hload's stderr; the failure came %s after the call, with its last %d lines", lines, took.Round(time.Millisecond), strings.Count(msg, "fake: crash line"))
}
