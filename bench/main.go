// Command bench measures hload against wrk, hey and vegeta, in one
// invocation, against one target server:
//
//	scripts/peers.sh    # installs wrk, hey and vegeta when they are missing
//	go run ./bench      # 2 rounds, 8 s per tool per round
//
// The target server is this binary again, run with -serve: net/http on
// 127.0.0.1, answering every request with a 60-byte body. With two cores
// and taskset, the server is pinned to core 1 and each tool to core 0.
// Each tool runs with 50 connections for -duration, in turn, and the
// rounds interleave the tools (A, B, C, then A, B, C again), so a burst of
// other work on the machine spreads over all of them. Each tool's CPU time
// and peak RSS come from its rusage, as wait4 returns it.
//
// It prints a table per round, each tool's medians, and the ratios that
// docs/performance.md sets as goals, each marked "meets" or "below". A missing
// tool is reported with its install command and skipped. The exit code is
// 1 when a tool failed to run or its figures could not be read, and with
// -require-all when a tool is missing; 2 for bad flags. Speed never
// changes the exit code.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

type options struct {
	duration    time.Duration
	rounds      int
	connections int
	tools       []*tool
	jsonPath    string
	requireAll  bool
	serve       bool
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	var o options
	var only string
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.DurationVar(&o.duration, "duration", 8*time.Second, "how long each tool runs, in whole seconds")
	fs.IntVar(&o.rounds, "rounds", 2, "how many times each tool runs; the rounds interleave the tools")
	fs.IntVar(&o.connections, "connections", 50, "connections (hload: VUs) of each tool")
	fs.StringVar(&only, "tools", "", "comma-separated tools to run (default all: hload,hload-flow,hload-isolated,wrk,hey,vegeta)")
	fs.StringVar(&o.jsonPath, "json", "", "also write the results as JSON to this file")
	fs.BoolVar(&o.requireAll, "require-all", false, "fail when a tool is missing instead of skipping it")
	fs.BoolVar(&o.serve, "serve", false, "run as the target server (the harness starts itself this way)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	// wrk takes whole seconds only.
	if o.duration < time.Second || o.duration%time.Second != 0 {
		return o, fmt.Errorf("-duration %s: want whole seconds, at least 1s", o.duration)
	}
	if o.rounds < 1 {
		return o, fmt.Errorf("-rounds %d: want at least 1", o.rounds)
	}
	if o.connections < 1 {
		return o, fmt.Errorf("-connections %d: want at least 1", o.connections)
	}
	all := tools()
	if only == "" {
		o.tools = all
		return o, nil
	}
	for _, name := range strings.Split(only, ",") {
		found := false
		for _, t := range all {
			if t.name == strings.TrimSpace(name) {
				o.tools, found = append(o.tools, t), true
			}
		}
		if !found {
			var names []string
			for _, t := range all {
				names = append(names, t.name)
			}
			return o, fmt.Errorf("-tools: no tool %q; the tools are %s", name, strings.Join(names, ", "))
		}
	}
	return o, nil
}

func run(args []string, stdout, stderr io.Writer) int {
	o, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "bench: %v\n", err)
		return 2
	}
	if o.serve {
		if err := serve(os.Stdin, stdout); err != nil {
			fmt.Fprintf(stderr, "bench -serve: %v\n", err)
			return 1
		}
		return 0
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := bench(ctx, o, stdout); err != nil {
		fmt.Fprintf(stderr, "bench: %v\n", err)
		return 1
	}
	return 0
}

// report is what -json writes.
type report struct {
	Date         time.Time `json:"date"`
	CPUs         int       `json:"cpus"`
	Pinned       bool      `json:"pinned"`
	Duration     string    `json:"duration"`
	Rounds       int       `json:"rounds"`
	Connections  int       `json:"connections"`
	LoadAvgStart string    `json:"loadavg_start"`
	LoadAvgEnd   string    `json:"loadavg_end"`
	Missing      []string  `json:"missing,omitempty"`
	Runs         []result  `json:"runs"`
	Medians      []result  `json:"medians"`
	Ratios       []ratio   `json:"ratios"`
}

func bench(ctx context.Context, o options, out io.Writer) error {
	// scripts/peers.sh builds vegeta there.
	if cache, err := os.UserCacheDir(); err == nil {
		os.Setenv("PATH", filepath.Join(cache, "hload", "bin")+string(os.PathListSeparator)+os.Getenv("PATH"))
	}
	rep := report{Date: time.Now(), CPUs: runtime.NumCPU(), Duration: o.duration.String(),
		Rounds: o.rounds, Connections: o.connections, LoadAvgStart: loadAvg()}

	dir, err := os.MkdirTemp("", "hload-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	// Find every tool before any load is sent, then build hload once for
	// both its modes.
	programs := map[*tool]string{}
	for _, t := range o.tools {
		if t.program == "" {
			continue
		}
		if programs[t], err = exec.LookPath(t.program); err != nil {
			fmt.Fprintf(out, "%s: missing, skipped; install: %s\n", t.name, t.install)
			rep.Missing = append(rep.Missing, t.name)
		}
	}
	if o.requireAll && len(rep.Missing) > 0 {
		return fmt.Errorf("-require-all: missing %s; scripts/peers.sh installs them", strings.Join(rep.Missing, ", "))
	}
	var ready []*tool
	hload := ""
	for _, t := range o.tools {
		if t.program == "" {
			if hload == "" {
				if hload, err = buildHload(ctx, dir); err != nil {
					return err
				}
			}
			programs[t] = hload
		}
		if programs[t] != "" {
			ready = append(ready, t)
		}
	}
	if len(ready) == 0 {
		return errors.New("no tool to run")
	}

	pin := findPinning()
	rep.Pinned = pin.taskset != ""
	srv, err := startServer(ctx, pin)
	if err != nil {
		return err
	}
	defer srv.stop()
	where := "pinned: server on core 1, each tool on core 0 (taskset)"
	if !rep.Pinned {
		where = pin.why
	}
	fmt.Fprintf(out, "target %s (net/http, %d-byte body); %s\n", srv.url, len(body), where)
	fmt.Fprintf(out, "%d connections, %s per tool, %s; load average %s\n",
		o.connections, o.duration, plural(o.rounds, "round"), rep.LoadAvgStart)
	for _, t := range ready {
		if t.note != "" {
			fmt.Fprintf(out, "%s: %s\n", t.name, t.note)
		}
	}

	var failed []string
	for round := 1; round <= o.rounds; round++ {
		var results []result
		for _, t := range ready {
			if ctx.Err() != nil {
				return fmt.Errorf("interrupted: %w", context.Cause(ctx))
			}
			r := toolRun{url: srv.url, duration: o.duration, connections: o.connections, program: programs[t],
				files: filepath.Join(dir, fmt.Sprintf("%s-%d", t.name, round))}
			serverBefore := srv.cpuSeconds()
			f, u, err := measure(ctx, pin, t, r)
			serverAfter := srv.cpuSeconds()
			res := result{Tool: t.name, Round: round, RPS: f.rps, Requests: f.requests,
				CPUSeconds: u.cpuSeconds, PeakRSSMB: u.peakRSSMB, ServerCPUSeconds: -1}
			if u.cpuSeconds > 0 {
				res.RequestsPerCPUSec = float64(f.requests) / u.cpuSeconds
			}
			if serverBefore >= 0 && serverAfter >= 0 {
				res.ServerCPUSeconds = serverAfter - serverBefore
			}
			if err != nil {
				res.Error = err.Error()
				failed = append(failed, fmt.Sprintf("%s in round %d: %s", t.name, round, oneLine(err.Error())))
			}
			results = append(results, res)
		}
		printResults(out, fmt.Sprintf("round %d of %d", round, o.rounds), results)
		rep.Runs = append(rep.Runs, results...)
	}
	if err := srv.check(); err != nil {
		failed = append(failed, "after the runs: "+err.Error())
	}

	rep.Medians = medians(rep.Runs)
	rep.Ratios = ratios(rep.Medians, rep.Pinned)
	rep.LoadAvgEnd = loadAvg()
	printResults(out, "medians over "+plural(o.rounds, "round"), rep.Medians)
	printRatios(out, rep.Ratios)
	fmt.Fprintf(out, "\nload average at the end %s; other work on the machine makes these figures noisy\n", rep.LoadAvgEnd)
	for _, name := range rep.Missing {
		fmt.Fprintf(out, "%s was missing and skipped\n", name)
	}

	if o.jsonPath != "" {
		data, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(o.jsonPath, append(data, '\n'), 0o644); err != nil {
			return fmt.Errorf("-json: %w", err)
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("%s failed:\n  %s", plural(len(failed), "run"), strings.Join(failed, "\n  "))
	}
	return nil
}

// loadAvg is the machine's 1, 5 and 15-minute load average, or "?".
func loadAvg() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// plural is n and the noun, with an s unless n is 1.
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
