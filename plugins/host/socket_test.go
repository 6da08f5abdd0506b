package host

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// sockets lists the unix sockets in dir.
func sockets(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if e.Type()&os.ModeSocket != 0 {
			out = append(out, e.Name())
		}
	}
	return out
}

// TestKillRemovesSocket: go-plugin's plugin side makes its unix socket in
// the temporary folder, and removes it only when it exits cleanly. A
// plugin killed (SIGKILL, as by the OOM killer or a user, or by hload for
// a hang) leaves it; Kill removes it. Counted in a temporary folder of the
// test's own, before and after.
func TestKillRemovesSocket(t *testing.T) {
	for _, tc := range []struct {
		name string
		kill func(p *Plugin)
	}{
		{"asked to stop", func(*Plugin) {}},
		{"killed with SIGKILL", func(p *Plugin) { p.cmd.Process.Signal(syscall.SIGKILL); p.cmd.Process.Wait() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			t.Setenv("TMPDIR", dir) // the plugin inherits it
			before := sockets(t, dir)
			p, err := Launch(context.Background(), LaunchSpec{Name: "fake", Path: fakeBin})
			if err != nil {
				t.Fatal(err)
			}
			during := sockets(t, dir)
			if len(during) != len(before)+1 || filepath.Dir(p.socket) != dir {
				t.Fatalf("sockets before %q, while it runs %q; the plugin's %q: want one more, in %s", before, during, p.socket, dir)
			}
			tc.kill(p)
			p.Kill()
			if after := sockets(t, dir); len(after) != len(before) {
				t.Errorf("sockets before %q, after Kill %q", before, after)
			}
		})
	}
}
