package core

import "sync/atomic"

// picker hands out request indexes in proportion to their weights. It
// precomputes one cycle of smooth weighted round-robin (as nginx does), so
// every run of sum(weights) consecutive picks holds the weights exactly and
// the requests are spread evenly within the cycle rather than in bursts. A
// shared atomic cursor lets many VUs pick without a lock.
type picker struct {
	cycle  []uint16
	cursor atomic.Uint64
}

// maxCycle bounds the precomputed cycle; config keeps weights whole and
// reduces them by their greatest common divisor first.
const maxCycle = 1 << 20

func newPicker(weights []int) *picker {
	g := 0
	for _, w := range weights {
		g = gcd(g, w)
	}
	total := 0
	reduced := make([]int, len(weights))
	for i, w := range weights {
		reduced[i] = w / g
		total += reduced[i]
	}
	if total > maxCycle {
		// Keep the proportions to within 1/maxCycle rather than build a
		// huge table; config's weights are small in practice.
		scale := float64(maxCycle) / float64(total)
		total = 0
		for i, w := range reduced {
			reduced[i] = max(1, int(float64(w)*scale))
			total += reduced[i]
		}
	}
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

// next returns the index of the next request to send.
func (p *picker) next() int {
	n := p.cursor.Add(1) - 1
	return int(p.cycle[n%uint64(len(p.cycle))])
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}
