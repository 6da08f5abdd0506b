package core

import (
	"time"

	"github.com/hload/hload/config"
	"github.com/hload/hload/core/metrics"
)

// evaluate computes a threshold's value over the run totals so far and
// compares it with the condition.
func evaluate(th *config.Threshold, agg *metrics.Aggregator, elapsed time.Duration) metrics.ThresholdResult {
	req, others := agg.Totals(th.Scenario, th.Request, elapsed)
	c := th.Condition
	var v float64
	switch th.Metric {
	case "latency":
		v = latencyFigure(req.Latency, c, func(q float64) float64 {
			return agg.Quantile(th.Scenario, th.Request, th.Metric, q)
		})
	case "errors":
		if c.Aggregation == "count" {
			v = float64(req.Errors)
		} else {
			v = req.ErrorRate
		}
	case "rps":
		if c.Aggregation == "count" {
			v = float64(req.Count)
		} else {
			v = req.RPS
		}
	case "checks":
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
		Passed:    holds(c.Op, v, c.Value),
		Abort:     th.Abort,
	}
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
// far, or nil.
func firstAbort(ths []*config.Threshold, agg *metrics.Aggregator, elapsed time.Duration) *config.Threshold {
	for _, th := range ths {
		if th.Abort && !evaluate(th, agg, elapsed).Passed {
			return th
		}
	}
	return nil
}
