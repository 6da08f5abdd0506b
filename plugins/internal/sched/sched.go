// Package sched sets the Linux scheduling policy of the whole process, for
// hload and the plugins it drives.
//
// hload and a plugin process hand batches back and forth over a socket.
// When they share a core (a small machine, or a generator pinned to one),
// every batch the plugin sends wakes hload, and under the default policy
// the woken hload preempts the plugin at once: the two ping-pong a few
// calls at a time, and the context switches cost more than the work. Under
// SCHED_BATCH hload does not preempt on wake-up; it runs when the plugin
// blocks, and then takes a whole batch. The plugin keeps the default
// policy, so it still wakes at once when a response arrives, and the
// latency it times is not delayed by hload.
package sched

// Yield puts every thread of the process under SCHED_BATCH (best effort:
// on other systems, or when it is refused, nothing changes). Threads created
// later inherit it, and so do child processes, which call Normal.
func Yield() error { return setPolicy(policyBatch) }

// Normal puts every thread of the process back under the default policy.
func Normal() error { return setPolicy(policyNormal) }
