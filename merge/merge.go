package merge

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/hload/hload/core"
	"github.com/hload/hload/metrics"
)

// Merge checks that the inputs are the segments of one run (Check) and
// folds them into the summary one process would have produced from the
// same calls:
//   - counts, errors, statuses, bytes, checks, iterations and dropped
//     iterations add up;
//   - the run spans from the earliest start to the latest end, and every
//     rate is over that span;
//   - latency and metric figures come from the segments' histograms,
//     merged; the thresholds the export carries are judged on them by the
//     code a run judges its own with;
//   - the series the HTML report draws are rebuilt point by point from
//     the points' histograms and counters.
//
// What only one segment could see is kept with its segment named: its
// warnings, events, an abort, an interruption, a failure.
func Merge(inputs []Input) (*metrics.Summary, error) {
	if err := Check(inputs); err != nil {
		return nil, err
	}
	segs := make([]core.Segment, len(inputs))
	for i, in := range inputs {
		segs[i], _ = core.ParseSegment(in.Summary.Mergeable.Segment) // Check parsed it
	}
	order := make([]int, len(inputs))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return segs[a].Index - segs[b].Index })

	first := inputs[order[0]].Summary
	sum := &metrics.Summary{
		HloadVersion: first.HloadVersion,
		RunID:        mergedRunID(inputs, order),
		Started:      first.Started,
		Ended:        first.Ended,
		Scenarios:    map[string]*metrics.ScenarioSummary{},
		Files:        first.Files,
		Variables:    first.Variables,
		Passed:       true,
	}
	agg := metrics.NewAggregator()
	for _, i := range order {
		s := inputs[i].Summary
		if s.Started.Before(sum.Started) {
			sum.Started = s.Started
		}
		if s.Ended.After(sum.Ended) {
			sum.Ended = s.Ended
		}
		if err := agg.AddTotals(s.Mergeable.Requests, s.Mergeable.Flows); err != nil {
			return nil, fmt.Errorf("%s: %w", inputs[i].Name, err)
		}
		for name, sc := range s.Scenarios {
			for req, rf := range sc.Requests {
				if rf != nil && len(rf.ErrorMessages) > 0 {
					agg.AddMessages(name, req, rf.ErrorMessages)
				}
			}
		}
	}
	elapsed := sum.Ended.Sub(sum.Started)
	sum.DurationS = elapsed.Seconds()
	addScenarios(sum, inputs, order, agg, elapsed)
	_, sum.Metrics = agg.Totals("", "", elapsed)
	addOutcomes(sum, inputs, order, segs)
	sum.Generator = mergeGenerators(inputs, order, segs)
	series, gaugesMax, err := mergeSeries(inputs, order, segs, sum.Started)
	if err != nil {
		return nil, err
	}
	sum.Series = series
	for name, v := range gaugesMax {
		if sum.GaugesMax == nil {
			sum.GaugesMax = map[string]int64{}
		}
		sum.GaugesMax[name] = max(sum.GaugesMax[name], v)
	}
	core.JudgeMerged(sum, first.Mergeable.Thresholds, agg, elapsed)
	sort.Strings(sum.Warnings)
	return sum, nil
}

// mergedRunID names the merged run after its segments' runs.
func mergedRunID(inputs []Input, order []int) string {
	ids := make([]string, 0, len(order))
	for _, i := range order {
		ids = append(ids, inputs[i].Summary.RunID)
	}
	return "merge:" + strings.Join(ids, "+")
}

// addScenarios adds every scenario of any segment, with its requests' and
// flows' figures from the merged aggregator.
func addScenarios(sum *metrics.Summary, inputs []Input, order []int, agg *metrics.Aggregator, elapsed time.Duration) {
	requests := agg.Requests(elapsed)
	flows := agg.Flows(elapsed)
	for _, i := range order {
		for name, sc := range inputs[i].Summary.Scenarios {
			out := sum.Scenarios[name]
			if out == nil {
				out = &metrics.ScenarioSummary{Executor: sc.Executor, Model: sc.Model,
					Requests: requests[name], Capacity: sc.Capacity}
				if out.Requests == nil {
					out.Requests = map[string]*metrics.RequestFigures{}
				}
				sum.Scenarios[name] = out
			}
			out.Iterations += sc.Iterations
			out.DroppedIterations += sc.DroppedIterations
			// The flows any segment declares, with zeros for those that
			// never ended anywhere, as a run names every flow it has.
			for flow := range sc.Flows {
				if out.Flows == nil {
					out.Flows = map[string]*metrics.FlowFigures{}
				}
				if ff := flows[name][flow]; ff != nil {
					out.Flows[flow] = ff
				} else if out.Flows[flow] == nil {
					out.Flows[flow] = &metrics.FlowFigures{FailedByKind: map[string]int64{}}
				}
			}
		}
	}
	if len(order) > 1 {
		// A capacity search cannot be sharded; a lone 1/1 file keeps its.
		for _, sc := range sum.Scenarios {
			sc.Capacity = nil
		}
	}
}

// addOutcomes says what ended each segment, and keeps each segment's
// warnings and sink errors, with its segment named.
func addOutcomes(sum *metrics.Summary, inputs []Input, order []int, segs []core.Segment) {
	var failed []string
	for _, i := range order {
		s, seg := inputs[i].Summary, segs[i]
		label := fmt.Sprintf("segment %s", seg)
		if s.Interrupted {
			sum.Interrupted = true
			sum.Warnings = append(sum.Warnings, fmt.Sprintf("%s (%s) was interrupted: the merged figures hold less than the planned load", label, inputs[i].Name))
		}
		if s.Aborted != "" {
			if sum.Aborted == "" {
				sum.Aborted = s.Aborted
			}
			sum.Passed = false
			sum.Warnings = append(sum.Warnings, fmt.Sprintf("%s (%s) was aborted by threshold %q: the merged run does not pass", label, inputs[i].Name, s.Aborted))
		}
		if s.Failed != "" {
			sum.Passed = false
			failed = append(failed, fmt.Sprintf("%s: %s", label, s.Failed))
		}
		for _, e := range s.SinkErrors {
			sum.Passed = false
			sum.SinkErrors = append(sum.SinkErrors, fmt.Sprintf("%s: %s", label, e))
		}
		for _, w := range s.Warnings {
			sum.Warnings = append(sum.Warnings, fmt.Sprintf("%s: %s", label, w))
		}
	}
	sum.Failed = strings.Join(failed, "\n")
}

// mergeGenerators sums the segments' own CPU figures: each ran on its own
// machine, so the merged run used all their cores. It was saturated when
// any segment was, which the reason names.
func mergeGenerators(inputs []Input, order []int, segs []core.Segment) *metrics.GeneratorFigures {
	var out *metrics.GeneratorFigures
	var reasons []string
	var waitMax *float64
	var pluginCPU *float64
	busy := 0.0 // CPU-seconds available: cores times each segment's duration
	for _, i := range order {
		g := inputs[i].Summary.Generator
		if g == nil {
			continue
		}
		if out == nil {
			out = &metrics.GeneratorFigures{}
		}
		out.CPUCoresAvailable += g.CPUCoresAvailable
		out.CPUSeconds += g.CPUSeconds
		out.CPUUtilizationMax = max(out.CPUUtilizationMax, g.CPUUtilizationMax)
		busy += float64(g.CPUCoresAvailable) * inputs[i].Summary.DurationS
		out.Intervals += g.Intervals
		out.SaturatedIntervals += g.SaturatedIntervals
		if g.PluginCPUSeconds != nil {
			v := *g.PluginCPUSeconds
			if pluginCPU != nil {
				v += *pluginCPU
			}
			pluginCPU = &v
		}
		if g.RunQueueWaitShareMax != nil && (waitMax == nil || *g.RunQueueWaitShareMax > *waitMax) {
			v := *g.RunQueueWaitShareMax
			waitMax = &v
		}
		if g.Saturated {
			out.Saturated = true
			reasons = append(reasons, fmt.Sprintf("segment %s: %s", segs[i], g.Reason))
		}
	}
	if out == nil {
		return nil
	}
	if busy > 0 {
		out.CPUUtilizationMean = out.CPUSeconds / busy
	}
	out.PluginCPUSeconds, out.RunQueueWaitShareMax = pluginCPU, waitMax
	out.Reason = strings.Join(reasons, "; ")
	return out
}

// sortedKeys returns a map's keys in order.
func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
