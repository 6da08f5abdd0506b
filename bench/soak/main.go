// Command soak runs hload at a steady rate for a long time and samples the
// hload process every minute, to show that a long run does not grow:
//
//	go run ./bench/soak                          # 30 minutes at 1,000 requests/s
//	go run ./bench/soak -duration 5m -rate 2000
//
// It builds hload, starts a net/http target on 127.0.0.1 that counts what
// it answers, and runs `hload apply` with a constant-arrival-rate scenario
// for -duration. Every -every it samples the hload process: its resident
// memory (VmRSS), its goroutines (from the pprof endpoint that
// HLOAD_PPROF_ADDR opens) and its open files (/proc/PID/fd). At the end it
// prints the samples, each one's growth over the sample at -baseline (one
// minute: the first minute holds the start-up, the pools filling and the
// first histograms), the largest growth of each figure after it, and
// whether it stayed under -max-growth (10 %). It also checks that hload's
// count equals the server's.
//
// It is not part of the test suite: scripts/test.sh runs its test, a soak
// of seconds that proves it works. The exit code is 1 when a figure grew
// more than -max-growth or the counts differ, 2 for bad flags.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/hload/hload/bench/loadavg"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

type options struct {
	duration, every, baseline time.Duration
	rate                      int
	maxGrowth                 float64
	hload                     string // a built hload; "" builds ./cmd/hload
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("soak", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.DurationVar(&o.duration, "duration", 30*time.Minute, "how long hload runs")
	fs.DurationVar(&o.every, "every", time.Minute, "how often the hload process is sampled")
	fs.DurationVar(&o.baseline, "baseline", time.Minute, "the sample growth is measured from")
	fs.IntVar(&o.rate, "rate", 1000, "requests per second")
	fs.Float64Var(&o.maxGrowth, "max-growth", 0.10, "the largest growth over the baseline that passes, as a fraction")
	fs.StringVar(&o.hload, "hload", "", "the hload binary to run (default: build ./cmd/hload)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	switch {
	case fs.NArg() > 0:
		return o, fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	case o.every <= 0 || o.baseline < o.every || o.duration < o.baseline+o.every:
		return o, fmt.Errorf("-every %v, -baseline %v, -duration %v: want 0 < every <= baseline, and a duration past the baseline by at least one sample", o.every, o.baseline, o.duration)
	case o.rate < 1:
		return o, fmt.Errorf("-rate %d: want at least 1", o.rate)
	case o.maxGrowth <= 0:
		return o, fmt.Errorf("-max-growth %v: want a fraction above 0", o.maxGrowth)
	}
	return o, nil
}

func run(args []string, stdout, stderr io.Writer) int {
	o, err := parseFlags(args, stderr)
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stderr, "soak:", err)
		}
		return 2
	}
	if err := soak(context.Background(), o, stdout); err != nil {
		fmt.Fprintln(stderr, "soak:", err)
		return 1
	}
	return 0
}

// sample is one reading of the hload process.
type sample struct {
	At    time.Duration `json:"at_s"`
	RSSKB int64         `json:"rss_kb"`
	// LiveKB is the heap's live objects after a collection: what a leak
	// grows. RSS also holds the garbage Go lets grow to twice the live
	// heap before it collects, which at a few allocations a request takes
	// minutes, and pages it has not yet returned to the system.
	LiveKB     int64 `json:"live_heap_kb"`
	Goroutines int64 `json:"goroutines"`
	OpenFiles  int64 `json:"open_files"`
}

// soak builds hload, serves it a target, runs it while sampling the
// process, then judges the samples and the counts.
func soak(ctx context.Context, o options, out io.Writer) error {
	dir, err := os.MkdirTemp("", "hload-soak-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bin := o.hload
	if bin == "" {
		bin = filepath.Join(dir, "hload")
		build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/hload")
		if b, err := build.CombinedOutput(); err != nil {
			return fmt.Errorf("building hload (run from the repository's root): %v\n%s", err, b)
		}
	}

	var served atomic.Int64
	addr, stop, err := serve(&served)
	if err != nil {
		return err
	}
	defer stop()
	pprofAddr, err := freeAddr()
	if err != nil {
		return err
	}
	if err := writeTest(filepath.Join(dir, "soak.hcl"), addr, o); err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, bin, "apply", "soak.hcl", "--quiet", "--summary-export", "summary.json")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HLOAD_PPROF_ADDR="+pprofAddr)
	fmt.Fprintf(out, "hload at %d requests/s for %v, sampled every %v (load average %s)\n", o.rate, o.duration, o.every, loadavg.Read())
	samples, err := sampleRun(cmd, pprofAddr, o.every, out)
	if err != nil {
		return err
	}
	count, err := summaryCount(filepath.Join(dir, "summary.json"))
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "hload counted %d requests, the server answered %d\n", count, served.Load())
	return judge(out, samples, o, count, served.Load())
}

// serve starts the target on a free port of 127.0.0.1: it answers every
// request and counts it in served, the count hload's must equal.
func serve(served *atomic.Int64) (addr string, stop func() error, err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served.Add(1)
		io.WriteString(w, "soak")
	})}
	go srv.Serve(ln)
	return ln.Addr().String(), srv.Close, nil
}

// writeTest writes the soak's test to path: one constant-arrival-rate
// scenario at o.rate for o.duration against addr.
func writeTest(path, addr string, o options) error {
	test := fmt.Sprintf(`
target "t" {
  base_url = "http://%s"
}
scenario "soak" {
  executor = "constant-arrival-rate"
  rate     = %d
  duration = "%s"
  request "get" {
    path = "/soak"
  }
}
`, addr, o.rate, o.duration)
	return os.WriteFile(path, []byte(test), 0o644)
}

// sampleRun starts cmd (hload) and samples its process every interval
// until it exits, printing each sample on out. A sample that cannot be
// read is said and skipped; hload failing is an error, with its output.
func sampleRun(cmd *exec.Cmd, pprofAddr string, every time.Duration, out io.Writer) ([]sample, error) {
	var hloadOut strings.Builder
	cmd.Stdout, cmd.Stderr = &hloadOut, &hloadOut
	began := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()

	var samples []sample
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			if err != nil {
				return nil, fmt.Errorf("hload: %v\n%s", err, hloadOut.String())
			}
			return samples, nil
		case <-tick.C:
			s, err := read(cmd.Process.Pid, pprofAddr)
			if err != nil {
				fmt.Fprintf(out, "  sample at %v: %v\n", time.Since(began).Round(time.Second), err)
				continue
			}
			s.At = time.Since(began).Round(time.Second)
			samples = append(samples, s)
			fmt.Fprintf(out, "  %6s  RSS %7.1f MB  live heap %6.1f MB  goroutines %5d  open files %4d\n",
				s.At, float64(s.RSSKB)/1024, float64(s.LiveKB)/1024, s.Goroutines, s.OpenFiles)
		}
	}
}

// summaryCount reads the requests hload counted from its summary JSON.
func summaryCount(path string) (int64, error) {
	var sum struct {
		Scenarios map[string]struct {
			Requests map[string]struct {
				Count int64 `json:"count"`
			} `json:"requests"`
		} `json:"scenarios"`
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	if err := json.Unmarshal(data, &sum); err != nil {
		return 0, err
	}
	return sum.Scenarios["soak"].Requests["get"].Count, nil
}

// judge prints each figure's growth after the baseline sample and fails
// when one grew more than o.maxGrowth, or the counts differ.
func judge(out io.Writer, samples []sample, o options, count, served int64) error {
	base := -1
	for i, s := range samples {
		if s.At >= o.baseline-o.every/2 {
			base = i
			break
		}
	}
	if base < 0 || base == len(samples)-1 {
		return fmt.Errorf("%d samples: none after the baseline at %v to compare", len(samples), o.baseline)
	}
	var errs []error
	for _, f := range []struct {
		name string
		of   func(sample) int64
	}{
		{"RSS", func(s sample) int64 { return s.RSSKB }},
		{"live heap", func(s sample) int64 { return s.LiveKB }},
		{"goroutines", func(s sample) int64 { return s.Goroutines }},
		{"open files", func(s sample) int64 { return s.OpenFiles }},
	} {
		b := f.of(samples[base])
		if b <= 0 {
			errs = append(errs, fmt.Errorf("%s at %v is %d: nothing to measure growth from", f.name, samples[base].At, b))
			continue
		}
		worst, at := 0.0, samples[base].At
		for _, s := range samples[base+1:] {
			if g := float64(f.of(s)-b) / float64(b); g > worst {
				worst, at = g, s.At
			}
		}
		verdict := "holds"
		if worst > o.maxGrowth {
			verdict = "grows"
			errs = append(errs, fmt.Errorf("%s grew %.1f %% from %v to %v", f.name, 100*worst, samples[base].At, at))
		}
		fmt.Fprintf(out, "%-10s at %v: %d; largest growth after it %+.1f %% (at %v), goal < %.0f %%: %s\n",
			f.name, samples[base].At, b, 100*worst, at, 100*o.maxGrowth, verdict)
	}
	if count != served {
		errs = append(errs, fmt.Errorf("hload counted %d requests, the server answered %d", count, served))
	}
	return errors.Join(errs...)
}

// read samples the process pid: its RSS and open files from /proc, its
// goroutines from its pprof endpoint at addr.
func read(pid int, addr string) (sample, error) {
	var s sample
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return s, err
	}
	for _, line := range strings.Split(string(status), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			s.RSSKB, _ = strconv.ParseInt(f[1], 10, 64)
		}
	}
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return s, err
	}
	s.OpenFiles = int64(len(fds))
	if s.Goroutines, err = goroutines(addr); err != nil {
		return s, err
	}
	s.LiveKB, err = liveHeap(addr)
	return s, err
}

// liveHeap reads the heap in use after a collection (HeapAlloc, in the
// MemStats that close the heap profile's text) from the process's pprof
// endpoint, in KB.
func liveHeap(addr string) (int64, error) {
	body, err := get(addr, "/debug/pprof/heap?gc=1&debug=1")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(body, "\n") {
		if v, ok := strings.CutPrefix(line, "# HeapAlloc = "); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n / 1024, err
		}
	}
	return 0, errors.New("the heap profile holds no HeapAlloc")
}

// get returns the body of the process's pprof endpoint at path.
func get(addr, path string) (string, error) {
	client := http.Client{Timeout: 10 * time.Second}
	resp, err := client.Get("http://" + addr + path)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// goroutines reads "goroutine profile: total N" from the process's pprof
// endpoint.
func goroutines(addr string) (int64, error) {
	body, err := get(addr, "/debug/pprof/goroutine?debug=1")
	if err != nil {
		return 0, err
	}
	line, _, _ := strings.Cut(body, "\n")
	total, ok := strings.CutPrefix(strings.TrimSpace(line), "goroutine profile: total ")
	if !ok {
		return 0, fmt.Errorf("the goroutine profile begins %q", line)
	}
	return strconv.ParseInt(total, 10, 64)
}

// freeAddr returns a loopback address with a port free now.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}
