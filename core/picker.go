package core

import (
	"sync/atomic"

	"github.com/hload/hload/config"
)

// picker hands out indexes into a scenario's mix (its flows and bare
// requests) in proportion to their weights. It precomputes one cycle of
// smooth weighted round-robin (as nginx does), so every run of
// sum(weights) consecutive picks holds the weights exactly and the picks
// are spread evenly within the cycle rather than in bursts. A shared
// atomic cursor lets many VUs pick without a lock.
type picker struct {
	cycle  []uint16
	cursor atomic.Uint64
}

// newPicker builds the cycle for positive weights. config rejects a mix
// whose cycle is longer than config.MaxWeightCycle, so the table stays small.
func newPicker(weights []int) *picker {
	reduced, total := config.ReduceWeights(weights)
	cycle := make([]uint16, total)
	current := make([]int, len(reduced))
	for n := range cycle {
		best := 0
		for i, w := range reduced {
			current[i] += w
			if current[i] > current[best] {
				best = i
			}
		}
		current[best] -= total
		cycle[n] = uint16(best)
	}
	return &picker{cycle: cycle}
}

// next returns the index of the next flow to run.
func (p *picker) next() int {
	n := p.cursor.Add(1) - 1
	return int(p.cycle[n%uint64(len(p.cycle))])
}
