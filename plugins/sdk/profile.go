package sdk

import (
	"fmt"
	"os"
	"runtime/pprof"
)

// cpuProfileEnv names the variable that makes hload, its isolated
// built-ins and its plugins each write a CPU profile, to PREFIX.PID. A
// plugin inherits hload's environment, so one variable profiles both sides
// of the wire.
const cpuProfileEnv = "HLOAD_CPUPROFILE"

// startProfile starts a CPU profile when lookup finds cpuProfileEnv, and
// returns what stops it (a no-op otherwise). A profile that cannot be
// written is said on stderr and the plugin runs without: profiling must
// never stop a run.
func startProfile(lookup func(string) (string, bool)) (stop func()) {
	prefix, ok := lookup(cpuProfileEnv)
	if !ok || prefix == "" {
		return func() {}
	}
	path := fmt.Sprintf("%s.%d", prefix, os.Getpid())
	f, err := os.Create(path)
	if err != nil {
		fmt.Fprintf(os.Stderr, "hload plugin: %s: %v\n", cpuProfileEnv, err)
		return func() {}
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		fmt.Fprintf(os.Stderr, "hload plugin: %s: %v\n", cpuProfileEnv, err)
		f.Close()
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}
}
