package core

import (
	"bytes"
	"os"
	"runtime"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// selfMeter reads the process's CPU time from getrusage, and the run-queue
// wait of each of its threads from /proc/self/task/*/schedstat.
type selfMeter struct {
	// waited is each thread's run-queue wait at the last read, so that a
	// thread that exits takes only its last, unread part with it.
	waited map[string]time.Duration
	wait   time.Duration // the sum of every thread's growth so far
	buf    []byte
}

func newSelfMeter() processMeter {
	return &selfMeter{waited: map[string]time.Duration{}, buf: make([]byte, 128)}
}

func (m *selfMeter) read() processTimes {
	var t processTimes
	t.cpu, t.cpuKnown = rusageCPU()
	t.waitKnown = m.readWait()
	t.wait = m.wait
	return t
}

// rusageCPU is the user and system time of every thread of the process,
// the exited ones included.
func rusageCPU() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}

// readWait adds each thread's run-queue wait since the last read. The
// second field of schedstat is the time the thread spent runnable but
// waiting for a CPU, in ns. /proc/self/schedstat alone would be the main
// thread's; the Go runtime runs goroutines on several.
func (m *selfMeter) readWait() bool {
	dir, err := os.Open("/proc/self/task")
	if err != nil {
		return false
	}
	tids, err := dir.Readdirnames(-1)
	dir.Close()
	if err != nil || len(tids) == 0 {
		return false
	}
	seen := 0
	now := make(map[string]time.Duration, len(tids))
	for _, tid := range tids {
		w, ok := m.threadWait(tid)
		if !ok {
			continue // it exited meanwhile
		}
		seen++
		now[tid] = w
		m.wait += max(0, w-m.waited[tid])
	}
	m.waited = now
	return seen > 0
}

func (m *selfMeter) threadWait(tid string) (time.Duration, bool) {
	f, err := os.Open("/proc/self/task/" + tid + "/schedstat")
	if err != nil {
		return 0, false
	}
	n, err := f.Read(m.buf)
	f.Close()
	if err != nil || n == 0 {
		return 0, false
	}
	fields := bytes.Fields(m.buf[:n])
	if len(fields) < 2 {
		return 0, false
	}
	ns, err := strconv.ParseInt(string(fields[1]), 10, 64)
	if err != nil {
		return 0, false
	}
	return time.Duration(ns), true
}

// availableCores is the CPU cores the process may use: GOMAXPROCS, or
// fewer when its affinity mask (taskset, a container's cpuset) allows
// fewer.
func availableCores() int {
	n := runtime.GOMAXPROCS(0)
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err == nil {
		if c := set.Count(); c > 0 {
			n = min(n, c)
		}
	}
	return n
}
