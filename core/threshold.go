package core

import (
	"fmt"
	"time"

	"github.com/hload/hload/config"
	"github.com/hload/hload/metrics"
)

// judging judges thresholds over the run totals as of one moment. It
// merges the totals of each (scenario, request) filter once: thresholds
// often share a filter (every request), a threshold's value and its
// having something to judge read the same totals, and the live dashboard
// and the abort check judge every interval.
type judging struct {
	agg     *metrics.Aggregator
	elapsed time.Duration
	totals  map[[2]string]filterTotals
}

// filterTotals are the merged totals of one filter.
type filterTotals struct {
	req      metrics.RequestFigures
	others   map[string]metrics.MetricFigures
	latCount int64 // calls with a latency: all but those that sent nothing
}

func newJudging(agg *metrics.Aggregator, elapsed time.Duration) *judging {
	return &judging{agg: agg, elapsed: elapsed, totals: map[[2]string]filterTotals{}}
}

// of returns the totals of the series matching scenario and request.
func (j *judging) of(scenario, request string) filterTotals {
	key := [2]string{scenario, request}
	if t, ok := j.totals[key]; ok {
		return t
	}
	var t filterTotals
	t.req, t.others = j.agg.Totals(scenario, request, j.elapsed)
	t.latCount = j.agg.LatencyCount(scenario, request)
	j.totals[key] = t
	return t
}

// evaluate computes a threshold's value over the run totals so far and
// compares it with the condition. A threshold that has nothing to judge
// (see unjudged) does not pass.
func evaluate(th *config.Threshold, agg *metrics.Aggregator, elapsed time.Duration) metrics.ThresholdResult {
	return newJudging(agg, elapsed).evaluate(th)
}

// unjudged says why th had nothing to judge, or "" (judging.unjudged).
func unjudged(th *config.Threshold, agg *metrics.Aggregator, elapsed time.Duration) string {
	return newJudging(agg, elapsed).unjudged(th)
}

func (j *judging) evaluate(th *config.Threshold) metrics.ThresholdResult {
	agg, elapsed := j.agg, j.elapsed
	c := th.Condition
	if th.Metric == metrics.MetricFlowDuration || th.Metric == metrics.MetricFlowFailures {
		v, nothing := flowValue(th, agg, elapsed)
		return metrics.ThresholdResult{
			Metric:    th.Metric,
			Scenario:  th.Scenario,
			Flow:      th.Flow,
			Condition: c.Text,
			Value:     v,
			Passed:    nothing == "" && holds(c.Op, v, c.Value),
			Abort:     th.Abort,
		}
	}
	t := j.of(th.Scenario, th.Request)
	req, others := t.req, t.others
	var v float64
	switch th.Metric {
	case metrics.MetricLatency:
		v = latencyFigure(req.Latency, c, func(q float64) float64 {
			return agg.Quantile(th.Scenario, th.Request, th.Metric, q)
		})
	case metrics.MetricErrors:
		if c.Aggregation == "count" {
			v = float64(req.Errors)
		} else {
			v = req.ErrorRate
		}
	case metrics.MetricRPS:
		if c.Aggregation == "count" {
			v = float64(req.Count)
		} else {
			v = req.RPS
		}
	case metrics.MetricChecks:
		total := req.Checks.Passed + req.Checks.Failed
		switch {
		case c.Aggregation == "count":
			v = float64(req.Checks.Failed)
		case total > 0:
			v = float64(req.Checks.Passed) / float64(total)
		default:
			v = 1 // no check ran, none failed
		}
	default:
		m := others[th.Metric]
		if c.Aggregation == "count" {
			v = float64(m.Count)
		} else {
			v = latencyFigure(m.LatencyFigures, c, func(q float64) float64 {
				return agg.Quantile(th.Scenario, th.Request, th.Metric, q)
			})
		}
	}
	return metrics.ThresholdResult{
		Metric:    th.Metric,
		Scenario:  th.Scenario,
		Request:   th.Request,
		Condition: c.Text,
		Value:     v,
		Passed:    holds(c.Op, v, c.Value) && j.unjudged(th) == "",
		Abort:     th.Abort,
	}
}

// flowValue computes a flow threshold's value over the flows matching its
// scenario and flow filters, and says why there is nothing to judge, if
// so: then the value is 0 and means nothing.
func flowValue(th *config.Threshold, agg *metrics.Aggregator, elapsed time.Duration) (float64, string) {
	ff := agg.FlowTotals(th.Scenario, th.Flow, elapsed)
	c := th.Condition
	if th.Metric == metrics.MetricFlowFailures {
		if ff.Count == 0 {
			return 0, "no " + flowWords(th) + " ended"
		}
		if c.Aggregation == "count" {
			return float64(ff.Failed), ""
		}
		return ff.FailureRate, ""
	}
	switch {
	case c.Aggregation == "count" && ff.Count > 0:
		// A count of completed flows is a figure even when it is 0, as
		// long as some flow ended.
		return float64(ff.Completed), ""
	case c.Aggregation == "count":
		return 0, "no " + flowWords(th) + " ended"
	case ff.Completed == 0:
		// The duration of a failed flow is not recorded: with none
		// completed there is no duration, not a duration of 0.
		return 0, "no " + flowWords(th) + " completed"
	}
	return latencyFigure(ff.Duration, c, func(q float64) float64 {
		return agg.FlowQuantile(th.Scenario, th.Flow, q)
	}), ""
}

// flowWords names the flows a threshold watches, for messages.
func flowWords(th *config.Threshold) string { return watched("flow", th.Flow, th.Scenario) }

// watched names what a threshold's filters pick, such as `flow "order" of
// scenario "shop"`, or just noun when they pick everything.
func watched(noun, name, scenario string) string {
	s := noun
	if name != "" {
		s = fmt.Sprintf("%s %q", noun, name)
	}
	if scenario != "" {
		s += fmt.Sprintf(" of scenario %q", scenario)
	}
	return s
}

// unjudged says why a threshold had nothing to judge over the run totals
// so far, or "": a flow that never ended (every VU stuck in its setup,
// say) must not read as a flow that took 0 ms or never failed, and no
// call must not read as calls that took 0 ms, never failed or passed
// every check. A protocol metric is judged as it stands: many count
// events (a nack, a reconnection) whose absence is the good outcome.
func (j *judging) unjudged(th *config.Threshold) string {
	switch th.Metric {
	case metrics.MetricFlowDuration, metrics.MetricFlowFailures:
		_, nothing := flowValue(th, j.agg, j.elapsed)
		return nothing
	case metrics.MetricLatency, metrics.MetricErrors:
		t := j.of(th.Scenario, th.Request)
		if t.req.Count == 0 {
			return "no call" + requestWords(th) + " was made"
		}
		if th.Metric == metrics.MetricLatency && t.latCount == 0 {
			// Calls that sent nothing (an expression that failed) have
			// no latency: their 0 ms is not a measurement.
			return "every call" + requestWords(th) + " sent nothing, so none has a latency"
		}
	case metrics.MetricChecks:
		if req := j.of(th.Scenario, th.Request).req; req.Checks.Passed+req.Checks.Failed == 0 {
			return "no check" + requestWords(th) + " ran"
		}
	case metrics.MetricRPS:
	default:
		// A protocol metric's count is a measurement even when it is 0
		// (no nack), but a percentile, mean or max of no sample is not.
		if a := th.Condition.Aggregation; a != "count" && a != "rate" {
			if others := j.of(th.Scenario, th.Request).others; others[th.Metric].Count == 0 {
				return "no " + th.Metric + " sample" + requestWords(th) + " was recorded"
			}
		}
	}
	return ""
}

// requestWords names the requests a threshold watches, for messages:
// "" for all of them.
func requestWords(th *config.Threshold) string {
	switch {
	case th.Request != "":
		return " of " + watched("request", th.Request, th.Scenario)
	case th.Scenario != "":
		return fmt.Sprintf(" in scenario %q", th.Scenario)
	}
	return ""
}

// latencyFigure picks the aggregation out of latency figures, all in ms;
// a percentile the figures do not carry, such as p75, comes from quantile.
func latencyFigure(l metrics.LatencyFigures, c config.Condition, quantile func(q float64) float64) float64 {
	switch c.Aggregation {
	case "min":
		return l.Min
	case "max":
		return l.Max
	case "mean":
		return l.Mean
	case "stdev":
		return l.Stdev
	}
	switch c.Percentile {
	case 50:
		return l.P50
	case 90:
		return l.P90
	case 95:
		return l.P95
	case 99:
		return l.P99
	case 99.9:
		return l.P999
	}
	return quantile(c.Percentile)
}

func holds(op string, v, limit float64) bool {
	switch op {
	case "<":
		return v < limit
	case "<=":
		return v <= limit
	case ">":
		return v > limit
	case ">=":
		return v >= limit
	case "==":
		return v == limit
	case "!=":
		return v != limit
	}
	return false
}

// firstAbort returns the first abort threshold that fails on the totals so
// far, or nil. A threshold with nothing to judge yet does not abort: the
// flows it watches may simply not have ended yet.
func firstAbort(ths []*config.Threshold, agg *metrics.Aggregator, elapsed time.Duration) *config.Threshold {
	j := newJudging(agg, elapsed)
	for _, th := range ths {
		if th.Abort && j.unjudged(th) == "" && !j.evaluate(th).Passed {
			return th
		}
	}
	return nil
}
