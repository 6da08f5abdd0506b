package core

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/hload/hload/config"
	"github.com/hload/hload/metrics"
)

// summarise builds the run's summary: figures, thresholds, what ended the
// run, and the warnings a reader of the figures must not miss.
func (r *run) summarise() *metrics.Summary {
	sum := r.soFar(r.end)
	if r.failure != nil {
		sum.Failed = r.failure.Error()
		sum.Passed = false
	}
	for _, sc := range r.scenarios {
		for _, w := range []string{sc.feederWarning(), sc.cancelWarning(), sc.setupWarning()} {
			if w != "" {
				sum.Warnings = append(sum.Warnings, w)
			}
		}
	}
	sum.Warnings = append(sum.Warnings, requestWarnings(sum)...)
	sum.Warnings = append(sum.Warnings, panicWarnings(r.test, sum)...)
	sum.Warnings = append(sum.Warnings, flowWarnings(r.test, sum)...)
	sum.Warnings = append(sum.Warnings, unjudgedWarnings(r.test, r.agg, r.end.Sub(r.info.Started))...)
	sum.Warnings = append(sum.Warnings, generatorWarnings(sum)...)
	if w := saturationWarning(sum.Generator); w != "" {
		sum.Warnings = append(sum.Warnings, w)
	}
	failIfEveryCallFailed(sum)
	sort.Strings(sum.Warnings)
	for _, err := range r.writeErrs {
		if err != nil {
			noteSinkError(sum, err)
		}
	}
	redactSummary(sum, r.state.redact)
	return sum
}

// soFar is the run so far, for a snapshot that ends at end: the figures,
// thresholds and generator's figures the summary has, which summarise
// starts from. The aggregator's totals are those of the last flush, on
// this goroutine.
func (r *run) soFar(end time.Time) *metrics.Summary {
	sum := buildSummary(r.test, r.agg, r.scenarios, r.info, end)
	sum.Interrupted = r.interrupted
	sum.Aborted = r.aborted
	sum.Generator = r.snapshots.generator.figures()
	if len(r.snapshots.gaugesMax) > 0 {
		sum.GaugesMax = maps.Clone(r.snapshots.gaugesMax)
	}
	return sum
}

// redactSummary hides the test's sensitive values in the texts of sum that
// come from outside hload: a plugin's last words, a sink's error (which
// may name a path read from env()). The calls' messages were redacted as
// they came (vu.emit), and the warnings quote only those and names.
func redactSummary(sum *metrics.Summary, redact func(string) string) {
	sum.Failed = redact(sum.Failed)
	for i := range sum.SinkErrors {
		sum.SinkErrors[i] = redact(sum.SinkErrors[i])
	}
}

func buildSummary(test *config.Test, agg *metrics.Aggregator, scenarios []*scenarioRun, info metrics.RunInfo, end time.Time) *metrics.Summary {
	elapsed := end.Sub(info.Started)
	sum := &metrics.Summary{
		HloadVersion: info.Version,
		RunID:        info.RunID,
		Started:      info.Started,
		Ended:        end,
		DurationS:    elapsed.Seconds(),
		Scenarios:    map[string]*metrics.ScenarioSummary{},
		Files:        info.Files,
		Variables:    info.Variables,
	}
	requests := agg.Requests(elapsed)
	flows := agg.Flows(elapsed)
	for _, sc := range scenarios {
		sum.Scenarios[sc.name] = &metrics.ScenarioSummary{
			Executor:          sc.cfg.Executor.Name(),
			Model:             model(sc.cfg.Executor),
			Iterations:        sc.iterations.Load(),
			DroppedIterations: sc.dropped.Load(),
			Requests:          requests[sc.name],
			Flows:             scenarioFlows(sc.cfg, flows[sc.name]),
		}
		if sc.capacity != nil {
			sum.Scenarios[sc.name].Capacity = sc.capacity.summary()
		}
	}
	_, sum.Metrics = agg.Totals("", "", elapsed)
	sum.Passed = true
	j := newJudging(agg, elapsed)
	for _, th := range test.Thresholds {
		res := j.evaluate(th)
		sum.Thresholds = append(sum.Thresholds, res)
		sum.Passed = sum.Passed && res.Passed
	}
	return sum
}

// scenarioFlows returns the figures of a scenario's flow blocks and its
// setup (as "setup"), with zeros for those that never ended, so that the
// summary names every flow the file declares; nil when it has neither.
func scenarioFlows(s *config.Scenario, recorded map[string]*metrics.FlowFigures) map[string]*metrics.FlowFigures {
	var out map[string]*metrics.FlowFigures
	add := func(name string) {
		if out == nil {
			out = map[string]*metrics.FlowFigures{}
		}
		if ff := recorded[name]; ff != nil {
			out[name] = ff
		} else {
			out[name] = &metrics.FlowFigures{FailedByKind: map[string]int64{}}
		}
	}
	if s.Setup != nil {
		add(metrics.SetupFlow)
	}
	for _, f := range s.Mix {
		if !f.Single {
			add(f.Name)
		}
	}
	// Whatever else was recorded for the scenario is kept, not dropped.
	for name := range recorded {
		if out[name] == nil {
			add(name)
		}
	}
	return out
}

// everyCallFailed reports whether the run made calls and all of them
// failed, with how many there were.
func everyCallFailed(sum *metrics.Summary) (int64, bool) {
	var calls, errs int64
	for _, sc := range sum.Scenarios {
		for _, r := range sc.Requests {
			calls += r.Count
			errs += r.Errors
		}
	}
	return calls, calls > 0 && errs == calls
}

// errorsThresholdHeld reports whether a threshold on the errors metric
// held.
func errorsThresholdHeld(sum *metrics.Summary) bool {
	for _, t := range sum.Thresholds {
		if t.Metric == metrics.MetricErrors && t.Passed {
			return true
		}
	}
	return false
}

// requestWarnings names each request whose every call failed, and each
// whose expressions failed at run time, with the first reasons given.
func requestWarnings(sum *metrics.Summary) []string {
	var out []string
	for _, name := range slices.Sorted(maps.Keys(sum.Scenarios)) {
		reqs := sum.Scenarios[name].Requests
		for _, req := range slices.Sorted(maps.Keys(reqs)) {
			r := reqs[req]
			if r == nil || r.Count == 0 {
				continue
			}
			if r.Errors == r.Count {
				out = append(out, fmt.Sprintf("scenario %q, request %q: every call failed (%d of %d: %s)%s",
					name, req, r.Count, r.Count, kinds(r.ErrorsByKind), firstMessage(r, "")))
			}
			if n := r.ErrorsByKind[string(errEval)]; n > 0 && n < r.Count {
				out = append(out, fmt.Sprintf("scenario %q, request %q: expressions failed at run time in %d of %d calls%s",
					name, req, n, r.Count, firstMessage(r, string(errEval))))
			}
		}
	}
	return out
}

// kinds renders errors by kind as "protocol 12, timeout 3".
func kinds(m map[string]int64) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

// firstMessage returns ": " and the first message kept for kind, or for
// the first kind that has one when kind is "".
func firstMessage(r *metrics.RequestFigures, kind string) string {
	for _, k := range slices.Sorted(maps.Keys(r.ErrorMessages)) {
		if (kind == "" || k == kind) && len(r.ErrorMessages[k]) > 0 {
			return ": " + r.ErrorMessages[k][0]
		}
	}
	return ""
}

// describe names a threshold for messages: its metric, filters and
// condition.
func describe(th *config.Threshold) string {
	parts := []string{th.Metric}
	if th.Scenario != "" {
		parts = append(parts, "scenario="+th.Scenario)
	}
	if th.Request != "" {
		parts = append(parts, "request="+th.Request)
	}
	if th.Flow != "" {
		parts = append(parts, "flow="+th.Flow)
	}
	return strings.Join(parts, " ") + ": " + th.Condition.Text
}

// flowWarnings says, per scenario, how many VU setup attempts failed and
// why, and names each flow whose every run failed, with the first reason
// its steps gave.
func flowWarnings(test *config.Test, sum *metrics.Summary) []string {
	var out []string
	for _, s := range test.Scenarios {
		sc := sum.Scenarios[s.Name]
		if sc == nil {
			continue
		}
		if f := sc.Flows[metrics.SetupFlow]; f != nil && f.Failed > 0 && s.Setup != nil {
			w := fmt.Sprintf("scenario %q: %d of %d VU setup attempts failed (%s)%s; a VU whose setup failed retried it after a backoff and ran no iteration meanwhile",
				s.Name, f.Failed, f.Count, kinds(f.FailedByKind), stepMessage(s.Setup, sc))
			if f.Completed == 0 {
				w += ", and no VU completed its setup"
			}
			out = append(out, w)
		}
		for _, fl := range s.Mix {
			f := sc.Flows[fl.Name]
			if fl.Single || f == nil || f.Count == 0 || f.Failed != f.Count {
				continue
			}
			out = append(out, fmt.Sprintf("scenario %q, flow %q: every run failed (%d of %d: %s)%s",
				s.Name, fl.Name, f.Count, f.Count, kinds(f.FailedByKind), stepMessage(fl, sc)))
		}
	}
	return out
}

// stepMessage returns " at step NAME: " and the first reason kept by the
// first step of f that failed, or "" when none gave one.
func stepMessage(f *config.Flow, sc *metrics.ScenarioSummary) string {
	for _, step := range f.Steps {
		r := sc.Requests[step.Name]
		if r == nil || r.Errors == 0 {
			continue
		}
		if m := firstMessage(r, ""); m != "" {
			return fmt.Sprintf(", first at step %q%s", step.Name, m)
		}
	}
	return ""
}

// unjudgedWarnings names each threshold that had nothing to judge, and
// so did not pass.
func unjudgedWarnings(test *config.Test, agg *metrics.Aggregator, elapsed time.Duration) []string {
	var out []string
	j := newJudging(agg, elapsed)
	for _, th := range test.Thresholds {
		if why := j.unjudged(th); why != "" {
			out = append(out, fmt.Sprintf("threshold %q had nothing to judge: %s, so it did not pass", describe(th), why))
		}
	}
	return out
}

// lateStart is the p99 start lateness above which the open model says that
// hload itself could not keep to its schedule. Go's timers alone account for
// up to about a millisecond.
const lateStart = 5.0 // ms

// generatorWarnings says when hload was near its own limit, so a slow
// generator is never mistaken for a slow server: open-model iterations that
// started late against their plan.
func generatorWarnings(sum *metrics.Summary) []string {
	var out []string
	for name, sc := range sum.Scenarios {
		worst := 0.0
		for _, r := range sc.Requests {
			worst = max(worst, r.Metrics[metrics.MetricStartLateness].P99)
		}
		if worst > lateStart {
			out = append(out, fmt.Sprintf("scenario %q: iterations started up to %.1f ms late (p99 start_lateness): hload was near its own limit or short of VUs, and the response times include that delay", name, worst))
		}
	}
	return out
}

// failIfEveryCallFailed fails a run whose every call failed, with a
// warning that says so. Such a run measured nothing but the failure: k6
// and JMeter users read a PASS as "the service held", so it does not
// pass. A threshold on errors that held (it must allow a rate of 100 %)
// says the user expects failures, and decides. Thresholds must be judged
// first.
func failIfEveryCallFailed(sum *metrics.Summary) {
	if n, ok := everyCallFailed(sum); ok && !errorsThresholdHeld(sum) {
		sum.Passed = false
		sum.Warnings = append(sum.Warnings, fmt.Sprintf(
			"every one of the run's %d calls failed: the run does not pass (a threshold on errors that allows this would decide)", n))
	}
}
