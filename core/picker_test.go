package core

import (
	"sync"
	"testing"
)

func TestPickerHoldsWeightsExactly(t *testing.T) {
	cases := []struct {
		name    string
		weights []int
	}{
		{"users mix", []int{60, 5, 20, 10, 5}},
		{"one", []int{7}},
		{"coprime", []int{3, 7, 11}},
		{"reducible", []int{200, 400}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := newPicker(tc.weights)
			total := 0
			for _, w := range tc.weights {
				total += w
			}
			const cycles = 37
			counts := make([]int, len(tc.weights))
			for range total * cycles {
				counts[p.next()]++
			}
			for i, w := range tc.weights {
				if counts[i] != w*cycles {
					t.Errorf("request %d: got %d picks, want %d", i, counts[i], w*cycles)
				}
			}
		})
	}
}

func TestPickerSpreadsWithinCycle(t *testing.T) {
	// With 60/5/20/10/5, a window of 20 picks must hold about 12 of the
	// first request: smooth round-robin never sends long bursts.
	p := newPicker([]int{60, 5, 20, 10, 5})
	for w := range 5 {
		first := 0
		for range 20 {
			if p.next() == 0 {
				first++
			}
		}
		if first < 10 || first > 14 {
			t.Errorf("window %d: %d of 20 picks were the 60%% request", w, first)
		}
	}
}

func TestPickerConcurrent(t *testing.T) {
	p := newPicker([]int{3, 1})
	var mu sync.Mutex
	counts := [2]int{}
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			local := [2]int{}
			for range 1000 {
				local[p.next()]++
			}
			mu.Lock()
			counts[0] += local[0]
			counts[1] += local[1]
			mu.Unlock()
		}()
	}
	wg.Wait()
	if counts[0] != 6000 || counts[1] != 2000 {
		t.Fatalf("got %v, want [6000 2000]", counts)
	}
}
