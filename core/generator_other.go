//go:build !unix

package core

import (
	"runtime"
	"time"
)

// selfMeter measures nothing where hload cannot read its own CPU time
// (Windows): only late open-model starts are judged there.
type selfMeter struct{}

func newSelfMeter() processMeter { return selfMeter{} }

func (selfMeter) read() processTimes { return processTimes{} }

// availableCores is GOMAXPROCS, or fewer CPUs when the system has fewer.
func availableCores() int {
	return min(runtime.GOMAXPROCS(0), runtime.NumCPU())
}

// processCPU is unknown here.
func processCPU() (time.Duration, bool) { return 0, false }
