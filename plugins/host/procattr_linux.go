package host

import "syscall"

// procAttr makes the kernel kill a plugin when hload dies without a chance
// to Kill it (SIGKILL, a crash, a signal with no handler in validate), so
// no plugin process is ever left behind. Go does not end the OS threads
// that start processes, so the parent-thread caveat of Pdeathsig does not
// bite.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
