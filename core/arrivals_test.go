package core

import (
	"math"
	"testing"
	"time"

	"github.com/hload/hload/config"
)

func TestConstantArrivals(t *testing.T) {
	a := constantRate(config.ConstantArrivalRate{Rate: 2000, TimeUnit: time.Second, Duration: 10 * time.Second})
	if got := a.countBy(10 * time.Second); got != 20000 {
		t.Fatalf("countBy(10s) = %d, want 20000", got)
	}
	for _, n := range []int64{0, 1, 1999, 2000, 19999} {
		at, ok := a.at(n)
		want := time.Duration(n) * time.Second / 2000
		if !ok || at != want {
			t.Errorf("at(%d) = %v, %v; want %v", n, at, ok, want)
		}
	}
	if _, ok := a.at(20000); ok {
		t.Error("at(20000) is past the end but ok")
	}
	// A rate per minute.
	m := constantRate(config.ConstantArrivalRate{Rate: 90, TimeUnit: time.Minute, Duration: time.Minute})
	if got := m.countBy(time.Minute); got != 90 {
		t.Errorf("90/min for 1m: %d iterations", got)
	}
}

func TestRampingArrivals(t *testing.T) {
	a := rampingRate(config.RampingArrivalRate{
		StartRate: 0, TimeUnit: time.Second,
		Stages: []config.RateStage{
			{Duration: 10 * time.Second, Target: 100}, // 500 iterations
			{Duration: 5 * time.Second, Target: 100},  // 500
			{Duration: 10 * time.Second, Target: 20},  // 600
		},
	})
	if got := a.countBy(a.duration()); got != 1600 {
		t.Fatalf("total %d, want 1600", got)
	}
	if r := a.rateAt(5 * time.Second); math.Abs(r-50) > 1e-9 {
		t.Errorf("rate at 5s = %v, want 50", r)
	}
	if r := a.rateAt(20 * time.Second); math.Abs(r-60) > 1e-9 {
		t.Errorf("rate at 20s = %v, want 60", r)
	}
	// Every planned start is in order, and the count planned before it is
	// exactly its index.
	prev := time.Duration(-1)
	for n := int64(0); n < 1600; n++ {
		at, ok := a.at(n)
		if !ok {
			t.Fatalf("at(%d) not ok", n)
		}
		if at < prev {
			t.Fatalf("at(%d) = %v before at(%d) = %v", n, at, n-1, prev)
		}
		prev = at
		if got := a.countBy(at); got != n && got != n+1 {
			t.Fatalf("countBy(at(%d) = %v) = %d", n, at, got)
		}
	}
	if _, ok := a.at(1600); ok {
		t.Error("at(1600) past the end is ok")
	}
}
