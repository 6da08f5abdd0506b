// Command bench measures hload against wrk, hey and vegeta, in one
// invocation, against one target server:
//
//	scripts/peers.sh    # installs wrk, hey and vegeta when they are missing
//	go run ./bench      # every case, 2 rounds, 8 s per tool per round
//
// The target server is this binary again, run with -serve: net/http on
// 127.0.0.1, answering every request with a 60-byte body (after a delay on
// /slow?ms=N), a TCP echo server beside it, and the counts of both, which
// hload's own must equal, with the HTTP connections it accepted. With two
// cores and taskset, the server is pinned to core 1 and each tool to core
// 0. The tools run in turn, case by case, and the rounds interleave them
// (A, B, C, then A, B, C again), so a burst of other work on the machine
// spreads over all of them. Each tool's CPU time and peak RSS come from
// its rusage, as wait4 returns it.
//
// The cases (-cases) are a keep-alive GET (get), a POST with a query and a
// constant JSON body (post), the same POST with dynamic values
// (post-dynamic), the open model at 10,000 and 20,000 requests/s, hload
// with its default VU pool and with a small explicit one against vegeta
// -rate (open-10000, open-20000), hload and vegeta at each rate of
// -sweep-rates up to the first each does not send in full (open-sweep), 2,000 and
// 10,000 VUs waiting on the slow path (idle-vus), the dynamic POST through
// a plugin process with the external echo plugin (plugin), and one VU
// reading 200 MB bodies, unchecked and with body_contains (big-body).
// bench/README.md says what each measures and why.
//
// It prints a table per case per round, each tool's medians, the goals of
// docs/performance.md, each marked "meets" or "below", and the sweep's
// highest rate held and sent in full per tool per round with their medians. A missing tool
// is reported with its install command and skipped. The exit code is 1
// when a tool failed to run, its figures could not be read or hload's
// count differs from the server's, and with -require-all when a tool is
// missing; 2 for bad flags. Speed never changes the exit code: in the
// sweep, a run whose requests failed is a rate not held, not a failure.
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
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/hload/hload/bench/loadavg"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

type options struct {
	duration    time.Duration
	rounds      int
	connections int
	tools       []*tool // the tools to run, in the order of the cases
	sweepRates  []int
	jsonPath    string
	profileDir  string
	requireAll  bool
	serve       bool
	// floor runs this binary as the floor client (bench/floor.go) at
	// floorRate GETs a second of floorURL, for duration.
	floor     bool
	floorURL  string
	floorRate int
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	var o options
	var onlyTools, onlyCases, sweepRates string
	all := cases()
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.DurationVar(&o.duration, "duration", 8*time.Second, "how long each tool runs, in whole seconds")
	fs.IntVar(&o.rounds, "rounds", 2, "how many times each tool runs; the rounds interleave the tools")
	fs.IntVar(&o.connections, "connections", 50, "connections (hload: VUs) of each tool in the closed-model cases")
	fs.StringVar(&onlyCases, "cases", "", "comma-separated cases to run (default all: "+strings.Join(caseNames(all), ",")+
		"; open-sweep adds up to 3 runs per -sweep-rates rate per round, 27 at the defaults, against the other cases' 26 run lengths: up to twice the time)")
	fs.StringVar(&sweepRates, "sweep-rates", defaultSweepRates, "comma-separated increasing rates per second of the open-sweep case, each run for -duration")
	fs.StringVar(&onlyTools, "tools", "", "comma-separated tools to run, of any case (default every tool of the cases)")
	fs.StringVar(&o.jsonPath, "json", "", "also write the results as JSON to this file")
	fs.StringVar(&o.profileDir, "profile", "", "write a CPU profile of each hload run to this folder, as TOOL-ROUND.PID (HLOAD_CPUPROFILE)")
	fs.BoolVar(&o.requireAll, "require-all", false, "fail when a tool is missing instead of skipping it")
	fs.BoolVar(&o.serve, "serve", false, "run as the target server (the harness starts itself this way)")
	fs.BoolVar(&o.floor, "floor", false, "run as the floor client: -floor-rate GETs a second of -floor-url for -duration (the harness starts itself this way)")
	fs.StringVar(&o.floorURL, "floor-url", "", "with -floor: the server's base URL")
	fs.IntVar(&o.floorRate, "floor-rate", 0, "with -floor: GETs per second")
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
	var err error
	if o.sweepRates, err = parseRates(sweepRates); err != nil {
		return o, err
	}
	o.tools, err = selectTools(all, onlyCases, onlyTools)
	return o, err
}

// selectTools picks the tools of the named cases (all when none is
// named), with the tools of other cases that their goals compare against;
// then, when tools are named, only those.
func selectTools(all []*benchCase, onlyCases, onlyTools string) ([]*tool, error) {
	chosen := map[string]bool{}
	if onlyCases == "" {
		for _, c := range all {
			for _, t := range c.tools {
				chosen[t.name] = true
			}
		}
	}
	if onlyCases != "" {
		for _, name := range strings.Split(onlyCases, ",") {
			name = strings.TrimSpace(name)
			found := false
			for _, c := range all {
				if c.name == name {
					found = true
					for _, t := range c.tools {
						chosen[t.name] = true
					}
					for _, n := range c.needs {
						chosen[n] = true
					}
				}
			}
			if !found {
				return nil, fmt.Errorf("-cases: no case %q; the cases are %s", name, strings.Join(caseNames(all), ", "))
			}
		}
	}
	if onlyTools != "" {
		named := map[string]bool{}
		for _, name := range strings.Split(onlyTools, ",") {
			name = strings.TrimSpace(name)
			if !chosen[name] {
				var names []string
				for _, c := range all {
					for _, t := range c.tools {
						if chosen[t.name] {
							names = append(names, t.name)
						}
					}
				}
				return nil, fmt.Errorf("-tools: no tool %q in the cases chosen; their tools are %s", name, strings.Join(names, ", "))
			}
			named[name] = true
		}
		chosen = named
	}
	var out []*tool
	for _, c := range all {
		for _, t := range c.tools {
			if chosen[t.name] {
				out = append(out, t)
			}
		}
	}
	return out, nil
}

func caseNames(cs []*benchCase) []string {
	var names []string
	for _, c := range cs {
		names = append(names, c.name)
	}
	return names
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
	if o.floor {
		if err := runFloor(o.floorURL, o.floorRate, o.duration, stdout); err != nil {
			fmt.Fprintf(stderr, "bench -floor: %v\n", err)
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
	Cases        []string  `json:"cases"`
	Missing      []string  `json:"missing,omitempty"`
	Runs         []result  `json:"runs"`
	Medians      []result  `json:"medians"`
	Ratios       []ratio   `json:"ratios"`
	// Of the open-sweep case: its rates, each tool's sweep in each
	// round, and the median of their highest held rates.
	SweepRates   []int         `json:"sweep_rates,omitempty"`
	Sweeps       []sweepRun    `json:"sweeps,omitempty"`
	SweepMedians []sweepMedian `json:"sweep_medians,omitempty"`
}

// bench finds the tools, starts the server, runs the rounds and reports:
// each a step below.
func bench(ctx context.Context, o options, out io.Writer) error {
	// scripts/peers.sh builds vegeta there.
	if cache, err := os.UserCacheDir(); err == nil {
		os.Setenv("PATH", filepath.Join(cache, "hload", "bin")+string(os.PathListSeparator)+os.Getenv("PATH"))
	}
	// Runs is [] and not null in -json when only the sweep ran.
	rep := report{Date: time.Now(), CPUs: runtime.NumCPU(), Duration: o.duration.String(),
		Rounds: o.rounds, Connections: o.connections, LoadAvgStart: loadavg.Read(), Runs: []result{}}

	dir, err := os.MkdirTemp("", "hload-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	programs, ready, hload, err := findTools(ctx, o, dir, out, &rep)
	if err != nil {
		return err
	}
	if o.profileDir != "" {
		if o.profileDir, err = profileDir(o.profileDir, hload); err != nil {
			return fmt.Errorf("-profile: %w", err)
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
	b := &benchRun{o: o, out: out, dir: dir, pin: pin, srv: srv, programs: programs}
	fixed, sweepers := b.announce(ready, &rep)
	failed, err := b.rounds(ctx, fixed, sweepers, &rep)
	if err != nil {
		return err
	}
	if err := srv.check(); err != nil {
		failed = append(failed, "after the runs: "+err.Error())
	}
	if err := finish(out, o, &rep); err != nil {
		return err
	}
	if len(failed) > 0 {
		return fmt.Errorf("%s failed:\n  %s", plural(len(failed), "run"), strings.Join(failed, "\n  "))
	}
	return nil
}

// findTools finds every tool before any load is sent, and builds hload
// once for all its cases (into dir). It returns the program each tool
// runs, the tools found, in order, and the hload binary ("" when no case
// runs it); a missing tool is said on out and listed in rep.Missing.
func findTools(ctx context.Context, o options, dir string, out io.Writer, rep *report) (programs map[*tool]string, ready []*tool, hload string, err error) {
	programs = map[*tool]string{}
	self, err := os.Executable()
	if err != nil {
		return nil, nil, "", err
	}
	for _, t := range o.tools {
		if t.self {
			programs[t] = self
		}
		if t.program == "" {
			continue
		}
		if programs[t], err = exec.LookPath(t.program); err != nil {
			fmt.Fprintf(out, "%s: missing, skipped; install: %s\n", t.name, t.install)
			rep.Missing = append(rep.Missing, t.name)
		}
	}
	if o.requireAll && len(rep.Missing) > 0 {
		return nil, nil, "", fmt.Errorf("-require-all: missing %s; scripts/peers.sh installs them", strings.Join(rep.Missing, ", "))
	}
	echo := false
	for _, t := range o.tools {
		echo = echo || t.counted == "echo"
	}
	for _, t := range o.tools {
		if t.program == "" && !t.self {
			if hload == "" {
				if hload, err = buildHload(ctx, dir, echo); err != nil {
					return nil, nil, "", err
				}
			}
			programs[t] = hload
		}
		if programs[t] != "" {
			ready = append(ready, t)
			if len(rep.Cases) == 0 || rep.Cases[len(rep.Cases)-1] != t.caseName {
				rep.Cases = append(rep.Cases, t.caseName)
			}
		}
	}
	return programs, ready, hload, nil
}

// profileDir makes -profile's folder and returns its absolute path. It
// copies the hload binary there, beside its profiles, for pprof's source
// view.
func profileDir(dir, hload string) (string, error) {
	dir, err := filepath.Abs(dir)
	if err == nil {
		err = os.MkdirAll(dir, 0o755)
	}
	if err == nil && hload != "" {
		err = copyFile(hload, filepath.Join(dir, "hload"))
	}
	return dir, err
}

// benchRun is what every run of a tool needs: the options, the server,
// the pinning and the programs found.
type benchRun struct {
	o        options
	out      io.Writer
	dir      string // the runs' files, each under its run's name
	pin      pinning
	srv      *server
	programs map[*tool]string
}

// announce says what is measured, where and how, and splits the tools
// into those run once a round (fixed) and those that sweep the rates.
func (b *benchRun) announce(ready []*tool, rep *report) (fixed, sweepers []*tool) {
	o, out := b.o, b.out
	where := "pinned: server on core 1, each tool on core 0 (taskset)"
	if !rep.Pinned {
		where = b.pin.why
	}
	fmt.Fprintf(out, "target %s (net/http, %d-byte body), echo %s; %s\n", b.srv.url, len(body), b.srv.echoAddr, where)
	fmt.Fprintf(out, "cases %s; %d connections in the closed-model cases, %s per tool, %s; load average %s\n",
		strings.Join(rep.Cases, ","), o.connections, o.duration, plural(o.rounds, "round"), rep.LoadAvgStart)
	for _, t := range ready {
		if t.note != "" {
			fmt.Fprintf(out, "%s: %s\n", t.name, t.note)
		}
		if t.sweep {
			sweepers = append(sweepers, t)
		} else {
			fixed = append(fixed, t)
		}
	}
	if len(sweepers) > 0 {
		rep.SweepRates = o.sweepRates
		fmt.Fprintf(out, "open-sweep: %s/s, each for %s, up to the first rate a tool does not send in full\n", joinInts(o.sweepRates), o.duration)
	}
	return fixed, sweepers
}

// rounds runs the rounds: each fixed tool once, then the sweep, adding
// the results to rep. It returns the runs that failed; err is set only
// when the bench was interrupted.
func (b *benchRun) rounds(ctx context.Context, fixed, sweepers []*tool, rep *report) (failed []string, err error) {
	o, out := b.o, b.out
	for round := 1; round <= o.rounds; round++ {
		var results []result
		for _, t := range fixed {
			if ctx.Err() != nil {
				return nil, fmt.Errorf("interrupted: %w", context.Cause(ctx))
			}
			res, err := b.runTool(ctx, t, fmt.Sprintf("%s-%d", t.name, round), t.rate)
			res.Round = round
			if err != nil {
				res.Error = err.Error()
				failed = append(failed, fmt.Sprintf("%s in round %d: %s", t.name, round, oneLine(err.Error())))
			}
			results = append(results, res)
		}
		printResults(out, fmt.Sprintf("round %d of %d", round, o.rounds), results)
		rep.Runs = append(rep.Runs, results...)
		if len(sweepers) == 0 {
			continue
		}
		sweeps, fails := sweepRound(o.sweepRates, sweepers, round, func(t *tool, rate int) (result, error) {
			return b.runTool(ctx, t, fmt.Sprintf("%s-%d-%d", t.name, rate, round), rate)
		})
		if ctx.Err() != nil {
			return nil, fmt.Errorf("interrupted: %w", context.Cause(ctx))
		}
		printSweep(out, fmt.Sprintf("round %d of %d, case open-sweep", round, o.rounds), o.duration, sweeps)
		rep.Sweeps = append(rep.Sweeps, sweeps...)
		failed = append(failed, fails...)
	}
	return failed, nil
}

// runTool runs a tool once; name is the run's, for its files and its
// profile.
func (b *benchRun) runTool(ctx context.Context, t *tool, name string, rate int) (result, error) {
	r := toolRun{url: b.srv.url, echoAddr: b.srv.echoAddr, duration: b.o.duration, connections: b.o.connections, rate: rate,
		program: b.programs[t], files: filepath.Join(b.dir, name)}
	if b.o.profileDir != "" && t.program == "" && !t.self {
		r.env = []string{"HLOAD_CPUPROFILE=" + filepath.Join(b.o.profileDir, name)}
	}
	return runOnce(ctx, b.pin, b.srv, t, r)
}

// finish computes the medians, the ratios and the sweep's medians,
// prints them and writes -json.
func finish(out io.Writer, o options, rep *report) error {
	rep.Medians = medians(rep.Runs)
	rep.Ratios = ratios(rep.Medians, rep.Pinned)
	rep.SweepMedians = sweepMedians(rep.Sweeps)
	rep.LoadAvgEnd = loadavg.Read()
	if len(rep.Runs) > 0 {
		printResults(out, "medians over "+plural(o.rounds, "round"), rep.Medians)
		printRatios(out, rep.Ratios)
	}
	if len(rep.SweepMedians) > 0 {
		printSweepMedians(out, o.rounds, rep.SweepMedians)
	}
	fmt.Fprintf(out, "\nload average at the end %s; other work on the machine makes these figures noisy\n", rep.LoadAvgEnd)
	for _, name := range rep.Missing {
		fmt.Fprintf(out, "%s was missing and skipped\n", name)
	}
	if o.jsonPath == "" {
		return nil
	}
	data, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(o.jsonPath, append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("-json: %w", err)
	}
	return nil
}

// runOnce runs one tool once and reads its result, with the server's
// CPU time and count over the run. A tool whose requests the server must
// count exactly (hload's) fails when the counts differ.
func runOnce(ctx context.Context, pin pinning, srv *server, t *tool, r toolRun) (result, error) {
	res := result{Case: t.caseName, Tool: t.name, ServerCPUSeconds: -1, ServerRequests: -1, ServerConnections: -1, VUs: t.vus}
	if r.rate > 0 {
		res.Planned = int64(r.rate) * int64(r.duration/time.Second)
	}
	before, countErr := srv.counts()
	cpuBefore := srv.cpuSeconds()
	f, u, err := measure(ctx, pin, t, r)
	cpuAfter := srv.cpuSeconds()
	after, err2 := srv.counts()
	res.RPS, res.Requests, res.Dropped, res.Saturated = f.rps, f.requests, f.dropped, f.saturated
	res.CPUSeconds, res.PeakRSSMB = u.cpuSeconds, u.peakRSSMB
	if f.latenessP99 >= 0 {
		late := f.latenessP99
		res.LatenessP99Ms = &late
	}
	if u.cpuSeconds > 0 {
		res.RequestsPerCPUSec = float64(f.requests) / u.cpuSeconds
	}
	if f.requests > 0 {
		res.CPUMicrosPerReq = u.cpuSeconds * 1e6 / float64(f.requests)
	}
	if cpuBefore >= 0 && cpuAfter >= 0 {
		res.ServerCPUSeconds = cpuAfter - cpuBefore
	}
	if countErr == nil {
		countErr = err2
	}
	if countErr == nil {
		res.ServerRequests = after.requests - before.requests
		if t.counted == "echo" {
			res.ServerRequests = after.echoes - before.echoes
		}
		res.ServerConnections = after.conns - before.conns
		// The count before the run reset the server's longest stall.
		stall := float64(after.stallUs) / 1000
		res.ServerStallMs = &stall
	}
	if err != nil {
		return res, err
	}
	if countErr != nil {
		return res, countErr
	}
	if t.counted != "" && res.ServerRequests != f.requests {
		return res, fmt.Errorf("the server counted %d %s calls, %s reported %d", res.ServerRequests, t.counted, t.name, f.requests)
	}
	return res, nil
}

// copyFile copies an executable.
func copyFile(from, to string) error {
	data, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, data, 0o755)
}

// joinInts is ns separated by commas.
func joinInts(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ",")
}

// plural is n and the noun, with an s unless n is 1.
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
