//go:build unix && !linux

package core

import (
	"runtime"
)

// selfMeter reads the process's CPU time from getrusage. The run-queue
// wait is not measured outside Linux.
type selfMeter struct{}

func newSelfMeter() processMeter { return selfMeter{} }

func (selfMeter) read() processTimes {
	cpu, ok := processCPU()
	return processTimes{cpu: cpu, cpuKnown: ok}
}

// availableCores is GOMAXPROCS, or fewer CPUs when the system has fewer.
func availableCores() int {
	return min(runtime.GOMAXPROCS(0), runtime.NumCPU())
}
