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
// returns what stops it (a no-op otherwise). An isolated built-in is hload
// itself, whose main already profiles the process to the same file: the
// profiler is then in use, and the file is left alone. A profile that
// cannot be written is said on stderr and the plugin runs without:
// profiling must never stop a run.
func startProfile(lookup func(string) (string, bool)) (stop func()) {
	prefix, ok := lookup(cpuProfileEnv)
	if !ok || prefix == "" {
		return func() {}
	}
	f := &lazyFile{path: fmt.Sprintf("%s.%d", prefix, os.Getpid())}
	if err := pprof.StartCPUProfile(f); err != nil {
		return func() {} // already profiled by this process's main
	}
	return func() {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			fmt.Fprintf(os.Stderr, "hload plugin: %s: %v\n", cpuProfileEnv, err)
		}
	}
}

// lazyFile creates its file at the first write, so that a profile that
// cannot start does not truncate one another profiler is writing.
type lazyFile struct {
	path string
	f    *os.File
	err  error
}

func (l *lazyFile) Write(p []byte) (int, error) {
	if l.f == nil && l.err == nil {
		l.f, l.err = os.Create(l.path)
	}
	if l.err != nil {
		return 0, l.err
	}
	return l.f.Write(p)
}

// Close closes the file, and reports a file that could not be created.
func (l *lazyFile) Close() error {
	if l.f == nil {
		return l.err
	}
	return l.f.Close()
}
