package core

import (
	"fmt"
	"strconv"
	"strings"
)

// Segment is the share i/n of a run that one machine executes when a test
// is sharded over n machines. The zero value is the whole run.
type Segment struct {
	Index int // 0-based
	Count int // 0 or 1 means the whole run
}

// ParseSegment parses "i/n" with 1 <= i <= n, as given to --segment.
func ParseSegment(s string) (Segment, error) {
	is, ns, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(strings.TrimSpace(is))
	n, err2 := strconv.Atoi(strings.TrimSpace(ns))
	if !ok || err1 != nil || err2 != nil || n < 1 || i < 1 || i > n {
		return Segment{}, fmt.Errorf("--segment %q: want i/n with 1 <= i <= n, such as 2/3", s)
	}
	return Segment{Index: i - 1, Count: n}, nil
}

// Scale returns this segment's share of v. The shares of all n segments add
// up to v exactly, so splitting a run never loses or adds a VU.
func (s Segment) Scale(v int) int {
	if s.Count <= 1 {
		return v
	}
	return v*(s.Index+1)/s.Count - v*s.Index/s.Count
}

// String renders the segment as the user wrote it.
func (s Segment) String() string {
	if s.Count <= 1 {
		return "1/1"
	}
	return fmt.Sprintf("%d/%d", s.Index+1, s.Count)
}
