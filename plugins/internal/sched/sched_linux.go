package sched

import (
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

const (
	policyBatch  = unix.SCHED_BATCH
	policyNormal = unix.SCHED_NORMAL
)

// setPolicy sets policy on every thread: a policy belongs to a thread, and
// the Go runtime has started several before main runs.
func setPolicy(policy int) error {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return err
	}
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		attr := unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: uint32(policy)}
		if err := unix.SchedSetAttr(tid, &attr, 0); err != nil && err != unix.ESRCH {
			return err // ESRCH: the thread exited meanwhile
		}
	}
	return nil
}

// policy returns the calling thread's policy, for tests.
func policy() (int, error) {
	attr, err := unix.SchedGetAttr(0, 0)
	if err != nil {
		return 0, err
	}
	return int(attr.Policy), nil
}
