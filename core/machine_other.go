//go:build !unix

package core

// getrlimit reports no process limit where the system has none to read.
func getrlimit(rlimitResource) (uint64, bool) { return 0, false }
