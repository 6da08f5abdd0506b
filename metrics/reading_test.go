package metrics

import (
	"testing"
	"time"
)

// TestReadingSince checks that the difference of two readings holds
// exactly the calls recorded between them, wherever those calls sat (run
// totals, a flushed interval, the shards), and no call of another
// scenario.
func TestReadingSince(t *testing.T) {
	a := NewAggregator()
	s := a.Series("search", "home")
	other := a.Series("other", "home")
	for range 100 {
		s.Record(req(time.Second, 200, ErrNone, 0, 0)) // before the first reading
	}
	a.Flush(t0, t0.Add(time.Second))
	before := a.Read("search")
	// Ten fast calls, one failed, then a flush in the middle of the
	// stretch, then ten more: 20 calls of 10 ms and 30 ms.
	for i := range 10 {
		kind := ErrNone
		if i == 0 {
			kind = ErrTimeout
		}
		s.Record(req(10*time.Millisecond, 200, kind, 0, 0))
	}
	a.Flush(t0.Add(time.Second), t0.Add(2*time.Second))
	for range 10 {
		s.Record(req(30*time.Millisecond, 200, ErrNone, 0, 0))
		other.Record(req(time.Minute, 200, ErrTimeout, 0, 0))
	}
	f := a.Read("search").Since(before)
	if f.Count != 20 || f.Errors != 1 || f.ErrorRate != 0.05 {
		t.Errorf("count %d, errors %d, error rate %g; want 20, 1, 0.05", f.Count, f.Errors, f.ErrorRate)
	}
	// Half the calls took 10 ms, half 30 ms, none 1 s (before the stretch)
	// nor 1 min (another scenario).
	if !near(f.P50, 10, 0.01) || !near(f.P95, 30, 0.01) || !near(f.P99, 30, 0.01) {
		t.Errorf("p50 %g, p95 %g, p99 %g ms; want 10, 30, 30", f.P50, f.P95, f.P99)
	}
	if empty := a.Read("search").Since(a.Read("search")); empty != (StretchFigures{}) {
		t.Errorf("an empty stretch = %+v, want zero figures", empty)
	}
}
