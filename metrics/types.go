// Package metrics folds samples into per-interval HDR histograms and counters
// per series (scenario, request), and turns them into the figures sinks and
// thresholds read. It keeps no per-sample memory.
package metrics

import (
	"encoding/json"
	"time"
)

// RunInfo describes a run to the sinks when it starts.
type RunInfo struct {
	RunID     string
	Version   string
	Files     []string
	Variables map[string]string // the values given with --var
	Started   time.Time
	Scenarios []ScenarioInfo
}

// ScenarioInfo names a scenario, its executor and its model.
type ScenarioInfo struct {
	Name     string
	Executor string // constant-vus, ramping-vus, ...
	Model    string // closed | open
	Requests []string
}

// LatencyFigures are latency statistics in milliseconds.
type LatencyFigures struct {
	Min   float64 `json:"min"`
	Mean  float64 `json:"mean"`
	Stdev float64 `json:"stdev"`
	P50   float64 `json:"p50"`
	P90   float64 `json:"p90"`
	P95   float64 `json:"p95"`
	P99   float64 `json:"p99"`
	P999  float64 `json:"p999"`
	Max   float64 `json:"max"`
}

// ChecksFigures count check outcomes.
type ChecksFigures struct {
	Passed int64 `json:"passed"`
	Failed int64 `json:"failed"`
}

// RequestFigures are the figures of one series over an interval or a run.
// Count is every call that was sent, Errors among them.
type RequestFigures struct {
	Count         int64            `json:"count"`
	Errors        int64            `json:"errors"`
	ErrorRate     float64          `json:"error_rate"` // Errors / Count, 0 when Count is 0
	RPS           float64          `json:"rps"`        // Count / the interval's or run's length
	Latency       LatencyFigures   `json:"latency_ms"`
	BytesSent     int64            `json:"bytes_sent"`
	BytesReceived int64            `json:"bytes_received"`
	Status        map[string]int64 `json:"status"`         // "200" -> count; never nil
	ErrorsByKind  map[string]int64 `json:"errors_by_kind"` // "timeout" -> count; never nil
	Checks        ChecksFigures    `json:"checks"`
	// ErrorMessages are the first distinct messages (up to
	// MessagesPerKind) of each error kind, saying why calls failed; in the
	// summary only, and only for kinds whose calls gave a reason.
	ErrorMessages map[string][]string `json:"error_messages,omitempty"`
	// Metrics are the request's other metrics, such as ttfb, or
	// service_time in the open model: over the run in the summary, over
	// the interval in a snapshot (only those with samples in it).
	Metrics map[string]MetricFigures `json:"metrics,omitempty"`
}

// MetricFigures summarise one protocol metric other than the request
// latency, such as ttfb or connect, in milliseconds. In JSON the latency
// figures sit beside count, not nested, and a count (CountOnly) has none.
type MetricFigures struct {
	Count int64   `json:"count"`
	Rate  float64 `json:"rate"` // Count / the interval's or run's length
	LatencyFigures
}

// CountOnly reports whether the metric counts events rather than timing
// them, such as sse_events or sse_events_missed: its samples carry no
// time, so its time figures are all 0 and mean nothing. It has no
// percentiles in the summary, on screen or in the summary JSON.
func (m MetricFigures) CountOnly() bool {
	return m.Count > 0 && m.Max == 0
}

// MarshalJSON writes a count as its count and rate only, and any other
// metric with its time figures beside them.
func (m MetricFigures) MarshalJSON() ([]byte, error) {
	if m.CountOnly() {
		return json.Marshal(struct {
			Count int64   `json:"count"`
			Rate  float64 `json:"rate"`
		}{m.Count, m.Rate})
	}
	type figures MetricFigures // without this method
	return json.Marshal(figures(m))
}

// ErrEval marks a call whose request's expressions failed to evaluate:
// nothing was sent.
const ErrEval ErrorKind = "eval"

// SentNothing reports whether a request sample is a call that sent
// nothing: its expressions failed (ErrEval), or the protocol refused its
// values before sending (ErrProtocol with no byte sent, received or
// status). Such a call counts in the count and the errors, but it has no
// latency to measure, so it is kept out of the latency figures.
func SentNothing(smp *Sample) bool {
	switch smp.Error {
	case ErrEval:
		return true
	case ErrProtocol:
		return smp.BytesSent == 0 && smp.BytesReceived == 0 && smp.Status == 0
	}
	return false
}

// FlowFigures are the figures of one flow over an interval or a run. A
// flow is counted when it ends: completed when every step succeeded,
// failed when a step failed (whether the flow stopped there or went on).
type FlowFigures struct {
	Count       int64   `json:"count"` // flows that ended: Completed + Failed
	Completed   int64   `json:"completed"`
	Failed      int64   `json:"failed"`
	FailureRate float64 `json:"failure_rate"` // Failed / Count, 0 when Count is 0
	Rate        float64 `json:"rate"`         // Count / the interval's or run's length
	// Duration is flow_duration over the completed flows: from the first
	// step's send (the planned start, in the open model) to the end of
	// the last step, the think time between steps included.
	Duration LatencyFigures `json:"duration_ms"`
	// FailedByKind counts the failed flows by the error kind of the step
	// that failed them ("capture", "http_5xx", ...); never nil.
	FailedByKind map[string]int64 `json:"failed_by_kind"`
}

// FlowSeriesFigures are one flow's figures over one interval.
type FlowSeriesFigures struct {
	Scenario string
	Flow     string
	FlowFigures
}

// SeriesFigures are one series' figures over one interval.
type SeriesFigures struct {
	Scenario string
	Request  string
	RequestFigures
}

// Snapshot is what the aggregator hands every sink once per interval.
type Snapshot struct {
	Start time.Time // start of the interval
	End   time.Time // end of the interval, when its figures were taken
	// RateStart is where the rates (RPS) of the series begin. It is Start,
	// except in the run's last snapshot when that is shorter than the
	// interval: calls that end with the run (held streams, the graceful
	// stop) often finish a few milliseconds after the last tick, and their
	// count over those milliseconds would read as a burst of thousands per
	// second. Its rates then run from the previous snapshot's start, over
	// the counts of both, so they stay a real rate over a real length; its
	// counts are its own, so counts still add up over the snapshots.
	RateStart time.Time
	// Final marks the run's last snapshot.
	Final   bool
	Elapsed time.Duration // since the run started, at End
	Series  []SeriesFigures
	// Flows are the flows' figures over the interval, sorted by scenario
	// then flow; a scenario's setup is its flow "setup". Nil when the
	// test has no flow and no setup.
	Flows   []FlowSeriesFigures
	VUs     map[string]int   // active VUs per scenario at End
	Dropped map[string]int64 // dropped iterations per scenario in this interval
	// Iterations are the iterations that ended per scenario in this
	// interval.
	Iterations map[string]int64
	// Gauges are the levels the protocols hold at End, such as
	// sse_open_streams, by name; nil when no client reports any.
	Gauges map[string]int64
	// Capacity is the step each capacity-search scenario is at; nil
	// when there is none.
	Capacity map[string]CapacityProgress
	// Warnings are the problems found since the last snapshot (a data
	// feeder ran out, a request failed every time so far), said once as
	// they happen; the summary repeats those that still hold.
	Warnings []string
	// GeneratorCPU is the CPU hload (its plugin processes included) used
	// over the interval, as a fraction of the cores it may use; NaN where
	// it cannot read its own CPU time.
	GeneratorCPU float64
	// SoFar is the run so far: the summary as it would read if the run
	// ended at End, thresholds included. Only when a sink asks for it
	// (core.Watcher); nil otherwise.
	SoFar *Summary
}

// Summary is the machine-readable result of a run, written by
// --summary-export and handed to every sink's Close.
type Summary struct {
	HloadVersion string    `json:"hload_version"`
	RunID        string    `json:"run_id"`
	Started      time.Time `json:"started"`
	Ended        time.Time `json:"ended"`
	DurationS    float64   `json:"duration_s"`
	Passed       bool      `json:"passed"`
	Interrupted  bool      `json:"interrupted"`       // SIGINT/SIGTERM stopped the run
	Aborted      string    `json:"aborted,omitempty"` // the threshold that aborted the run
	// Failed is the runtime failure that ended the run early, such as a
	// plugin that crashed, with the plugin's last stderr lines.
	Failed     string                      `json:"failed,omitempty"`
	Scenarios  map[string]*ScenarioSummary `json:"scenarios"`
	Metrics    map[string]MetricFigures    `json:"metrics"`
	Thresholds []ThresholdResult           `json:"thresholds"`
	// Warnings are problems that did not stop the run but that a reader
	// of the figures must know: expressions that failed at run time, a
	// request that failed every time, a data feeder that ran out, calls
	// that ignored cancellation, hload near its own limit.
	Warnings []string `json:"warnings,omitempty"`
	// SinkErrors are the failures of sinks (a CSV file that could not be
	// written, an InfluxDB that stopped answering): results were lost, so
	// Passed is false and hload exits 1.
	SinkErrors []string `json:"sink_errors,omitempty"`
	// GaugesMax is the highest level of each gauge seen at the end of an
	// interval, such as the most SSE streams open at once.
	GaugesMax map[string]int64 `json:"gauges_max,omitempty"`
	// Generator is what hload saw of its own use of the CPU during the
	// run, and whether it was the bottleneck; present in every run.
	Generator *GeneratorFigures `json:"generator,omitempty"`
	// Files are the test files, as given; Variables the values given
	// with --var.
	Files     []string          `json:"files,omitempty"`
	Variables map[string]string `json:"variables,omitempty"`
	// Series are the run's figures interval by interval, for the HTML
	// report; written by --summary-export and the html sink.
	Series *IntervalSeries `json:"series,omitempty"`
	// Mergeable is what `hload merge` needs to fold the exports of a
	// run's segments into one summary; written by --summary-export.
	Mergeable *Mergeable `json:"mergeable,omitempty"`
}

// GeneratorFigures are hload's own CPU use over a run, measured once per
// interval from the process's counters against the wall clock, and the
// verdict drawn from them. A saturated generator does not fail the run:
// it says that the figures measured hload as much as the server.
type GeneratorFigures struct {
	// Saturated is true when hload was the bottleneck for a sustained
	// stretch of the run (or for all of a short one): it used nearly all
	// the CPU it may use, or used and waited on the run queue for nearly
	// all of it, or open-model starts were late while it was busy.
	Saturated bool `json:"saturated"`
	// Reason says what made it saturated; empty when it was not.
	Reason string `json:"reason,omitempty"`
	// CPUCoresAvailable is the cores hload may use: GOMAXPROCS, or fewer
	// when its CPU affinity allows fewer.
	CPUCoresAvailable int `json:"cpu_cores_available"`
	// CPUSeconds is the user and system CPU time of the process over the
	// run, its plugin processes' included.
	CPUSeconds float64 `json:"cpu_seconds"`
	// PluginCPUSeconds is the part of CPUSeconds that hload's protocol
	// plugin processes used; absent without plugin processes (Linux
	// only). Their CPU and run-queue wait count in every figure here: a
	// plugin process works for the generator on the same cores.
	PluginCPUSeconds *float64 `json:"plugin_cpu_seconds,omitempty"`
	// CPUUtilizationMax and CPUUtilizationMean are the CPU time used as
	// a fraction of the available cores' time: the highest of an
	// interval, and over the whole run. 0 where hload cannot read its own
	// CPU time (Windows).
	CPUUtilizationMax  float64 `json:"cpu_utilization_max"`
	CPUUtilizationMean float64 `json:"cpu_utilization_mean"`
	// RunQueueWaitShareMax is the highest time its threads spent waiting
	// for a CPU in an interval, as a fraction of the available cores'
	// time; nil where it is not measured (outside Linux).
	RunQueueWaitShareMax *float64 `json:"runqueue_wait_share_max,omitempty"`
	// Intervals is how many stretches were judged (intervals shorter than
	// 100 ms or half the snapshot interval are folded into the next), and
	// SaturatedIntervals how many of them were saturated.
	Intervals          int `json:"intervals"`
	SaturatedIntervals int `json:"saturated_intervals"`
}

// ScenarioSummary is one scenario in the Summary.
type ScenarioSummary struct {
	Executor          string                     `json:"executor"`
	Model             string                     `json:"model"`
	Iterations        int64                      `json:"iterations"`
	DroppedIterations int64                      `json:"dropped_iterations"`
	Requests          map[string]*RequestFigures `json:"requests"`
	// Flows are the scenario's flow blocks, and its setup as "setup";
	// absent when it has neither.
	Flows map[string]*FlowFigures `json:"flows,omitempty"`
	// Capacity is what a capacity-search scenario found.
	Capacity *CapacitySummary `json:"capacity,omitempty"`
}

// ThresholdResult is one threshold's verdict.
type ThresholdResult struct {
	Metric    string  `json:"metric"`
	Scenario  string  `json:"scenario,omitempty"`
	Request   string  `json:"request,omitempty"`
	Flow      string  `json:"flow,omitempty"`
	Condition string  `json:"condition"`
	Value     float64 `json:"value"`
	Passed    bool    `json:"passed"`
	Abort     bool    `json:"abort,omitempty"`
}

// RawRecord is one call, for sinks that keep every request.
type RawRecord struct {
	Time          time.Time
	Scenario      string
	Request       string
	VU            uint64
	Iteration     uint64
	Status        int
	Latency       time.Duration
	BytesSent     int64
	BytesReceived int64
	Error         string
}
