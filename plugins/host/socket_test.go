package host

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// left lists what is in dir, and the unix sockets anywhere under it.
func left(t *testing.T, dir string) (entries, socks []string) {
	t.Helper()
	err := filepath.WalkDir(dir, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if path == dir {
			return nil
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
	return entries, socks
}

// TestKillRemovesSocket: go-plugin's plugin side makes its unix socket in
// the temporary folder, and removes it only when it exits cleanly. A
// plugin killed (SIGKILL, as by the OOM killer or a user, or by hload for
// a hang) leaves it, and so does one whose start failed before hload knew
// its socket (it spoke another wire version). Kill removes it, in a folder
// of the plugin's own, and the folder. Counted in a temporary folder of
// the test's own, which is empty before and after.
func TestKillRemovesSocket(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		kill func(p *Plugin)
	}{
		{"asked to stop", nil, func(*Plugin) {}},
		{"killed with SIGKILL", nil, func(p *Plugin) { p.cmd.Process.Signal(syscall.SIGKILL); p.cmd.Process.Wait() }},
		{"a failed start", []string{"wrong-version"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			t.Setenv("TMPDIR", dir) // the plugin inherits it
			p, err := Launch(context.Background(), LaunchSpec{Name: "fake", Path: fakeBin, Args: tc.args})
			if tc.kill == nil {
				if err == nil {
					p.Kill()
					t.Fatal("the plugin started")
				}
			} else {
				if err != nil {
					t.Fatal(err)
				}
				if _, socks := left(t, dir); len(socks) != 1 || socks[0] != p.socket {
					t.Fatalf("sockets while it runs %q; the plugin's %q: want that one, under %s", socks, p.socket, dir)
				}
				tc.kill(p)
				p.Kill()
			}
			if entries, socks := left(t, dir); len(entries) != 0 || len(socks) != 0 {
				t.Errorf("left in the temporary folder: %q, sockets %q", entries, socks)
			}
		})
	}
}
