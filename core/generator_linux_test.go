package core

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestSelfMeter: the CPU time the meter reads grows as the process's own
// account in /proc/self/stat does (utime + stime, in clock ticks, read
// here independently), and the run-queue wait is measured and never
// shrinks.
func TestSelfMeter(t *testing.T) {
	m := newSelfMeter()
	before, statBefore := m.read(), statCPU(t)
	// Spin until the kernel has counted 200 ms more, or 5 s passed on a
	// machine too busy to give them.
	deadline := time.Now().Add(5 * time.Second)
	for n := 0; statCPU(t)-statBefore < 200*time.Millisecond && time.Now().Before(deadline); n++ {
		for range 100_000 {
			n *= 3
		}
	}
	after, statAfter := m.read(), statCPU(t)
	if !before.cpuKnown || !after.cpuKnown || !after.waitKnown {
		t.Fatalf("on Linux the meter reads CPU and run-queue wait: %+v", after)
	}
	got, want := after.cpu-before.cpu, statAfter-statBefore
	t.Logf("meter %v, /proc/self/stat %v, run-queue wait %v", got, want, after.wait-before.wait)
	// /proc/self/stat counts in ticks of 10 ms; a read of each straddles
	// the other by a tick or two.
	if diff := got - want; diff > 30*time.Millisecond || diff < -30*time.Millisecond || want < 200*time.Millisecond {
		t.Errorf("meter counted %v of CPU, /proc/self/stat %v", got, want)
	}
	if after.wait < before.wait {
		t.Errorf("run-queue wait went from %v to %v", before.wait, after.wait)
	}
}

// statCPU is utime + stime of /proc/self/stat, assuming the usual 100
// clock ticks per second.
func statCPU(t *testing.T) time.Duration {
	t.Helper()
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		t.Fatal(err)
	}
	// The command name may hold spaces; the fields after it do not.
	fields := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	utime, err1 := strconv.ParseInt(fields[11], 10, 64) // field 14 of the whole line
	stime, err2 := strconv.ParseInt(fields[12], 10, 64)
	if err1 != nil || err2 != nil {
		t.Fatalf("/proc/self/stat: %q", b)
	}
	return time.Duration(utime+stime) * 10 * time.Millisecond
}
