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

// hloadTest is the test hload runs: constant VUs against the server, each
// on its own keep-alive connection, in-process or isolated.
const hloadTest = `variable "base_url" {}
variable "isolate" {}
variable "vus" {}
variable "duration" {}

target "server" {
  protocol = "http"
  base_url = var.base_url
  isolate  = var.isolate
}

scenario "s" {
  executor = "constant-vus"
  vus      = var.vus
  duration = var.duration

  request "r" {
    path = "/"
  }
}
`

// hloadFlowTest is hloadTest with each iteration a flow of three constant
// steps instead of one request: the same calls, so its requests per
// CPU-second against hload's shows what running a journey costs.
const hloadFlowTest = `variable "base_url" {}
variable "isolate" {}
variable "vus" {}
variable "duration" {}

target "server" {
  protocol = "http"
  base_url = var.base_url
  isolate  = var.isolate
}

scenario "s" {
  executor = "constant-vus"
  vus      = var.vus
  duration = var.duration

  flow "f" {
    request "a" {
      path = "/"
    }
    request "b" {
      path = "/"
    }
    request "c" {
      path = "/"
    }
  }
}
`

// toolRun is what one run of a tool needs.
type toolRun struct {
	url         string
	duration    time.Duration
	connections int
	program     string // the tool's binary
	files       string // a path prefix for the run's own files
}

// A tool is one load generator: how to run it and how to read its figures.
type tool struct {
	name    string
	program string // looked up on PATH; "" for hload, which the harness builds
	install string // how to get it when it is missing
	args    func(r toolRun) []string
	stdin   func(r toolRun) string // what the tool reads on stdin, if anything
	// figures reads the run's figures from the tool's stdout (and from
	// the files it wrote under r.files).
	figures func(ctx context.Context, r toolRun, stdout []byte) (figures, error)
	// note says what the harness measures of the tool, when that is not
	// simply the one process.
	note string
}

// tools are the tools the harness runs, in the order each round runs them.
func tools() []*tool {
	return []*tool{
		{
			name:    "hload",
			install: "go build ./cmd/hload",
			args:    hloadArgs(false, "test.hcl"),
			figures: hloadFigures,
		},
		{
			name:    "hload-flow",
			install: "go build ./cmd/hload",
			args:    hloadArgs(false, "flow.hcl"),
			figures: hloadFigures,
			note:    "each iteration a flow of 3 constant steps: the same requests as hload's",
		},
		{
			name:    "hload-isolated",
			install: "go build ./cmd/hload",
			args:    hloadArgs(true, "test.hcl"),
			figures: hloadFigures,
			note:    "isolate = true on the target: CPU is hload's and its plugin process's",
		},
		{
			name:    "wrk",
			program: "wrk",
			install: "apt-get install -y wrk (or scripts/peers.sh)",
			args: func(r toolRun) []string {
				return []string{"-t1", "-c" + strconv.Itoa(r.connections), fmt.Sprintf("-d%ds", int(r.duration.Seconds())), r.url}
			},
			figures: func(_ context.Context, _ toolRun, out []byte) (figures, error) { return parseWrk(out) },
		},
		{
			name:    "hey",
			program: "hey",
			install: "apt-get install -y hey (or scripts/peers.sh)",
			args: func(r toolRun) []string {
				return []string{"-z", r.duration.String(), "-c", strconv.Itoa(r.connections), r.url}
			},
			figures: func(_ context.Context, _ toolRun, out []byte) (figures, error) { return parseHey(out) },
		},
		{
			name:    "vegeta",
			program: "vegeta",
			install: "GOBIN=~/.cache/hload/bin go install github.com/tsenart/vegeta/v12@v12.13.0 (or scripts/peers.sh)",
			args: func(r toolRun) []string {
				n := strconv.Itoa(r.connections)
				return []string{"attack", "-rate=0", "-max-workers=" + n, "-workers=" + n,
					"-duration=" + r.duration.String(), "-output=" + r.files + ".bin"}
			},
			stdin:   func(r toolRun) string { return "GET " + r.url + "\n" },
			figures: vegetaFigures,
			note:    "the attack alone is measured; vegeta report reads its results afterwards",
		},
	}
}

func hloadArgs(isolate bool, file string) func(r toolRun) []string {
	return func(r toolRun) []string {
		return []string{"apply", "--quiet", "--summary-export", r.files + ".json",
			"--var", "base_url=" + r.url,
			"--var", "isolate=" + strconv.FormatBool(isolate),
			"--var", "vus=" + strconv.Itoa(r.connections),
			"--var", "duration=" + r.duration.String(),
			filepath.Join(filepath.Dir(r.files), file)}
	}
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

// buildHload builds ./cmd/hload into dir and writes the test beside it.
func buildHload(ctx context.Context, dir string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	bin := filepath.Join(dir, "hload")
	out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/hload/hload/cmd/hload").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("building hload (run the harness inside the hload repository): %v\n%s", err, tail(out))
	}
	for name, text := range map[string]string{"test.hcl": hloadTest, "flow.hcl": hloadFlowTest} {
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
		return f, u, fmt.Errorf("%d of %d requests failed", f.errors, f.requests)
	}
	return f, u, nil
}
