package sdk

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"testing"
)

// TestStartProfileLeavesAnotherAlone: in an isolated built-in, hload's
// main already profiles the process to PREFIX.PID; the SDK's profile must
// neither truncate that file nor stop that profile.
func TestStartProfileLeavesAnotherAlone(t *testing.T) {
	prefix := filepath.Join(t.TempDir(), "cpu")
	path := fmt.Sprintf("%s.%d", prefix, os.Getpid())
	if err := os.WriteFile(path, []byte("main's profile"), 0o644); err != nil {
		t.Fatal(err)
	}
	var other nopWriter
	if err := pprof.StartCPUProfile(&other); err != nil {
		t.Fatal(err)
	}
	stop := startProfile(func(string) (string, bool) { return prefix, true })
	stop()
	if err := pprof.StartCPUProfile(&other); err == nil {
		t.Error("the SDK stopped the profile the process had started")
	}
	pprof.StopCPUProfile()
	if b, _ := os.ReadFile(path); string(b) != "main's profile" {
		t.Errorf("the SDK's profile overwrote the file: %q", b)
	}

	// Alone, it writes its own.
	stop = startProfile(func(string) (string, bool) { return prefix, true })
	stop()
	if st, err := os.Stat(path); err != nil || st.Size() == 0 || st.Size() == int64(len("main's profile")) {
		t.Errorf("no profile of its own: %v, %v", st, err)
	}
}

type nopWriter struct{}

func (*nopWriter) Write(p []byte) (int, error) { return len(p), nil }
