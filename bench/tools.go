package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"
)

// toolRun is what one run of a tool needs.
type toolRun struct {
	url         string // the HTTP server's base URL, ending in "/"
	echoAddr    string // the echo server's host:port
	duration    time.Duration
	connections int
	rate        int      // the planned requests per second of an open-model run; 0 for a closed one
	program     string   // the tool's binary
	files       string   // a path prefix for the run's own files
	env         []string // added to the tool's environment (-profile)
}

// A tool is one load generator in one case: how to run it and how to read
// its figures.
type tool struct {
	name    string
	program string // looked up on PATH; "" for hload, which the harness builds
	// self is a tool this binary runs (the floor): no program to find.
	self    bool
	install string // how to get it when it is missing
	args    func(r toolRun) []string
	stdin   func(r toolRun) string // what the tool reads on stdin, if anything
	// figures reads the run's figures from the tool's stdout (and from
	// the files it wrote under r.files).
	figures func(ctx context.Context, r toolRun, stdout []byte) (figures, error)
	// note says what the harness measures of the tool, when that is not
	// simply the one process.
	note string
	// rate is the planned requests per second of an open-model run; 0
	// for a closed one, and for a sweeping tool, whose rate is each run's.
	rate int
	// sweep says the tool runs at each rate of -sweep-rates in turn,
	// instead of once per round.
	sweep bool
	// vus is the VUs of the idle-VU case's runs; 0 elsewhere.
	vus int
	// counted says which of the server's counts must equal the tool's
	// requests exactly: "http", "echo", or "" (the peers, whose calls in
	// flight when they stop are counted by the server and not by them).
	counted string
	// caseName is the case the tool belongs to.
	caseName string
}

// hloadArgs runs hload on the test file, with its variables.
func hloadArgs(file string, isolate bool) func(r toolRun) []string {
	return func(r toolRun) []string {
		return []string{"apply", "--quiet", "--summary-export", r.files + ".json",
			"--var", "base_url=" + r.url,
			"--var", "echo_address=" + r.echoAddr,
			"--var", "isolate=" + strconv.FormatBool(isolate),
			"--var", "vus=" + strconv.Itoa(r.connections),
			"--var", "duration=" + r.duration.String(),
			filepath.Join(filepath.Dir(r.files), file)}
	}
}

// hloadTool is one hload run of a case's test file.
func hloadTool(name, file string, isolate bool, note string) *tool {
	return &tool{name: name, install: "go build ./cmd/hload", args: hloadArgs(file, isolate),
		figures: hloadFigures, note: note, counted: "http"}
}

func hloadFigures(_ context.Context, r toolRun, _ []byte) (figures, error) {
	data, err := os.ReadFile(r.files + ".json")
	if err != nil {
		return figures{}, fmt.Errorf("hload wrote no summary: %w", err)
	}
	return parseHloadSummary(data)
}

// vegetaFigures runs vegeta report on the attack's results, then removes
// them: tens of megabytes per run.
func vegetaFigures(ctx context.Context, r toolRun, _ []byte) (figures, error) {
	defer os.Remove(r.files + ".bin")
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, r.program, "report", r.files+".bin").CombinedOutput()
	if err != nil {
		return figures{}, fmt.Errorf("vegeta report: %v: %s", err, tail(out))
	}
	return parseVegeta(out)
}

// buildHload builds ./cmd/hload into dir, and the echo plugin into
// dir/plugins when a case needs it, and writes the tests' files beside.
func buildHload(ctx context.Context, dir string, echo bool) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	bin := filepath.Join(dir, "hload")
	builds := [][2]string{{bin, "github.com/hload/hload/cmd/hload"}}
	if echo {
		builds = append(builds, [2]string{filepath.Join(dir, "plugins", "hload-plugin-echo"), "github.com/hload/hload/examples/plugins/echo"})
	}
	for _, b := range builds {
		out, err := exec.CommandContext(ctx, "go", "build", "-o", b[0], b[1]).CombinedOutput()
		if err != nil {
			return "", fmt.Errorf("building %s (run the harness inside the hload repository): %v\n%s", b[1], err, tail(out))
		}
	}
	for name, text := range testFiles {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			return "", err
		}
	}
	return bin, nil
}

// measure runs one tool once, pinned to core 0 when pinning, and returns
// its figures and its cost.
func measure(ctx context.Context, p pinning, t *tool, r toolRun) (figures, usage, error) {
	// Every run is bounded: the tool's own duration, plus a minute for
	// starting, finishing the calls in flight and writing its figures.
	ctx, cancel := context.WithTimeout(ctx, r.duration+time.Minute)
	defer cancel()
	cmd := p.command(ctx, 0, r.program, t.args(r)...)
	cmd.Dir = filepath.Dir(r.files)
	if len(r.env) > 0 {
		cmd.Env = append(os.Environ(), r.env...)
	}
	if t.stdin != nil {
		cmd.Stdin = bytes.NewBufferString(t.stdin(r))
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return figures{}, usage{}, fmt.Errorf("still running %s after its %s run; stopped", time.Minute, r.duration)
	}
	if err != nil {
		return figures{}, usage{}, fmt.Errorf("%v: %s", err, tail(append(stderr.Bytes(), stdout.Bytes()...)))
	}
	u := usageOf(cmd.ProcessState)
	f, err := t.figures(ctx, r, stdout.Bytes())
	if err != nil {
		return figures{}, u, err
	}
	if f.requests == 0 {
		return f, u, errors.New("no request completed")
	}
	if f.errors > 0 {
		return f, u, requestsFailed{failed: f.errors, of: f.requests}
	}
	return f, u, nil
}

// requestsFailed is a run the tool finished and reported, some of whose
// requests failed: a failure of the run, except in the sweep, where a
// rate too high for the tool or the server is what it looks for.
type requestsFailed struct{ failed, of int64 }

func (e requestsFailed) Error() string {
	return fmt.Sprintf("%d of %d requests failed", e.failed, e.of)
}
