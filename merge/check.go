package merge

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/hload/hload/core"
	"github.com/hload/hload/metrics"
)

// segmentOf is an input's segment, parsed.
type segmentOf struct {
	in  *Input
	seg core.Segment
}

// Check returns an error, naming the inputs concerned, unless the inputs
// are the segments of one run: each with the mergeable section, all of
// the same test, of one split into n segments, each segment once and
// none missing.
func Check(inputs []Input) error {
	if len(inputs) == 0 {
		return errors.New("no result to merge")
	}
	var segs []segmentOf
	for i := range inputs {
		in := &inputs[i]
		m := in.Summary.Mergeable
		switch {
		case m == nil:
			return fmt.Errorf("%s: a summary export without the mergeable section (an export of an older hload, or of hload merge): it cannot be merged", in.Name)
		case m.Format != metrics.MergeFormat:
			return fmt.Errorf("%s: mergeable section of format %d; this hload merges format %d", in.Name, m.Format, metrics.MergeFormat)
		}
		seg, err := core.ParseSegment(m.Segment)
		if err != nil {
			return fmt.Errorf("%s: segment %q is not i/n", in.Name, m.Segment)
		}
		segs = append(segs, segmentOf{in, seg})
	}
	if err := sameTest(inputs); err != nil {
		return err
	}
	return coverage(segs)
}

// sameTest refuses inputs of different tests, naming the files of each.
func sameTest(inputs []Input) error {
	var tests []string
	byTest := map[string][]string{}
	for _, in := range inputs {
		t := in.Summary.Mergeable.Test
		if byTest[t] == nil {
			tests = append(tests, t)
		}
		byTest[t] = append(byTest[t], in.Name)
	}
	if len(tests) == 1 {
		return nil
	}
	var parts []string
	for _, t := range tests {
		parts = append(parts, fmt.Sprintf("%s (test %s)", joinAnd(byTest[t]), short(t)))
	}
	return fmt.Errorf("results of %d different tests: %s; merge the results of one test (its files and --var values must be the same)",
		len(tests), strings.Join(parts, "; "))
}

func short(fingerprint string) string {
	if len(fingerprint) > 19 {
		return fingerprint[:19] + "..."
	}
	return fingerprint
}

// coverage refuses segments that overlap, repeat, come from splits into
// different numbers of segments, or leave a segment out.
func coverage(segs []segmentOf) error {
	for i, a := range segs {
		for _, b := range segs[i+1:] {
			switch {
			case a.seg == b.seg:
				return fmt.Errorf("segment %s given twice: %s and %s", a.seg, a.in.Name, b.in.Name)
			case overlap(a.seg, b.seg):
				return fmt.Errorf("overlapping segments: %s (%s) and %s (%s) ran part of the same load", a.seg, a.in.Name, b.seg, b.in.Name)
			}
		}
	}
	n := segs[0].seg.Count
	for _, s := range segs[1:] {
		if c := s.seg.Count; c != n {
			return fmt.Errorf("segments of splits into %d and %d: %s (%s) and %s (%s); merge the segments of one split",
				max(n, 1), max(c, 1), segs[0].seg, segs[0].in.Name, s.seg, s.in.Name)
		}
	}
	if n <= 1 || len(segs) == n {
		return nil
	}
	given := map[int]bool{}
	for _, s := range segs {
		given[s.seg.Index] = true
	}
	slices.SortFunc(segs, func(a, b segmentOf) int { return a.seg.Index - b.seg.Index })
	var have, names, missing []string
	for _, s := range segs {
		have = append(have, s.seg.String())
		names = append(names, s.in.Name)
	}
	for i := range n {
		if !given[i] {
			missing = append(missing, core.Segment{Index: i, Count: n}.String())
		}
	}
	verb := "is"
	if len(missing) > 1 {
		verb = "are"
	}
	return fmt.Errorf("segments %s given (%s); %s %s missing", joinAnd(have), strings.Join(names, ", "), joinAnd(missing), verb)
}

// overlap reports whether two segments of splits into different numbers
// share part of the load: [i/n, (i+1)/n) against [j/m, (j+1)/m).
func overlap(a, b core.Segment) bool {
	an, bn := max(a.Count, 1), max(b.Count, 1)
	return a.Index*bn < (b.Index+1)*an && b.Index*an < (a.Index+1)*bn
}

// joinAnd renders a list as "a, b and c".
func joinAnd(items []string) string {
	switch len(items) {
	case 0:
		return ""
	case 1:
		return items[0]
	}
	return strings.Join(items[:len(items)-1], ", ") + " and " + items[len(items)-1]
}
