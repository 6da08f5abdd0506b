//go:build !linux

package sched

const (
	policyBatch  = 3
	policyNormal = 0
)

func setPolicy(int) error { return nil }

func policy() (int, error) { return policyNormal, nil }
