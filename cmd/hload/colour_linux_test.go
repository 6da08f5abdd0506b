package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// openPTY opens a pseudo-terminal: what is written to tty reads back
// from its master. It skips the test where the system has none.
func openPTY(t *testing.T) (master, tty *os.File) {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	fd := int(master.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		master.Close()
		t.Skipf("unlocking the pseudo-terminal: %v", err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		master.Close()
		t.Skipf("naming the pseudo-terminal: %v", err)
	}
	tty, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		master.Close()
		t.Skipf("opening the pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { tty.Close(); master.Close() })
	return master, tty
}

// TestColoursDecision: colour goes only to a terminal, and not when
// --no-color is given or NO_COLOR is set and not empty (no-color.org).
func TestColoursDecision(t *testing.T) {
	_, tty := openPTY(t)
	pipeR, pipeW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pipeR.Close()
	defer pipeW.Close()
	cases := []struct {
		name    string
		w       io.Writer
		noColor bool
		env     map[string]string
		want    bool
	}{
		{"terminal", tty, false, nil, true},
		{"terminal, NO_COLOR=1", tty, false, map[string]string{"NO_COLOR": "1"}, false},
		{"terminal, NO_COLOR=0 (any value counts)", tty, false, map[string]string{"NO_COLOR": "0"}, false},
		{"terminal, NO_COLOR empty", tty, false, map[string]string{"NO_COLOR": ""}, true},
		{"terminal, --no-color", tty, true, nil, false},
		{"pipe", pipeW, false, nil, false},
		{"buffer", &bytes.Buffer{}, false, nil, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			getenv := func(k string) string { return tc.env[k] }
			if got := colours(tc.w, tc.noColor, getenv); got != tc.want {
				t.Errorf("colours = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestNoColorOnTerminal runs hload on a pseudo-terminal, as a user at a
// terminal does: the verdict and the diagnostics are coloured, unless
// NO_COLOR is set, for apply, validate and merge alike.
func TestNoColorOnTerminal(t *testing.T) {
	srv, _ := okServer(t)
	dir := t.TempDir()
	writeFile(t, dir, "test.hcl", strings.Replace(smallTest, "sink \"csv\" {\n  path = \"out.csv\"\n}", "", 1))
	writeFile(t, dir, "broken.hcl", "scenario \"s\" {\n  executor = \"nope\"\n}\n")
	base := "--var=base_url=" + srv.URL
	r := hload(t, dir, "apply", "--quiet", "--var", "duration=200ms", "--summary-export", "a.json", "test.hcl", base)
	if r.code != 0 {
		t.Fatalf("apply: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	cases := []struct {
		name string
		args []string
		code int
		want string // printed in both cases
	}{
		{"apply", []string{"apply", "--quiet", "--var", "duration=200ms", "test.hcl", base}, 0, "PASS"},
		{"validate", []string{"validate", "broken.hcl"}, 2, "nothing was run"},
		{"merge", []string{"merge", "a.json"}, 0, "PASS"},
	}
	for _, tc := range cases {
		for _, noColor := range []string{"", "1"} {
			t.Run(fmt.Sprintf("%s NO_COLOR=%q", tc.name, noColor), func(t *testing.T) {
				code, out := onTerminal(t, dir, []string{"NO_COLOR=" + noColor}, tc.args...)
				if code != tc.code || !strings.Contains(out, tc.want) {
					t.Fatalf("exit %d, want %d with %q:\n%s", code, tc.code, tc.want, out)
				}
				coloured := strings.Contains(out, "\x1b[")
				if coloured != (noColor == "") {
					t.Errorf("coloured = %v with NO_COLOR=%q, want %v:\n%q", coloured, noColor, noColor == "", out)
				}
			})
		}
	}
}

// onTerminal runs hload in dir with its stdout and stderr on a
// pseudo-terminal, and returns its exit code and what it printed.
func onTerminal(t *testing.T, dir string, env []string, args ...string) (int, string) {
	t.Helper()
	master, tty := openPTY(t)
	cmd := exec.Command(hloadBin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = tty, tty
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tty.Close() // hload holds its own copy; reads end when it exits
	read := make(chan []byte)
	go func() {
		// Reading the master ends with EIO once no process holds the
		// terminal.
		out, _ := io.ReadAll(master)
		read <- out
	}()
	timer := time.AfterFunc(time.Minute, func() { cmd.Process.Kill() })
	defer timer.Stop()
	err := cmd.Wait()
	out := <-read
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	return cmd.ProcessState.ExitCode(), string(out)
}
