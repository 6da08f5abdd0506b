package metrics

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
)

// IntervalSeries are a run's figures interval by interval, for the HTML report:
// what the summary holds over the whole run, over time. A long run's
// intervals are merged into fewer points, never dropped, so that the
// series stay small: Merged says how many intervals one point holds.
type IntervalSeries struct {
	// IntervalS is the snapshot interval, in seconds.
	IntervalS float64 `json:"interval_s"`
	// Merged is how many intervals each point holds (1, 2, 4, ...); the
	// last point may hold fewer.
	Merged int `json:"merged"`
	// TimeS is the end of each point, in seconds since the run started.
	// Every column below has one value per point.
	TimeS     Column           `json:"time_s"`
	Scenarios []ScenarioSeries `json:"scenarios"`
	// Gauges are the protocols' levels at the end of each point, such as
	// sse_open_streams, by name; omitted when no client reports any.
	Gauges map[string]Column `json:"gauges,omitempty"`
	// GeneratorCPU is the CPU hload used at each point, its plugin
	// processes' included, as a fraction of the cores it may use (1 is
	// all of them); null where it cannot read its own CPU time.
	GeneratorCPU Column `json:"generator_cpu,omitempty"`
	// Events are the warnings said during the run (a data feeder ran out,
	// hload is saturated), each at the time it was said.
	Events []SeriesEvent `json:"events,omitempty"`
}

// ScenarioSeries are one scenario's series.
type ScenarioSeries struct {
	Name     string `json:"name"`
	Executor string `json:"executor"`
	Model    string `json:"model"`
	// StagesS are the times, in seconds since the start, where the
	// scenario's schedule bends: the ends of its stages.
	StagesS []float64 `json:"stages_s"`
	// Planned is what the schedule asks for at each point: VUs in the
	// closed model (at the point's end), iterations per second in the
	// open model (the mean over the point).
	Planned Column `json:"planned"`
	// VUs are the active VUs at the end of each point.
	VUs Column `json:"vus"`
	// IterationsPerS are the iterations that ended, per second: the
	// achieved rate.
	IterationsPerS Column `json:"iterations_per_s"`
	// DroppedPerS are the open model's dropped iterations per second.
	DroppedPerS Column          `json:"dropped_per_s"`
	Requests    []RequestSeries `json:"requests"`
}

// RequestSeries are one request's series. A point with no call has 0
// requests/s and no latency (null).
type RequestSeries struct {
	Name       string `json:"name"`
	RPS        Column `json:"rps"`
	ErrorsPerS Column `json:"errors_per_s"`
	P50        Column `json:"latency_p50_ms"`
	P95        Column `json:"latency_p95_ms"`
	P99        Column `json:"latency_p99_ms"`
	// Metrics are the request's protocol metrics (sse_delivery_latency,
	// sse_events_missed, amqp_confirmed, ...), those that had samples.
	Metrics []MetricSeries `json:"metrics,omitempty"`
}

// MetricSeries are one protocol metric of one request over time.
type MetricSeries struct {
	Name string `json:"name"`
	// PerS is the metric's samples per second: events, missed events,
	// confirms.
	PerS Column `json:"per_s"`
	// The percentiles are omitted for a metric that only counts (every
	// sample 0, such as sse_events_missed).
	P50 Column `json:"p50_ms,omitempty"`
	P95 Column `json:"p95_ms,omitempty"`
	P99 Column `json:"p99_ms,omitempty"`
}

// SeriesEvent is a warning said during the run, at TimeS seconds since
// the start.
type SeriesEvent struct {
	TimeS float64 `json:"time_s"`
	Text  string  `json:"text"`
}

// Column is one value per point. NaN stands for no value, written as null
// in JSON; values are written with three decimals at most, a microsecond
// for milliseconds, which keeps a long run's export small.
type Column []float64

// MarshalJSON writes c as an array of numbers and nulls.
func (c Column) MarshalJSON() ([]byte, error) {
	if c == nil {
		return []byte("[]"), nil
	}
	b := make([]byte, 0, 2+6*len(c))
	b = append(b, '[')
	for i, v := range c {
		if i > 0 {
			b = append(b, ',')
		}
		switch {
		case math.IsNaN(v):
			b = append(b, "null"...)
		case math.IsInf(v, 0):
			// JSON has no infinity; no figure here is one, but a file
			// must be written whatever comes.
			b = append(b, "null"...)
		default:
			b = strconv.AppendFloat(b, math.Round(v*1000)/1000, 'f', -1, 64)
		}
	}
	return append(b, ']'), nil
}

// UnmarshalJSON reads an array of numbers and nulls; null reads as NaN.
func (c *Column) UnmarshalJSON(data []byte) error {
	if bytes.Equal(bytes.TrimSpace(data), []byte("null")) {
		*c = nil
		return nil
	}
	var raw []*float64
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	out := make(Column, len(raw))
	for i, p := range raw {
		out[i] = math.NaN()
		if p != nil {
			out[i] = *p
		}
	}
	*c = out
	return nil
}
