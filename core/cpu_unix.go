//go:build unix

package core

import (
	"syscall"
	"time"
)

// processCPU is the user and system time of every thread of the process,
// the exited ones included.
func processCPU() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
