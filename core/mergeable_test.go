package core

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/hashicorp/hcl/v2"

	"github.com/hload/hload/config"
)

// TestThresholdSpecsRoundTrip: a threshold carried in the mergeable
// section comes back as the test declared it, so that merge judges what
// the run judged.
func TestThresholdSpecsRoundTrip(t *testing.T) {
	ths := []*config.Threshold{
		{Metric: "latency", Scenario: "s", Request: "r", Abort: true,
			Condition: config.Condition{Text: "p99.9 < 250ms", Aggregation: "p99.9", Percentile: 99.9, Op: "<", Value: 250, IsDuration: true}},
		{Metric: "flow_failures", Scenario: "s", Flow: "order",
			Condition: config.Condition{Text: "rate <= 1%", Aggregation: "rate", Op: "<=", Value: 0.01}},
	}
	for i, spec := range ThresholdSpecs(ths) {
		if got := threshold(spec); !reflect.DeepEqual(got, ths[i]) {
			t.Errorf("threshold %d came back as\n %+v\nwant %+v", i, got, ths[i])
		}
	}
}

// TestFingerprint: a test's fingerprint depends on its files' contents
// and its --var values, not on the files' paths.
func TestFingerprint(t *testing.T) {
	test := func(files map[string]string) *config.Test {
		out := &config.Test{Files: map[string]*hcl.File{}}
		for name, content := range files {
			out.Files[name] = &hcl.File{Bytes: []byte(content)}
		}
		return out
	}
	base := Fingerprint(test(map[string]string{"a.hcl": "x", "b.hcl": "y"}), map[string]string{"n": "1"})
	if got := Fingerprint(test(map[string]string{"/config/a.hcl": "x", "/config/b.hcl": "y"}), map[string]string{"n": "1"}); got != base {
		t.Errorf("other paths: fingerprint %s, want %s", got, base)
	}
	// Many files, so that an order that depended on the map's would show.
	many := map[string]string{}
	for i := range 10 {
		many[fmt.Sprintf("/pod/%d.hcl", i)] = fmt.Sprintf("scenario %d", 9-i)
	}
	first := Fingerprint(test(many), nil)
	for range 5 {
		if got := Fingerprint(test(many), nil); got != first {
			t.Fatalf("the same ten files: fingerprint %s, then %s", first, got)
		}
	}
	differ := []struct {
		name  string
		files map[string]string
		vars  map[string]string
	}{
		{"a file changed", map[string]string{"a.hcl": "x ", "b.hcl": "y"}, map[string]string{"n": "1"}},
		{"a file less", map[string]string{"a.hcl": "x"}, map[string]string{"n": "1"}},
		{"another --var value", map[string]string{"a.hcl": "x", "b.hcl": "y"}, map[string]string{"n": "2"}},
		{"no --var", map[string]string{"a.hcl": "x", "b.hcl": "y"}, nil},
	}
	for _, c := range differ {
		if got := Fingerprint(test(c.files), c.vars); got == base {
			t.Errorf("%s: the fingerprint did not change", c.name)
		}
	}
}

// TestSegmentRows: the segments' shares of a unique feeder's rows are
// contiguous, never overlap, and add up to every row.
func TestSegmentRows(t *testing.T) {
	for _, rows := range []int{0, 1, 7, 200, 1001} {
		for _, n := range []int{1, 2, 3, 4, 7} {
			next := 0
			for i := range n {
				lo, hi := Segment{Index: i, Count: n}.rows(rows)
				if lo != next || hi < lo {
					t.Fatalf("%d rows, segment %d/%d: rows %d to %d, after %d", rows, i+1, n, lo, hi, next)
				}
				next = hi
			}
			if next != rows {
				t.Errorf("%d rows in %d segments: the shares end at %d", rows, n, next)
			}
		}
	}
}
