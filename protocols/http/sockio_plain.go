//go:build darwin || (linux && race)

package http

import "syscall"

// sockRead and sockWrite are send's system calls through the syscall
// package: on darwin, whose system calls go through libc, and under the
// race detector, which they tell about the buffer. See sockio_raw.go.
func sockRead(fd int, p []byte) (int, syscall.Errno) { return errnoOf(syscall.Read(fd, p)) }

func sockWrite(fd int, p []byte) (int, syscall.Errno) { return errnoOf(syscall.Write(fd, p)) }

func errnoOf(n int, err error) (int, syscall.Errno) {
	if err != nil {
		e, _ := err.(syscall.Errno)
		return n, e
	}
	return n, 0
}
