package main

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hload/hload/plugins/host"
)

// frozenTest is the echo plugin's test: 4 VUs call the plugin for
// duration; with other set, a second scenario calls an HTTP target
// (base_url) for 5 s, so the run goes on after the plugin's last call.
func frozenTest(bin, sum, address, duration, baseURL string) string {
	src := fmt.Sprintf(`
plugin "echo" {
  source = %q
  sha256 = %q
}
target "echo" {
  protocol = "echo"
  address  = %q
  timeout  = "1s"
}
scenario "ping" {
  executor = "constant-vus"
  vus      = 4
  duration = %q
  request "hello" {
    target  = "echo"
    payload = "hello from VU ${vu.id}"
  }
}
`, bin, sum, address, duration)
	if baseURL != "" {
		src += fmt.Sprintf(`
target "web" {
  base_url = %q
}
scenario "other" {
  executor = "constant-vus"
  vus      = 1
  duration = "5s"
  request "home" {
    target = "web"
    path   = "/"
  }
}
`, baseURL)
	}
	return src
}

// TestFaultFrozenPlugin (must-show 2): the echo plugin is stopped (SIGSTOP) at
// some point of the run, and never answers again. Wherever that falls,
// during the load, near its end (the calls in flight then end in the
// graceful stop), or after the plugin's last call (the run goes on
// without it, and its Close gets no answer), hload fails the run, names
// the plugin, exits 1 in bounded time, and leaves no process behind.
func TestFaultFrozenPlugin(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end runs that wait for the hang timeout; scripts/test.sh runs them without -short")
	}
	requirePlugins(t)
	for _, tc := range []struct {
		name     string
		duration string
		other    bool          // a second scenario runs on after the plugin's last call
		freeze   time.Duration // after the plugin process appeared
		want     string
	}{
		// Found by the hang watchdog during the load, which ends early.
		{"at 2 s of 15 s", "15s", false, 2 * time.Second, "stopped responding: no message for 10s with 4 calls in flight"},
		// Found by the watchdog after the load's end, while the calls in
		// flight wait in the graceful stop.
		{"at 8 s of 15 s", "15s", false, 8 * time.Second, "stopped responding: no message for 10s with 4 calls in flight"},
		// Found when the run closes the plugin's client at its end.
		{"after the last call", "2s", true, 3500 * time.Millisecond, "stopped responding: its client did not close within 5s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			bin, sum := pluginCopy(t, "echo")
			echo := startEchoServer(t)
			web, served := okServer(t)
			baseURL := ""
			if tc.other {
				baseURL = web.URL
			}
			dir := t.TempDir()
			writeFile(t, dir, "test.hcl", frozenTest(bin, sum, echo.addr, tc.duration, baseURL))
			cmd, stdout, stderr := startHload(t, dir, "apply", "--quiet", "test.hcl", "--summary-export", "summary.json")
			pid := waitForProcess(t, bin, 10*time.Second)
			t.Cleanup(func() {
				// Continued, so that nothing is left stopped, then killed
				// if hload left it.
				syscall.Kill(pid, syscall.SIGCONT)
				killLeftovers(t, bin)
			})
			started := time.Now()
			time.Sleep(tc.freeze)
			if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
				t.Fatal(err)
			}
			frozen := time.Now()
			r := wait(t, cmd, stdout, stderr)
			took := time.Since(frozen)
			checkFailure(t, r, bin, `plugin "echo" `+tc.want)
			s := readSummary(t, filepath.Join(dir, "summary.json"))
			if s.Passed || !strings.Contains(s.Failed, `plugin "echo" `+tc.want) {
				t.Errorf("summary: passed %v, failed %q", s.Passed, s.Failed)
			}
			// Bounded: the hang timeout, then the client's close and the
			// kill, each bounded in their turn.
			if bound := 2 * host.DefaultHangTimeout; took > bound {
				t.Errorf("hload exited %v after the plugin froze; want within %v", took, bound)
			}
			req := s.Scenarios["ping"].Requests["hello"]
			switch tc.name {
			case "at 2 s of 15 s":
				if s.DurationS >= 15 {
					t.Errorf("the run lasted %.1fs: the hang did not end it early", s.DurationS)
				}
			case "after the last call":
				// Every call had its answer: the plugin froze after the last.
				if req.Errors != 0 || req.Count == 0 || served.Load() == 0 {
					t.Errorf("%d calls to the plugin, %d failed; %d to the web target", req.Count, req.Errors, served.Load())
				}
			}
			t.Logf("froze pid %d %v after it started; hload exited %d %v later; run %.1fs, %d calls (%d failed %v)\nstderr:\n%s",
				pid, frozen.Sub(started).Round(time.Millisecond), r.code, took.Round(time.Millisecond), s.DurationS,
				req.Count, req.Errors, req.ErrorsByKind, strings.TrimSpace(r.stderr))
		})
	}
}

// socketsIn lists the unix sockets anywhere under dir, and what dir
// holds.
func socketsIn(t *testing.T, dir string) (socks, entries []string) {
	t.Helper()
	err := filepath.WalkDir(dir, func(path string, e fs.DirEntry, err error) error {
		if err != nil || path == dir {
			return err
		}
		if filepath.Dir(path) == dir {
			entries = append(entries, e.Name())
		}
		if e.Type()&os.ModeSocket != 0 {
			socks = append(socks, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return socks, entries
}

// TestFaultKilledPluginLeavesNoSocket: the plugin makes its unix socket in a
// folder hload makes for it in the temporary folder (TMPDIR, a folder of
// the test's own here), and a plugin killed mid-run (SIGKILL) cannot
// remove it; hload does, and the folder. Counted before the run, while it
// runs, and after.
func TestFaultKilledPluginLeavesNoSocket(t *testing.T) {
	requirePlugins(t)
	tmp := t.TempDir()
	bin, sum := pluginCopy(t, "echo")
	echo := startEchoServer(t)
	dir := t.TempDir()
	writeFile(t, dir, "test.hcl", frozenTest(bin, sum, echo.addr, "30s", ""))
	before, beforeEntries := socketsIn(t, tmp)
	cmd := exec.Command(hloadBin, "apply", "--quiet", "test.hcl")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	timer := time.AfterFunc(pluginLimit, func() { cmd.Process.Kill() })
	defer timer.Stop()
	pid := waitForProcess(t, bin, 10*time.Second)
	time.Sleep(time.Second)
	during, _ := socketsIn(t, tmp)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	r := wait(t, cmd, &stdout, &stderr)
	checkFailure(t, r, bin, `plugin "echo" exited`)
	after, afterEntries := socketsIn(t, tmp)
	if len(during) != len(before)+1 || len(after) != len(before) || len(afterEntries) != len(beforeEntries) {
		t.Errorf("sockets in TMPDIR: %q before the run, %q during it, %q after; in it %q before, %q after", before, during, after, beforeEntries, afterEntries)
	}
	t.Logf("sockets in TMPDIR: %d before, %d during, %d after", len(before), len(during), len(after))
}
