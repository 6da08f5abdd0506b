package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hload/hload/plugins/host"
)

// outsideSteps marks the guide's block of commands that build a plugin
// in a module of its own.
const outsideSteps = "<!-- outside-the-repo steps:"

// TestPluginOutsideTheRepo builds a plugin the way docs/plugins.md tells an
// author to, in a module of its own outside the repository: it runs the
// guide's own lines, in a folder beside a link to this checkout named
// hload, on the echo example's main.go. Offline: no proxy and no checksum
// database, so every module must come from the cache that building hload
// filled (checked against hload's go.sum when it was downloaded). Then
// hload runs the binary it built, and the echo server counts the calls.
func TestPluginOutsideTheRepo(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a module of its own; runs in the full pass")
	}
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	steps := strings.Split(strings.TrimSpace(fenced(t, pluginGuide, outsideSteps, "sh")), "\n")
	src, err := os.ReadFile(filepath.Join(repo, "examples/plugins/echo/main.go"))
	if err != nil {
		t.Fatal(err)
	}
	// Neither scripts/test.sh's -mod=readonly, for hload's module, nor
	// -mod=mod, which would let go build mend a missing step: an author's
	// go command has neither.
	base := append(os.Environ(), "GOFLAGS=", "GOWORK=off", "GOTOOLCHAIN=local")
	// The module cache alone first: the modules there were checked against
	// hload's go.sum when its build downloaded them.
	mod, out, err := buildOutside(t, repo, src, steps, append(base, "GOPROXY=off", "GOSUMDB=off"))
	if err != nil && strings.Contains(out, "disabled by GOPROXY=off") {
		// A fresh machine's cache lacks the go.mod files of some older
		// versions in the dependency graph, which hload's own build never
		// reads: the steps then take the network, as they would for the
		// author, through the proxy and checksum database this machine is
		// set up with.
		t.Logf("the module cache alone is not enough (%v); again with this machine's GOPROXY and GOSUMDB", err)
		mod, out, err = buildOutside(t, repo, src, steps, base)
	}
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	bin := filepath.Join(mod, "hload-plugin-echo")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("the guide's steps built no %s: %v", filepath.Base(bin), err)
	}
	t.Cleanup(func() { killLeftovers(t, bin) })
	gomod, _ := os.ReadFile(filepath.Join(mod, "go.mod"))
	if !strings.Contains(string(gomod), "module example.com/myplugin") || !strings.Contains(string(gomod), "github.com/hload/hload => ../hload") {
		t.Errorf("go.mod after the guide's steps:\n%s\nwant module example.com/myplugin replacing hload with ../hload", gomod)
	}

	// hload finds the binary through HLOAD_PLUGIN_PATH, as the guide says.
	t.Setenv(host.PathEnv, mod)
	dir := t.TempDir()
	example, err := os.ReadFile(filepath.Join(repo, echoExample))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "test.hcl", string(example))
	r := hload(t, dir, "plugin", "list", "test.hcl")
	if r.code != exitOK || !strings.Contains(r.stdout, bin) {
		t.Fatalf("plugin list test.hcl: exit %d, want the binary %s\nstdout:\n%s\nstderr:\n%s", r.code, bin, r.stdout, r.stderr)
	}
	srv := startEchoServer(t)
	cmd, stdout, stderr := startHload(t, dir, "apply", "--quiet", "--summary-export", "summary.json", "test.hcl",
		"--var", "address="+srv.addr, "--var", "duration=1s")
	r = wait(t, cmd, stdout, stderr)
	noLeftovers(t, bin)
	if r.code != exitOK {
		t.Fatalf("apply: exit %d, want 0\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	srv.stop(t)
	req := readSummary(t, filepath.Join(dir, "summary.json")).Scenarios["ping"].Requests["hello"]
	conns, echoed := srv.conns.Load(), srv.bytes.Load()
	if req.Count == 0 || req.Count != conns || req.Errors != 0 || req.BytesSent != echoed || req.BytesReceived != echoed {
		t.Errorf("%d requests, %d errors, %d bytes sent and %d received; the server accepted %d connections and echoed %d bytes: want one connection per request, every byte counted",
			req.Count, req.Errors, req.BytesSent, req.BytesReceived, conns, echoed)
	}
	t.Logf("the plugin built outside the repository: %d requests in 1 s, the server saw %d connections and echoed %d bytes", req.Count, conns, echoed)
}

// buildOutside runs the guide's steps in a new folder, myplugin, beside a
// link to the repository named hload, on the given main.go, with env. It
// returns the folder, and on error the failing step's output.
func buildOutside(t *testing.T, repo string, mainGo []byte, steps []string, env []string) (mod, out string, err error) {
	t.Helper()
	root := t.TempDir()
	if err := os.Symlink(repo, filepath.Join(root, "hload")); err != nil {
		t.Fatal(err)
	}
	mod = filepath.Join(root, "myplugin")
	if err := os.Mkdir(mod, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, mod, "main.go", string(mainGo))
	var ran []string
	for _, line := range steps {
		args := strings.Fields(line)
		if len(args) == 0 || args[0] != "go" {
			t.Fatalf("the guide's step %q is not a go command; this test runs no shell", line)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		cmd := exec.CommandContext(ctx, "go", args[1:]...)
		cmd.Dir, cmd.Env = mod, env
		var buf bytes.Buffer
		cmd.Stdout, cmd.Stderr = &buf, &buf
		start := time.Now()
		err := cmd.Run()
		cancel()
		if err != nil {
			return mod, buf.String(), fmt.Errorf("the guide's step %q, after %q: %w", line, ran, err)
		}
		t.Logf("%s: %.1f s", line, time.Since(start).Seconds())
		ran = append(ran, line)
	}
	return mod, "", nil
}
