package protocoltest

import (
	"bufio"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// StartChild starts the test binary again, with env=1 in its environment
// and no test to run, for a server that must not share the benchmark's
// process (its CPU and memory would be counted as hload's). The package's
// TestMain serves when it sees env, prints its address on its first line
// and exits when its standard input closes, which happens when the test
// ends. StartChild returns that address.
func StartChild(tb testing.TB, env string) string {
	tb.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), env+"=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		stdin.Close()
		cmd.Wait()
	})
	addr, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		tb.Fatalf("the server started with %s=1 printed no address: %v", env, err)
	}
	return strings.TrimSpace(addr)
}
