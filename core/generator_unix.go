//go:build unix && !linux

package core

import (
	"runtime"
	"syscall"
	"time"
)

// selfMeter reads the process's CPU time from getrusage. The run-queue
// wait is not measured outside Linux.
type selfMeter struct{}

func newSelfMeter() processMeter { return selfMeter{} }

func (selfMeter) read() processTimes {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return processTimes{}
	}
	return processTimes{cpu: time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), cpuKnown: true}
}

// availableCores is GOMAXPROCS, or fewer CPUs when the system has fewer.
func availableCores() int {
	return min(runtime.GOMAXPROCS(0), runtime.NumCPU())
}
