package main

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestJudge: a figure that grows more than the limit after the baseline
// fails, one that grows less holds, and what came before the baseline
// (the start-up) does not count.
func TestJudge(t *testing.T) {
	o := options{every: time.Minute, baseline: time.Minute, maxGrowth: 0.10}
	at := func(m int, rss, g, fds int64) sample {
		return sample{At: time.Duration(m) * time.Minute, RSSKB: rss, LiveKB: rss / 2, Goroutines: g, OpenFiles: fds}
	}
	flat := []sample{at(1, 1000, 50, 20), at(10, 1050, 52, 20), at(30, 1090, 50, 21)}
	startUp := append([]sample{at(0, 100, 5, 3)}, flat...)
	leak := []sample{at(1, 1000, 50, 20), at(10, 1200, 50, 20), at(30, 1400, 50, 20)}
	for _, tc := range []struct {
		name    string
		samples []sample
		count   int64
		fails   string
	}{
		{"flat", flat, 10, ""},
		{"the start-up is not growth", startUp, 10, ""},
		{"a leak", leak, 10, "live heap grew 40.0 % from 1m0s to 30m0s"},
		{"counts differ", flat, 9, "hload counted 9 requests, the server answered 10"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			err := judge(&out, tc.samples, o, tc.count, 10)
			if tc.fails == "" && err != nil || tc.fails != "" && (err == nil || !strings.Contains(err.Error(), tc.fails)) {
				t.Errorf("judge = %v; want %q\n%s", err, tc.fails, out.String())
			}
		})
	}
}

// TestShortSoak runs the soak for seconds against a freshly built hload:
// every sample reads the process's memory, goroutines and open files,
// and hload's count equals the server's.
func TestShortSoak(t *testing.T) {
	if testing.Short() {
		t.Skip("builds hload and runs it for 5 s")
	}
	bin := filepath.Join(t.TempDir(), "hload")
	if out, err := exec.Command("go", "build", "-o", bin, "../../cmd/hload").CombinedOutput(); err != nil {
		t.Fatalf("building hload: %v\n%s", err, out)
	}
	o := options{duration: 5 * time.Second, every: time.Second, baseline: time.Second, rate: 200, maxGrowth: 100, hload: bin}
	var out bytes.Buffer
	if err := soak(context.Background(), o, &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	t.Log(out.String())
	if n := strings.Count(out.String(), "live heap "); n < 5 || strings.Contains(out.String(), "sample at") {
		t.Errorf("%d samples read, or a sample failed:\n%s", n, out.String())
	}
	if !strings.Contains(out.String(), "hload counted 1000 requests, the server answered 1000") {
		t.Errorf("counts:\n%s", out.String())
	}
}
