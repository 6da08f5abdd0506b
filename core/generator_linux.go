package core

import (
	"bytes"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// selfMeter reads the process's CPU time from getrusage, and the run-queue
// wait of each of its threads from /proc/self/task/*/schedstat. It adds
// those of hload's child processes, its protocol plugins: a plugin
// process does part of the generator's work on the same cores, and a
// saturated plugin measures itself as much as hload would.
type selfMeter struct {
	// waited is each thread's run-queue wait at the last read, so that a
	// thread that exits takes only its last, unread part with it.
	waited map[string]time.Duration
	wait   time.Duration // the sum of every thread's growth so far
	// ran and childWaited are each child thread's CPU time and wait at
	// the last read, keyed "pid/tid"; childCPU and childWait the sums of
	// their growth.
	ran         map[string]time.Duration
	childWaited map[string]time.Duration
	childCPU    time.Duration
	childWait   time.Duration
	buf         []byte
	statBuf     []byte // for /proc/stat's first line
}

func newSelfMeter() processMeter {
	return &selfMeter{
		waited:      map[string]time.Duration{},
		ran:         map[string]time.Duration{},
		childWaited: map[string]time.Duration{},
		buf:         make([]byte, 128),
	}
}

func (m *selfMeter) read() processTimes {
	var t processTimes
	t.cpu, t.cpuKnown = processCPU()
	t.waitKnown = m.readWait()
	t.wait = m.wait
	t.steal, t.machine, t.stealKnown = m.machineSteal()
	if t.cpuKnown && t.waitKnown {
		m.readChildren()
		t.plugins = m.childCPU
		t.cpu += m.childCPU
		t.wait += m.childWait
	}
	return t
}

// readChildren adds the growth of every child thread's CPU time and
// run-queue wait since the last read. The children are listed by the
// kernel per thread of hload (/proc/self/task/*/children); a child's CPU
// is the sum of its threads' schedstat, in ns, rather than its
// /proc/PID/stat, which counts in ticks of 10 ms.
func (m *selfMeter) readChildren() {
	tids, err := taskIDs("/proc/self/task")
	if err != nil {
		return
	}
	ran := make(map[string]time.Duration, len(m.ran))
	waited := make(map[string]time.Duration, len(m.childWaited))
	for _, tid := range tids {
		b, err := os.ReadFile("/proc/self/task/" + tid + "/children")
		if err != nil {
			continue
		}
		for _, pid := range strings.Fields(string(b)) {
			threads, err := taskIDs("/proc/" + pid + "/task")
			if err != nil {
				continue // it exited meanwhile
			}
			for _, ctid := range threads {
				cpu, wait, ok := m.schedstat("/proc/" + pid + "/task/" + ctid + "/schedstat")
				if !ok {
					continue
				}
				key := pid + "/" + ctid
				ran[key], waited[key] = cpu, wait
				m.childCPU += max(0, cpu-m.ran[key])
				m.childWait += max(0, wait-m.childWaited[key])
			}
		}
	}
	m.ran, m.childWaited = ran, waited
}

// machineSteal reads the first line of /proc/stat, the sum over every
// CPU: the time the hypervisor stole from this guest, and the time of
// every kind. Both are in clock ticks, taken here as the usual 100 per
// second; only their ratio is used.
func (m *selfMeter) machineSteal() (steal, total time.Duration, ok bool) {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return 0, 0, false
	}
	defer f.Close()
	// The cpu line holds ten counters of up to 20 digits.
	if len(m.statBuf) == 0 {
		m.statBuf = make([]byte, 512)
	}
	n, err := f.Read(m.statBuf)
	if err != nil || n == 0 {
		return 0, 0, false
	}
	line, _, _ := bytes.Cut(m.statBuf[:n], []byte{'\n'})
	fields := bytes.Fields(line)
	// cpu user nice system idle iowait irq softirq steal guest guest_nice;
	// guest time is already in user and nice.
	if len(fields) < 9 || string(fields[0]) != "cpu" {
		return 0, 0, false
	}
	var sum int64
	for i, f := range fields[1:min(len(fields), 9)] {
		v, err := strconv.ParseInt(string(f), 10, 64)
		if err != nil {
			return 0, 0, false
		}
		sum += v
		if i == 7 {
			steal = time.Duration(v) * 10 * time.Millisecond
		}
	}
	return steal, time.Duration(sum) * 10 * time.Millisecond, true
}

// taskIDs lists the thread ids under dir, a /proc/PID/task.
func taskIDs(dir string) ([]string, error) {
	d, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return d.Readdirnames(-1)
}

// readWait adds each thread's run-queue wait since the last read. The
// second field of schedstat is the time the thread spent runnable but
// waiting for a CPU, in ns. /proc/self/schedstat alone would be the main
// thread's; the Go runtime runs goroutines on several.
func (m *selfMeter) readWait() bool {
	tids, err := taskIDs("/proc/self/task")
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
	_, wait, ok := m.schedstat("/proc/self/task/" + tid + "/schedstat")
	return wait, ok
}

// schedstat reads a thread's schedstat: the time it ran and the time it
// waited on a run queue, both in ns.
func (m *selfMeter) schedstat(path string) (ran, wait time.Duration, ok bool) {
	f, err := os.Open(path)
	if err != nil {
		return 0, 0, false
	}
	n, err := f.Read(m.buf)
	f.Close()
	if err != nil || n == 0 {
		return 0, 0, false
	}
	fields := bytes.Fields(m.buf[:n])
	if len(fields) < 2 {
		return 0, 0, false
	}
	r, err1 := strconv.ParseInt(string(fields[0]), 10, 64)
	w, err2 := strconv.ParseInt(string(fields[1]), 10, 64)
	if err1 != nil || err2 != nil {
		return 0, 0, false
	}
	return time.Duration(r), time.Duration(w), true
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
