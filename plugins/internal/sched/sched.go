// Package sched sets the Linux scheduling policy of a plugin process.
//
// hload and a plugin process hand batches back and forth over a socket.
// When they share a core (a small machine, or a generator pinned to one),
// every batch one sends wakes the other, and under the default policy the
// woken process preempts the sender at once: the two ping-pong a few calls
// at a time, and the context switches (the Go runtime's sysmon thread
// joining in) cost more than the work. Under SCHED_BATCH a woken thread
// does not preempt; it runs when the running one blocks, and then takes a
// whole batch.
//
// Only the plugin process is switched: the host asks for it in the
// plugin's environment (Env), and the SDK's Serve applies it in the
// plugin. hload's own threads keep the policy they were started with, so
// starting a plugin changes nothing else of the process that starts it.
package sched

// Env is the environment variable by which the host asks a plugin process
// to run under SCHED_BATCH: set to Batch. A user who sets it to anything
// else in hload's environment turns the switch off.
const Env = "HLOAD_PLUGIN_SCHED"

// Batch is Env's value that asks for SCHED_BATCH.
const Batch = "batch"

// Yield puts every thread of the process under SCHED_BATCH (best effort:
// on other systems, or when it is refused, nothing changes). Threads
// created later inherit it. Only a plugin process calls it.
func Yield() error { return setPolicy(policyBatch) }

// YieldIfAsked calls Yield when lookup says the host asked for it (Env).
func YieldIfAsked(lookup func(string) (string, bool)) error {
	if v, _ := lookup(Env); v == Batch {
		return Yield()
	}
	return nil
}
