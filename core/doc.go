// Package core runs a test: one executor per scenario, the VUs, the
// weighted picker, checks, thresholds and the run's lifecycle. It evaluates
// HCL per iteration and hands protocols plain values.
package core
