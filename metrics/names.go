package metrics

// The names of the metrics hload makes itself, as thresholds, sinks and
// the summary give them. They are defined here only; a protocol declares
// the metrics of its own in its package (sse_*, amqp_*).
const (
	// MetricRequest is the main sample of a call: latency, status,
	// bytes, error. Every protocol emits it.
	MetricRequest = "request"
	// MetricTTFB is a call's time to first byte.
	MetricTTFB = "ttfb"
	// MetricConnect is a connection's set-up, only when a call made a new
	// connection.
	MetricConnect = "connect"
	// MetricLatency is a call's response time, from the protocols'
	// request sample: in the open model from the planned start.
	MetricLatency = "latency"
	// MetricErrors is the calls that failed: a rate over the calls, or a
	// count.
	MetricErrors = "errors"
	// MetricRPS is the calls per second.
	MetricRPS = "rps"
	// MetricChecks is the checks that failed, over the checks made.
	MetricChecks = "checks"
	// MetricServiceTime is the time from the actual send to the response,
	// recorded in the open model beside the response time, which runs
	// from the planned start.
	MetricServiceTime = "service_time"
	// MetricStartLateness is how late an open-model iteration started
	// against its planned start: the generator's own scheduling error,
	// plus any wait for a free VU.
	MetricStartLateness = "start_lateness"
	// MetricFlowDuration is the duration of the completed flows; its
	// count is the completed flows.
	MetricFlowDuration = "flow_duration"
	// MetricFlowFailures is the failed flows: its rate is over the flows
	// that ended, its count the failed flows.
	MetricFlowFailures = "flow_failures"
)

// SetupFlow is the flow a scenario's setup is recorded as. A filter on
// any flow ("") leaves it out: logging in once per VU is not one of the
// journeys the mix runs, and would dilute their figures. Only a filter
// that names it matches it.
const SetupFlow = "setup"
