// Package sched sets the Linux scheduling policy of the whole process, for
// hload when it drives plugins, and so for the plugins it starts.
//
// hload and a plugin process hand batches back and forth over a socket.
// When they share a core (a small machine, or a generator pinned to one),
// every batch one sends wakes the other, and under the default policy the
// woken process preempts the sender at once: the two ping-pong a few calls
// at a time, and the context switches (the Go runtime's sysmon thread
// joining in) cost more than the work. Under SCHED_BATCH a woken thread
// does not preempt; it runs when the running one blocks, and then takes a
// whole batch. On two cores pinned as PERFORMANCE.md measures, this raised
// isolated HTTP by about a tenth against the default policy on one side or
// both, with no rise in the latency the plugin timed.
package sched

// Yield puts every thread of the process under SCHED_BATCH (best effort:
// on other systems, or when it is refused, nothing changes). Threads
// created later inherit it, and so do child processes such as plugins.
func Yield() error { return setPolicy(policyBatch) }
