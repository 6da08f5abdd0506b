package core

import "github.com/hload/hload/config"

// segmentCursor returns a scenario's cursor over a feeder for segment seg:
// a unique feeder's rows are split into n contiguous shares that add up
// to all of them, as Segment.Scale splits VUs, so that the segments of a
// run never use a row twice between them.
func segmentCursor(f *config.Feeder, seg Segment) *config.Cursor {
	lo, hi := seg.rows(f.Len())
	return f.NewSegmentCursor(lo, hi)
}

// rows returns this segment's share of n rows: rows lo to hi-1.
func (s Segment) rows(n int) (lo, hi int) {
	if s.Count <= 1 {
		return 0, n
	}
	return n * s.Index / s.Count, n * (s.Index + 1) / s.Count
}
