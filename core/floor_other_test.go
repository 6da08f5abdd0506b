//go:build !linux

package core

// pinToSecondCPU does nothing where the affinity cannot be set.
func pinToSecondCPU() {}
