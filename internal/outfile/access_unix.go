//go:build unix

package outfile

import "golang.org/x/sys/unix"

// writable asks the kernel whether this process may write path: it
// answers for permissions, ACLs and read-only mounts alike, root included.
func writable(path string) error {
	return unix.Access(path, unix.W_OK)
}
