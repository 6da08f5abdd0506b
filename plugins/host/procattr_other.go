//go:build !linux

package host

import "syscall"

// procAttr is nil where the kernel cannot kill a child with its parent;
// Kill is then the only way a plugin ends.
func procAttr() *syscall.SysProcAttr { return nil }
