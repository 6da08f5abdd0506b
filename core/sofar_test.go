package core

import (
	"testing"
	"time"

	"github.com/hload/hload/metrics"
	"github.com/hload/hload/protocols"
)

// watchingSink is a snapshotSink that asks for the run so far.
type watchingSink struct{ snapshotSink }

func (*watchingSink) WatchesRunSoFar() {}

// TestRunSoFarWithinItsBudget: a watching sink gets the run so far in
// every snapshot, counted up to the snapshot's end, and built anew only
// while building it takes under its share of the run's time. With a share
// so small that any build is too dear, the snapshots after the first carry
// the first one (stale, but never going back) until the final one, which
// is always built anew; with a share no build can exceed, every snapshot
// gets its own. A sink that does not watch gets none.
func TestRunSoFarWithinItsBudget(t *testing.T) {
	for _, tc := range []struct {
		name   string
		budget float64
		fresh  []bool // per snapshot: built for it
	}{
		{"any build too dear", 1e-12, []bool{true, false, false, true}},
		{"every build within", 1e12, []bool{true, true, true, true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			live := &watchingSink{}
			r := reportRun(shopTest(), live)
			r.snapshots.soFarBudget = tc.budget
			home := r.agg.Series("shop", "home")
			for i := range tc.fresh {
				home.Record(protocols.Sample{Metric: protocols.MetricRequest, Value: time.Millisecond, Status: 200})
				r.snapshots.write(r, r.at(time.Duration(i+1)*time.Second), i == len(tc.fresh)-1)
			}
			var last *metrics.Summary
			for i, snap := range live.snaps {
				if snap.SoFar == nil {
					t.Fatalf("snapshot %d has no run so far", i)
				}
				fresh := snap.SoFar != last
				if fresh != tc.fresh[i] {
					t.Errorf("snapshot %d: built anew %v, want %v", i, fresh, tc.fresh[i])
				}
				if count := snap.SoFar.Scenarios["shop"].Requests["home"].Count; fresh && count != int64(i+1) {
					t.Errorf("snapshot %d: the run so far counts %d calls, want %d", i, count, i+1)
				}
				last = snap.SoFar
			}
		})
	}
	plain := &snapshotSink{}
	r := reportRun(shopTest(), plain)
	r.snapshots.write(r, r.at(time.Second), true)
	if plain.snaps[0].SoFar != nil {
		t.Errorf("a run no sink watches built the run so far")
	}
}
