package core

import (
	"testing"
	"time"

	"github.com/hload/hload/config"
)

func TestRampingVUsAt(t *testing.T) {
	e := config.RampingVUs{StartVUs: 0, Stages: []config.Stage{
		{Duration: 10 * time.Second, Target: 100},
		{Duration: 10 * time.Second, Target: 100},
		{Duration: 5 * time.Second, Target: 0},
	}}
	cases := []struct {
		at   time.Duration
		want int
	}{
		{0, 0}, {time.Second, 10}, {5 * time.Second, 50}, {10 * time.Second, 100},
		{15 * time.Second, 100}, {22500 * time.Millisecond, 50}, {25 * time.Second, 0},
	}
	for _, c := range cases {
		if got := rampingVUsAt(e, c.at); got != c.want {
			t.Errorf("at %v: got %d VUs, want %d", c.at, got, c.want)
		}
	}
}

func TestSegmentSharesAddUp(t *testing.T) {
	for _, v := range []int{0, 1, 7, 100, 1001} {
		for n := 1; n <= 5; n++ {
			sum := 0
			for i := range n {
				sum += Segment{Index: i, Count: n}.Scale(v)
			}
			if sum != v {
				t.Errorf("v=%d n=%d: shares add to %d", v, n, sum)
			}
		}
	}
	if _, err := ParseSegment("0/3"); err == nil {
		t.Error("0/3 accepted")
	}
	if s, err := ParseSegment("2/3"); err != nil || s.Index != 1 || s.Count != 3 {
		t.Errorf("2/3 parsed as %+v, %v", s, err)
	}
}

func TestVUStartOffset(t *testing.T) {
	// 10 VUs over 10 s, as a JMeter thread group: VU k starts at k seconds.
	for k := range 10 {
		if got, want := vuStartOffset(k, 10, 10*time.Second), time.Duration(k)*time.Second; got != want {
			t.Errorf("VU %d starts at %v, want %v", k, got, want)
		}
	}
}
