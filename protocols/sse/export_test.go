package sse

import "testing"

// What the external benchmarks share with the package's.
const IdleServerEnv = idleServerEnv

// SettledRSS is settledRSS, for BenchmarkIdleStreamsRun.
func SettledRSS(b testing.TB) int64 { return settledRSS(b) }

// InFreshProcess is inFreshProcess, for BenchmarkIdleStreamsRun.
func InFreshProcess(b *testing.B, name string) bool { return inFreshProcess(b, name) }
