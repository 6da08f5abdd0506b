package config

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"

	"github.com/hload/hload/metrics"
	"github.com/hload/hload/protocols"
)

// thresholdWhere names threshold blocks in messages.
const thresholdWhere = "A threshold block"

// thresholdSchema is the schema of a threshold block.
var thresholdSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "metric", Required: true},
		{Name: "scenario"},
		{Name: "request"},
		{Name: "flow"},
		{Name: "condition", Required: true},
		{Name: "abort"},
	},
}

// flowMetrics are the metrics of flows (and setups), which the flow filter
// applies to.
var flowMetrics = []string{metrics.MetricFlowDuration, metrics.MetricFlowFailures}

// The aggregations other than percentiles.
const (
	aggMean  = "mean"
	aggStdev = "stdev"
	aggMin   = "min"
	aggMax   = "max"
	aggRate  = "rate"
	aggCount = "count"
)

// conditionForm is the shape of a condition, shown in every condition error.
const conditionForm = `A condition is "<aggregation> <operator> <value>", such as "p95 < 200ms" or "rate < 1%".`

// decodeThresholds is the fifth phase. It needs the scenarios.
func (l *loader) decodeThresholds(blocks []*hcl.Block) hcl.Diagnostics {
	var diags hcl.Diagnostics
	for _, b := range blocks {
		t, d := l.decodeThreshold(b)
		diags = append(diags, d...)
		l.test.Thresholds = append(l.test.Thresholds, t)
	}
	return diags
}

// decodeThreshold decodes one threshold block: the metric it watches,
// the filters that narrow it, its condition and whether it aborts.
func (l *loader) decodeThreshold(b *hcl.Block) (*Threshold, hcl.Diagnostics) {
	t := &Threshold{DeclRange: b.DefRange}
	content, diags := b.Body.Content(thresholdSchema)
	attrs := content.Attributes
	var d hcl.Diagnostics

	metricOK := false
	if attr := attrs["metric"]; attr != nil {
		t.Metric, metricOK, d = l.shownStringAttr(attr, thresholdWhere)
		diags = append(diags, d...)
		if metricOK && t.Metric == "" {
			metricOK = false
			diags = append(diags, errorDiag(attr.Expr.Range(), "Empty metric",
				"Name the metric the threshold watches: latency, errors, rps, checks, flow_duration, flow_failures or a protocol metric such as ttfb."))
		}
	}
	scenario, d := l.decodeThresholdFilters(t, attrs)
	diags = append(diags, d...)
	if metricOK && !diags.HasErrors() {
		// The filters are known, so the requests or flows the threshold
		// watches are.
		d = l.checkThresholdWatches(t, scenario, attrs)
		diags = append(diags, d...)
		metricOK = !d.HasErrors()
	}
	if attr := attrs["condition"]; attr != nil {
		diags = append(diags, l.decodeThresholdCondition(t, attr, metricOK)...)
	}
	if attr := attrs["abort"]; attr != nil {
		t.Abort, _, d = l.boolAttr(attr, thresholdWhere)
		diags = append(diags, d...)
	}
	return t, diags
}

// decodeThresholdFilters decodes the scenario, request and flow filters
// into t. It returns the scenario filtered on, nil for all or unknown.
func (l *loader) decodeThresholdFilters(t *Threshold, attrs hcl.Attributes) (*Scenario, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	var scenario *Scenario
	if attr := attrs["scenario"]; attr != nil {
		name, ok, d := l.shownStringAttr(attr, thresholdWhere)
		diags = append(diags, d...)
		if ok {
			t.Scenario = name
			scenario = l.scenarios[name]
			if scenario == nil {
				diags = append(diags, errorDiag(attr.Expr.Range(), fmt.Sprintf("Unknown scenario %q", name),
					"No scenario block is named %q.%s Declared scenarios: %s.",
					name, didYouMean(name, l.scenarioNames()), quoteList(l.scenarioNames())))
			}
		}
	}
	if attr := attrs["request"]; attr != nil {
		name, ok, d := l.shownStringAttr(attr, thresholdWhere)
		diags = append(diags, d...)
		if ok {
			t.Request = name
			// Without a known scenario the request is looked up everywhere.
			if t.Scenario == "" || scenario != nil {
				diags = append(diags, l.checkThresholdRequest(name, scenario, attr.Expr.Range())...)
			}
		}
	}
	if attr := attrs["flow"]; attr != nil {
		var d hcl.Diagnostics
		t.Flow, _, d = l.shownStringAttr(attr, thresholdWhere)
		diags = append(diags, d...)
	}
	return scenario, diags
}

// checkThresholdWatches checks that t's metric is one the requests or
// flows it watches produce, with a filter that fits the metric's kind.
// It returns only errors.
func (l *loader) checkThresholdWatches(t *Threshold, scenario *Scenario, attrs hcl.Attributes) hcl.Diagnostics {
	if slices.Contains(flowMetrics, t.Metric) {
		if d := l.checkThresholdFlow(t, scenario, attrs); d.HasErrors() {
			return d
		}
		return nil
	}
	if attr := attrs["flow"]; attr != nil {
		return hcl.Diagnostics{errorDiag(attr.NameRange, "flow filter on a request metric",
			"%s is measured per request; the flow filter applies to the flow metrics, %s. Watch the requests of a flow with request = \"<name>\", or its whole run with metric = %q.",
			t.Metric, quoteList(flowMetrics), metrics.MetricFlowDuration)}
	}
	if d := l.checkThresholdMetric(t, scenario); d != nil {
		d.Subject = attrs["metric"].Expr.Range().Ptr()
		return hcl.Diagnostics{d}
	}
	return nil
}

// decodeThresholdCondition decodes the condition into t. Whether the
// condition fits the metric is checked only when the metric is known
// good (metricOK), so a bad metric is reported once.
func (l *loader) decodeThresholdCondition(t *Threshold, attr *hcl.Attribute, metricOK bool) hcl.Diagnostics {
	text, ok, diags := l.shownStringAttr(attr, thresholdWhere)
	if !ok {
		return diags
	}
	c, kind, err := parseCondition(text)
	if err == nil && metricOK {
		err = checkCondition(t.Metric, c, kind)
	}
	if err != nil {
		diags = append(diags, errorDiag(attr.Expr.Range(), "Invalid threshold condition",
			"%s %s", capitalize(err.Error())+".", conditionForm))
	}
	t.Condition = c
	return diags
}

// checkThresholdFlow checks a threshold on a flow metric: it has no
// request filter, its flow filter names a flow of the scenarios it
// watches, and those scenarios have a flow or a setup to watch.
func (l *loader) checkThresholdFlow(t *Threshold, scenario *Scenario, attrs hcl.Attributes) hcl.Diagnostics {
	if attr := attrs["request"]; attr != nil {
		return hcl.Diagnostics{errorDiag(attr.NameRange, "request filter on a flow metric",
			"%s is measured per flow, from its first step to the end of its last, not per request. Filter with flow = \"<name>\" instead, or watch a request with metric = %q.",
			t.Metric, metrics.MetricLatency)}
	}
	scope := l.test.Scenarios
	where := "this test"
	if scenario != nil {
		scope, where = []*Scenario{scenario}, fmt.Sprintf("scenario %q", scenario.Name)
	}
	var flows []string
	for _, s := range scope {
		if s.Setup != nil && !slices.Contains(flows, metrics.SetupFlow) {
			flows = append(flows, metrics.SetupFlow)
		}
		for _, f := range s.Mix {
			if !f.Single && !slices.Contains(flows, f.Name) {
				flows = append(flows, f.Name)
			}
		}
	}
	if len(flows) == 0 {
		return hcl.Diagnostics{errorDiag(attrs["metric"].Expr.Range(), fmt.Sprintf("No flow records %s", t.Metric),
			`%s is measured over flow blocks and setups, and %s has neither, so this threshold would never see a sample. A bare request records no flow figures: watch it with metric = %q or %q, or put the steps of a journey in flow "name" { ... }.`,
			t.Metric, where, metrics.MetricLatency, metrics.MetricErrors)}
	}
	if t.Flow == "" || slices.Contains(flows, t.Flow) {
		return nil
	}
	attr := attrs["flow"]
	setup := ""
	if slices.Contains(flows, metrics.SetupFlow) {
		setup = fmt.Sprintf(" (%q is a scenario's setup)", metrics.SetupFlow)
	}
	return hcl.Diagnostics{errorDiag(attr.Expr.Range(), fmt.Sprintf("Unknown flow %q", t.Flow),
		"No flow of %s is named %q, so this threshold would never see a sample.%s Flows: %s%s.",
		where, t.Flow, didYouMean(t.Flow, flows), quoteList(flows), setup)}
}

// hloadMetrics are the metrics hload computes from every request sample,
// whatever the protocol.
var hloadMetrics = []string{metrics.MetricLatency, metrics.MetricErrors, metrics.MetricRPS, metrics.MetricChecks}

// openModelMetrics are the metrics the core records only in open-model
// scenarios, where an iteration has a planned start.
var openModelMetrics = []string{metrics.MetricServiceTime, metrics.MetricStartLateness}

// checkThresholdMetric returns a diagnostic, without its subject, when
// t's metric is one that none of the requests t watches can produce: a
// name no protocol knows, or the metric of a protocol those requests do
// not use. scenario is t's scenario filter, nil for all.
func (l *loader) checkThresholdMetric(t *Threshold, scenario *Scenario) *hcl.Diagnostic {
	if slices.Contains(hloadMetrics, t.Metric) {
		return nil
	}
	scope := l.test.Scenarios
	where := "this test"
	if scenario != nil {
		scope, where = []*Scenario{scenario}, fmt.Sprintf("scenario %q", scenario.Name)
	}
	if t.Request != "" {
		where = fmt.Sprintf("request %q of %s", t.Request, where)
	}
	produced := slices.Clone(hloadMetrics)
	open, used := false, []string{}
	for _, s := range scope {
		for _, r := range s.Requests {
			if t.Request != "" && r.Name != t.Request {
				continue
			}
			e := l.targets[r.Target]
			if e == nil || e.info == nil || s.Executor == nil {
				return nil // the request's target, or the scenario's executor, is already reported
			}
			if !slices.Contains(used, e.info.Name) {
				used = append(used, e.info.Name)
				produced = append(produced, e.info.Metrics...)
			}
			open = open || slices.Contains(openExecutors, s.Executor.Name())
		}
	}
	if len(used) == 0 {
		return nil // no request to watch, which is reported elsewhere
	}
	if open {
		produced = append(produced, openModelMetrics...)
	}
	if slices.Contains(produced, t.Metric) {
		return nil
	}
	produced = distinct(produced)
	watchable := fmt.Sprintf("The metrics %s can produce: %s.", where, quoteList(produced))
	if slices.Contains(openModelMetrics, t.Metric) {
		return &hcl.Diagnostic{Severity: hcl.DiagError, Summary: fmt.Sprintf("No scenario records %s", t.Metric),
			Detail: fmt.Sprintf("%s is recorded only by the open-model executors (%s), and %s has none, so this threshold would never see a sample. %s",
				t.Metric, quoteList(openExecutors), where, watchable)}
	}
	if owner := l.owner(t.Metric, infoGauges); owner != "" {
		return &hcl.Diagnostic{Severity: hcl.DiagError, Summary: fmt.Sprintf("%s is a gauge", t.Metric),
			Detail: fmt.Sprintf("%s is a level the %s protocol reports once per interval (shown in the progress and at its peak in the summary), not a measurement of each call, so a threshold cannot judge it. %s",
				t.Metric, owner, watchable)}
	}
	if owner := l.owner(t.Metric, infoMetrics); owner != "" {
		return &hcl.Diagnostic{Severity: hcl.DiagError, Summary: fmt.Sprintf("No request produces %s", t.Metric),
			Detail: fmt.Sprintf("%s is a metric of the %s protocol, and %s only uses %s, so this threshold would never see a sample. %s",
				t.Metric, owner, where, quoteList(used), watchable)}
	}
	known := slices.Clone(produced)
	for _, name := range l.opts.Protocols.Names() {
		p, _ := l.opts.Protocols.Lookup(name)
		known = append(known, p.Describe().Metrics...)
	}
	return &hcl.Diagnostic{Severity: hcl.DiagError, Summary: fmt.Sprintf("Unknown metric %q", t.Metric),
		Detail: fmt.Sprintf("No protocol of this test produces a metric named %q, so this threshold would never see a sample.%s %s",
			t.Metric, didYouMean(t.Metric, append(append(known, openModelMetrics...), flowMetrics...)), watchable)}
}

// distinct returns names without repeats, in their first order.
func distinct(names []string) []string {
	var out []string
	for _, n := range names {
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// owner returns the name of a protocol whose Info lists name in the list
// that field picks (its metrics or its gauges), or "".
func (l *loader) owner(name string, field func(protocols.Info) []string) string {
	for _, p := range l.opts.Protocols.Names() {
		proto, _ := l.opts.Protocols.Lookup(p)
		if slices.Contains(field(proto.Describe()), name) {
			return p
		}
	}
	return ""
}

func infoMetrics(i protocols.Info) []string { return i.Metrics }
func infoGauges(i protocols.Info) []string  { return i.Gauges }

// checkThresholdRequest reports a request filter that matches no request:
// in scenario when it is set, else in any scenario.
func (l *loader) checkThresholdRequest(name string, scenario *Scenario, rng hcl.Range) hcl.Diagnostics {
	scope := l.test.Scenarios
	where := "any scenario"
	if scenario != nil {
		scope = []*Scenario{scenario}
		where = fmt.Sprintf("scenario %q", scenario.Name)
	}
	var known []string
	for _, s := range scope {
		for _, r := range s.Requests {
			if r.Name == name {
				return nil
			}
			if !slices.Contains(known, r.Name) {
				known = append(known, r.Name)
			}
		}
	}
	return hcl.Diagnostics{errorDiag(rng, fmt.Sprintf("Unknown request %q", name),
		"No request block in %s is named %q, so this threshold would never see a sample.%s Requests: %s.",
		where, name, didYouMean(name, known), quoteList(known))}
}

// scenarioNames returns the declared scenario names in declaration order.
func (l *loader) scenarioNames() []string {
	names := make([]string, len(l.test.Scenarios))
	for i, s := range l.test.Scenarios {
		names[i] = s.Name
	}
	return names
}

// valueKind is how a condition's value was written.
type valueKind int

const (
	valueNumber valueKind = iota
	valueDuration
	valuePercent
)

// conditionOps are the comparison operators, longest first so that "<="
// is not read as "<".
var conditionOps = []string{"<=", ">=", "==", "!=", "<", ">"}

// parseCondition parses a condition such as "p95 < 200ms".
func parseCondition(text string) (Condition, valueKind, error) {
	c := Condition{Text: text}
	s := strings.TrimSpace(text)
	i := strings.IndexAny(s, "<>=!")
	if i < 0 {
		return c, 0, fmt.Errorf("%q has no comparison operator (<, <=, >, >=, == or !=)", text)
	}
	agg, rest := strings.TrimSpace(s[:i]), s[i:]
	for _, op := range conditionOps {
		if strings.HasPrefix(rest, op) {
			c.Op = op
			break
		}
	}
	if c.Op == "" {
		return c, 0, fmt.Errorf("%q has no valid operator; use <, <=, >, >=, == or !=", text)
	}
	if agg == "" {
		return c, 0, fmt.Errorf("%q has no aggregation before %s", text, c.Op)
	}
	if err := parseAggregation(agg, &c); err != nil {
		return c, 0, err
	}
	value := strings.TrimSpace(rest[len(c.Op):])
	if strings.ContainsAny(value[:min(len(value), 1)], "<>=!") {
		return c, 0, fmt.Errorf("%q has an unknown operator; use <, <=, >, >=, == or !=", text)
	}
	if value == "" {
		return c, 0, fmt.Errorf("%q has no value after %s", text, c.Op)
	}
	kind, err := parseConditionValue(value, &c)
	return c, kind, err
}

// parseAggregation reads p95, p99.9, p999, mean and the others into c.
func parseAggregation(agg string, c *Condition) error {
	switch agg {
	case aggMean, aggStdev, aggMin, aggMax, aggRate, aggCount:
		c.Aggregation = agg
		return nil
	}
	errUnknown := fmt.Errorf("unknown aggregation %q; use a percentile such as p50, p95, p99, p999 or p99.9, or mean, stdev, min, max, rate or count", agg)
	digits, ok := strings.CutPrefix(agg, "p")
	if !ok || digits == "" || strings.Trim(digits, "0123456789.") != "" || strings.Count(digits, ".") > 1 ||
		strings.HasPrefix(digits, ".") || strings.HasSuffix(digits, ".") {
		return errUnknown
	}
	// p999 is 99.9 and p9999 is 99.99, as in most load-testing tools.
	if !strings.Contains(digits, ".") && len(digits) > 2 && strings.HasPrefix(digits, "99") {
		digits = digits[:2] + "." + digits[2:]
	}
	p, err := strconv.ParseFloat(digits, 64)
	if err != nil || p <= 0 || p > 100 {
		return fmt.Errorf("percentile %q is out of range; it must be above 0 and at most 100", agg)
	}
	c.Aggregation, c.Percentile = agg, p
	return nil
}

// parseConditionValue reads a number, a duration (in milliseconds) or a
// percentage (as a fraction) into c.
func parseConditionValue(value string, c *Condition) (valueKind, error) {
	if num, ok := strings.CutSuffix(value, "%"); ok {
		f, err := parseFinite(strings.TrimSpace(num))
		if err != nil {
			return 0, fmt.Errorf("%q is not a percentage such as 1%% or 0.5%%", value)
		}
		c.Value = f / 100
		return valuePercent, nil
	}
	if f, err := parseFinite(value); err == nil {
		c.Value = f
		return valueNumber, nil
	}
	if d, err := time.ParseDuration(value); err == nil {
		c.Value, c.IsDuration = float64(d)/float64(time.Millisecond), true
		return valueDuration, nil
	}
	return 0, fmt.Errorf(`%q is not a number, a duration such as "200ms" or a percentage such as "1%%"`, value)
}

// parseFinite parses a plain decimal number; "Inf" and "NaN" are not
// numbers a user means in a condition.
func parseFinite(s string) (float64, error) {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) || strings.ContainsAny(s, "xXpP_") {
		return 0, errors.New("not a number")
	}
	return f, nil
}

// checkCondition checks that a condition makes sense for its metric, such as
// no "rate" on latency and no durations on errors.
func checkCondition(metric string, c Condition, kind valueKind) error {
	if err := checkCompared(metric, c, kind); err != nil {
		return err
	}
	if kind == valueNumber && comparesDuration(metric, c) {
		return bareNumberError(c)
	}
	return nil
}

// comparesDuration reports whether c compares a duration on metric: every
// aggregation of latency, and those of flow_duration and of the
// protocols' metrics but rate and count.
func comparesDuration(metric string, c Condition) bool {
	switch metric {
	case metrics.MetricLatency:
		return true
	case metrics.MetricFlowDuration:
		return c.Aggregation != aggCount
	case metrics.MetricErrors, metrics.MetricChecks, metrics.MetricFlowFailures, metrics.MetricRPS:
		return false
	}
	return c.Aggregation != aggRate && c.Aggregation != aggCount
}

// bareNumberError refuses a number without a unit where a duration is
// compared. A bare number is seconds in every duration attribute, but
// conditions once read it as milliseconds: reading "p95 < 200" either way
// would silently judge some files against a bound 1,000 times off.
func bareNumberError(c Condition) error {
	n := strconv.FormatFloat(c.Value, 'f', -1, 64)
	return fmt.Errorf("%s compares a duration with %s, which has no unit; write %q for seconds or %q for milliseconds",
		strconv.Quote(c.Text), n, c.Aggregation+" "+c.Op+" "+n+"s", c.Aggregation+" "+c.Op+" "+n+"ms")
}

// checkCompared checks c's aggregation against the metric, and the kind of
// its value where the metric decides it.
func checkCompared(metric string, c Condition, kind valueKind) error {
	percentile := c.Percentile > 0
	switch metric {
	case metrics.MetricLatency:
		if !percentile && !slices.Contains([]string{aggMean, aggStdev, aggMin, aggMax}, c.Aggregation) {
			return fmt.Errorf("the latency metric takes a percentile such as p95, or mean, stdev, min or max, not %s", c.Aggregation)
		}
		if kind == valuePercent {
			return fmt.Errorf("the latency metric is compared with a duration such as 200ms, not a percentage")
		}
	case metrics.MetricErrors, metrics.MetricChecks:
		switch {
		case c.Aggregation != aggRate && c.Aggregation != aggCount:
			return fmt.Errorf("the %s metric takes rate (a fraction, such as rate < 1%%) or count, not %s", metric, c.Aggregation)
		case kind == valueDuration:
			return fmt.Errorf("%s %s is compared with a number, not a duration", metric, c.Aggregation)
		case c.Aggregation == aggCount && kind == valuePercent:
			return fmt.Errorf("%s count is a number of requests, not a percentage; use rate for a percentage", metric)
		case c.Aggregation == aggRate && (c.Value < 0 || c.Value > 1):
			return fmt.Errorf("%s rate is a fraction between 0 and 1; write 5%% or 0.05", metric)
		}
	case metrics.MetricFlowDuration:
		switch {
		case !percentile && !slices.Contains([]string{aggMean, aggStdev, aggMin, aggMax, aggCount}, c.Aggregation):
			return fmt.Errorf("the flow_duration metric takes a percentile such as p95, or mean, stdev, min, max or count, not %s", c.Aggregation)
		case c.Aggregation == aggCount && kind != valueNumber:
			return fmt.Errorf("flow_duration count is the number of completed flows, compared with a number")
		case c.Aggregation != aggCount && kind == valuePercent:
			return fmt.Errorf("the flow_duration metric is compared with a duration such as 2s, not a percentage")
		}
	case metrics.MetricFlowFailures:
		switch {
		case c.Aggregation != aggRate && c.Aggregation != aggCount:
			return fmt.Errorf("the flow_failures metric takes rate (the failed flows' share of the flows that ended, such as rate < 10%%) or count (the failed flows), not %s", c.Aggregation)
		case kind == valueDuration:
			return fmt.Errorf("flow_failures %s is compared with a number, not a duration", c.Aggregation)
		case c.Aggregation == aggCount && kind == valuePercent:
			return fmt.Errorf("flow_failures count is a number of flows, not a percentage; use rate for a percentage")
		case c.Aggregation == aggRate && (c.Value < 0 || c.Value > 1):
			return fmt.Errorf("flow_failures rate is a fraction between 0 and 1; write 10%% or 0.1")
		}
	case metrics.MetricRPS:
		switch {
		case c.Aggregation != aggRate && c.Aggregation != aggMean && c.Aggregation != aggCount:
			return fmt.Errorf("the rps metric takes rate, mean or count, not %s", c.Aggregation)
		case kind != valueNumber:
			return fmt.Errorf("the rps metric is compared with a number of requests per second")
		}
	default:
		// A protocol metric is a timing: percentiles and the like compare
		// with durations, rate and count with numbers.
		if kind == valuePercent && c.Aggregation != aggRate {
			return fmt.Errorf("a percentage only makes sense with rate, not %s", c.Aggregation)
		}
	}
	return nil
}

// capitalize upper-cases the first letter of a message.
func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
