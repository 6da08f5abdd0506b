package core

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/hload/hload/config"
	"github.com/hload/hload/metrics"
)

// mergeable returns what `hload merge` needs to fold this run with the
// other segments of the same test: for the summary export, and the
// summary Run returns, not for the other sinks (see Exporter).
func (r *run) mergeable() (*metrics.Mergeable, error) {
	requests, flows, points, merged, err := r.agg.MergeData(r.info.Started)
	if err != nil {
		// Encoding into memory does not fail; if it ever did, the export
		// says why it cannot be merged rather than carrying half of it.
		return nil, err
	}
	return &metrics.Mergeable{
		Format:     metrics.MergeFormat,
		Test:       Fingerprint(r.test, r.opts.Variables),
		Segment:    r.opts.Segment.String(),
		Thresholds: ThresholdSpecs(r.test.Thresholds),
		IntervalS:  r.interval.Seconds(),
		Merged:     merged,
		Points:     points,
		Requests:   requests,
		Flows:      flows,
	}, nil
}

// Fingerprint identifies a test for `hload merge`: the sha256 of the
// contents of its files (in no particular order, so that a file's path or
// name does not matter) and of the --var values. Data files read at run
// time (a feeder's CSV) and the environment are not in it.
func Fingerprint(test *config.Test, vars map[string]string) string {
	var sums []string
	for _, f := range test.Files {
		if f == nil {
			continue
		}
		s := sha256.Sum256(f.Bytes)
		sums = append(sums, hex.EncodeToString(s[:]))
	}
	slices.Sort(sums)
	h := sha256.New()
	for _, s := range sums {
		fmt.Fprintf(h, "file %s\n", s)
	}
	for _, k := range slices.Sorted(maps.Keys(vars)) {
		fmt.Fprintf(h, "var %q=%q\n", k, vars[k])
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// ThresholdSpecs returns the test's thresholds as the mergeable section
// carries them.
func ThresholdSpecs(ths []*config.Threshold) []metrics.ThresholdSpec {
	out := make([]metrics.ThresholdSpec, 0, len(ths))
	for _, th := range ths {
		c := th.Condition
		out = append(out, metrics.ThresholdSpec{
			Metric: th.Metric, Scenario: th.Scenario, Request: th.Request, Flow: th.Flow,
			Condition: c.Text, Aggregation: c.Aggregation, Percentile: c.Percentile,
			Op: c.Op, Value: c.Value, IsDuration: c.IsDuration, Abort: th.Abort,
		})
	}
	return out
}

// threshold returns the threshold a spec describes.
func threshold(s metrics.ThresholdSpec) *config.Threshold {
	return &config.Threshold{
		Metric: s.Metric, Scenario: s.Scenario, Request: s.Request, Flow: s.Flow, Abort: s.Abort,
		Condition: config.Condition{Text: s.Condition, Aggregation: s.Aggregation, Percentile: s.Percentile,
			Op: s.Op, Value: s.Value, IsDuration: s.IsDuration},
	}
}

// JudgeMerged judges a summary that `hload merge` folded from the
// segments of a run, whose figures agg holds over elapsed (the merged
// run's length), the way a run judges its own: the same threshold
// evaluation, a threshold with nothing to judge does not pass, and a run
// whose every call failed does not pass unless a threshold on errors
// held. It sets Thresholds and Passed (false already stays false) and
// adds the warnings that come from the figures.
func JudgeMerged(sum *metrics.Summary, specs []metrics.ThresholdSpec, agg *metrics.Aggregator, elapsed time.Duration) {
	sum.Thresholds = nil
	passed := true
	var ths []*config.Threshold
	j := newJudging(agg, elapsed)
	for _, spec := range specs {
		th := threshold(spec)
		ths = append(ths, th)
		res := j.evaluate(th)
		sum.Thresholds = append(sum.Thresholds, res)
		passed = passed && res.Passed
	}
	sum.Warnings = append(sum.Warnings, unjudgedWarnings(&config.Test{Thresholds: ths}, agg, elapsed)...)
	sum.Warnings = append(sum.Warnings, requestWarnings(sum)...)
	sum.Warnings = append(sum.Warnings, generatorWarnings(sum)...)
	sum.Passed = sum.Passed && passed
	failIfEveryCallFailed(sum)
}
