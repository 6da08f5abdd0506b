//go:build unix

package core

import "golang.org/x/sys/unix"

// getrlimit returns the current (soft) limit of r, or false when it is
// unlimited or cannot be read.
func getrlimit(r rlimitResource) (uint64, bool) {
	resource := map[rlimitResource]int{rlimitAS: unix.RLIMIT_AS, rlimitData: unix.RLIMIT_DATA, rlimitNofile: unix.RLIMIT_NOFILE}[r]
	var l unix.Rlimit
	if err := unix.Getrlimit(resource, &l); err != nil || l.Cur == unix.RLIM_INFINITY || l.Cur >= noLimit {
		return 0, false
	}
	return uint64(l.Cur), true
}
