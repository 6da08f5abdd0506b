package core

import "golang.org/x/sys/unix"

// pinToSecondCPU moves the calling process to CPU 1, where the bench
// harness pins its server, so that a benchmark run under taskset -c 0
// has its server on the other core. On a machine with one CPU it fails,
// and the server shares the benchmark's.
func pinToSecondCPU() {
	var set unix.CPUSet
	set.Set(1)
	_ = unix.SchedSetaffinity(0, &set)
}
