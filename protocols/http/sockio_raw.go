//go:build linux && !race

package http

import (
	"syscall"
	"unsafe"
)

// sockRead and sockWrite are send's system calls on its non-blocking
// socket. They never sleep in the kernel (a socket with nothing to read or
// no room returns EAGAIN), so they go in as raw system calls: syscall.Read
// and syscall.Write tell the Go scheduler that the goroutine may block,
// which costs as much again in user space as the call's own entry, and a
// loopback write that the scheduler's monitor catches in the kernel (it
// runs the receiver's TCP stack too) hands the process's one P to a new
// thread for nothing. A write copies at most the socket's free send
// buffer and returns. A build with the race detector uses syscall.Read and
// syscall.Write, which tell it about the buffer (sockio_plain.go).
func sockRead(fd int, p []byte) (int, syscall.Errno) {
	var ptr unsafe.Pointer
	if len(p) > 0 {
		ptr = unsafe.Pointer(&p[0])
	}
	n, _, e := syscall.RawSyscall(syscall.SYS_READ, uintptr(fd), uintptr(ptr), uintptr(len(p)))
	if e != 0 {
		return -1, e
	}
	return int(n), 0
}

func sockWrite(fd int, p []byte) (int, syscall.Errno) {
	var ptr unsafe.Pointer
	if len(p) > 0 {
		ptr = unsafe.Pointer(&p[0])
	}
	n, _, e := syscall.RawSyscall(syscall.SYS_WRITE, uintptr(fd), uintptr(ptr), uintptr(len(p)))
	if e != 0 {
		return -1, e
	}
	return int(n), 0
}
