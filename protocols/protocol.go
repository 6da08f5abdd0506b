// Package protocols defines the contract between the core and every protocol,
// built-in or plugin: the core evaluates HCL and hands a protocol plain values;
// the protocol executes the call and emits samples.
package protocols

import (
	"context"
	"time"

	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/hload/hload/internal/named"
	"github.com/hload/hload/metrics"
	"github.com/zclconf/go-cty/cty"
)

// Info describes a protocol: its name, version and the schemas of its target
// and request blocks. The core decodes and validates HCL against these
// schemas, so a protocol never sees an expression.
type Info struct {
	Name    string
	Version string
	// TargetSpec decodes a target block's protocol attributes. Only
	// *hcldec.AttrSpec entries are allowed: a plugin's schemas cross the
	// wire as attributes (the SDK refuses a block spec at Describe), and
	// the built-ins keep to the same rule, so that any protocol can run
	// as a plugin (isolate = true).
	TargetSpec hcldec.ObjectSpec
	// RequestSpec lists a request block's protocol attributes. Only
	// *hcldec.AttrSpec entries are allowed, because each attribute may be
	// evaluated per iteration.
	RequestSpec hcldec.ObjectSpec
	// Metrics names the metrics this protocol's samples may carry besides
	// MetricRequest. A threshold on a metric that no protocol of the test
	// produces is rejected at load.
	Metrics []string
	// Gauges names the levels its clients report through Gauger. They are
	// shown per interval and at their peak, but thresholds, which judge
	// samples, do not watch them: a threshold on a gauge is rejected at
	// load rather than passing on a value of 0.
	Gauges []string
	// TargetDocs and RequestDocs describe attributes of TargetSpec and
	// RequestSpec by name, and give them defaults. Optional; honoured for
	// plugins (the SDK applies the defaults).
	TargetDocs, RequestDocs map[string]AttrDoc
}

// Protocol is implemented by every protocol.
type Protocol interface {
	Describe() Info
	// Open is called once per target, before any load is sent. target
	// conforms to Info.TargetSpec.
	Open(ctx context.Context, target cty.Value) (Client, error)
}

// Client executes calls against one target. Do is called concurrently by
// many VUs, but never concurrently for the same VU.
type Client interface {
	// Do executes one call and reports what it measured through emit. It
	// emits exactly one sample whose Metric is MetricRequest, plus any
	// number of other samples. emit must not be retained after Do returns.
	Do(ctx context.Context, call Call, emit func(Sample))
	Close() error
}

// Call is one request of one iteration, with every expression already
// evaluated.
type Call struct {
	VU        uint64    // 1-based VU id, dense within a run
	Iteration uint64    // 0-based iteration of that VU
	Planned   time.Time // when the call was planned to start
	// Start is when the core handed the call over, read from the clock
	// just before Do: a protocol may time the call from it instead of
	// reading the clock again (a clock read is a sizeable part of a
	// fast request's own work). Zero when the caller did not read it,
	// as for a plugin's calls, which are timed in the plugin's process:
	// the protocol then reads the clock itself.
	Start time.Time
	// Request is an object conforming to Info.RequestSpec; attributes the
	// user left out are null.
	Request cty.Value
	// KeepBody asks the protocol to fill Sample.Body on the request sample,
	// because a capture (or, for a client that is not a BodySearcher, a
	// check) needs the response body.
	KeepBody bool
	// MaxBody bounds the body kept for KeepBody, in bytes: a protocol that
	// reads a body as it streams keeps its first MaxBody bytes and reads
	// the rest without keeping it, and says in Sample.BodySize how long
	// the body was. 0 sets no bound.
	MaxBody int64
	// BodyContains are substrings that a check looks for in the response
	// body. A client that is a BodySearcher looks for them as it reads
	// the body, kept or not, and says in Sample.BodyFound which it found.
	BodyContains []string
	// KeepHeaders asks the protocol to fill Sample.Headers on the request
	// sample, because a capture reads a response header or cookie. Both
	// are false unless something needs them, so a call that nothing
	// inspects copies nothing.
	KeepHeaders bool
	// Prepared is what the client's Preparer returned for this request,
	// when the request is the same for every call; nil otherwise, and
	// always nil for a client that is not a Preparer. Request is set all
	// the same.
	//
	// For a client that is a Templater, Prepared may instead be what its
	// Template returned for a request evaluated per call: the call's
	// values are then in Holes, and Request is cty.NilVal.
	Prepared any
	// Holes are the values of the template's holes for this call, in
	// the order Templater describes; nil unless Prepared is a template.
	Holes []cty.Value
}

// The metrics every protocol may emit. They are metrics' names, as hload
// makes them; the metrics of one protocol alone are declared in its own
// package (sse_*, amqp_*).
const (
	MetricRequest = metrics.MetricRequest // the main sample of a call: latency, status, bytes, error
	MetricTTFB    = metrics.MetricTTFB    // time to first byte
	MetricConnect = metrics.MetricConnect // connection set-up, only when a new connection was made
)

// ErrorKind classifies a failed call; see metrics.ErrorKind.
type ErrorKind = metrics.ErrorKind

// The error kinds, as metrics defines them. A failed check is not an
// error; it is counted apart.
const (
	ErrNone              = metrics.ErrNone
	ErrTimeout           = metrics.ErrTimeout
	ErrConnectionRefused = metrics.ErrConnectionRefused
	ErrReset             = metrics.ErrReset
	ErrDNS               = metrics.ErrDNS
	ErrTLS               = metrics.ErrTLS
	ErrProtocol          = metrics.ErrProtocol
	ErrInterrupted       = metrics.ErrInterrupted
	ErrIdleClosed        = metrics.ErrIdleClosed
	ErrPanic             = metrics.ErrPanic
)

// TargetValidator is an optional ability of a Protocol: it checks a
// target's values with the same decoder Open uses, so that validate, plan
// and apply reject a bad target before any load is sent. attr names the
// attribute at fault, as in Info.TargetSpec, or is "" for the block as a
// whole.
type TargetValidator interface {
	ValidateTarget(target cty.Value) (attr string, err error)
}

// RequestValidator is an optional ability of a Protocol: it checks a
// request's values with the same decoder its Client.Do uses. The core calls
// it at load for a request's constant values (and the first iteration's
// dynamic ones), so a mistake is reported with the attribute's place
// before any load is sent. attr names the attribute at fault, as in
// Info.RequestSpec.
type RequestValidator interface {
	ValidateRequest(request cty.Value) (attr string, err error)
}

// Preparer is an optional ability of a Client: it renders, once, a
// request whose values are the same for every call (the config knows
// which), so that Do need not decode and encode it again on each. The core
// calls Prepare before any load is sent, for each such request of the
// client's target, and passes what it returned in Call.Prepared with every
// call of that request, along with the same Call.Request. An error leaves
// the request unprepared: Do then reports it per call, as it would have.
type Preparer interface {
	Prepare(request cty.Value) (any, error)
}

// Templater is an optional ability of a Client: it renders once what is
// constant in a request that is evaluated per call, so that a call
// renders only what changed. Building each call's request as one cty
// object, and reading it back attribute by attribute, costs more than
// the values that change.
//
// The core calls Template before any load is sent with the request's
// shape: its value with every part evaluated per call unknown
// (cty.DynamicVal), each a hole. A hole is a whole attribute, or a value
// inside one. Each call then carries what Template returned in
// Call.Prepared and the holes' values in Call.Holes, in the order
// cty.Walk visits the holes in the shape; Call.Request is cty.NilVal. A
// hole's value is what the request's value would hold at that place. An
// error leaves the request to be sent as a whole object per call.
type Templater interface {
	Template(shape cty.Value, holes int) (any, error)
}

// Connector is an optional ability of a Client: it opens VU vu's
// connections to the target before the VU's first call, as that call
// would have. The open model's pool calls it for its pre-allocated VUs
// before the first iteration, and for each VU it grows by before that VU
// takes one, a few VUs at a time: a pool whose VUs each connected on their
// first call would open its connections in one burst when the load
// starts, more than a server's accept queue takes, and a dropped SYN costs
// the call a second. Connect is never called concurrently with Do for the
// same VU. An error is not the run's: the VU's calls connect again, and
// report what they meet.
type Connector interface {
	Connect(ctx context.Context, vu uint64) error
}

// BodySearcher is an optional ability of a Client: it looks for
// Call.BodyContains in each response body while it reads it, across reads,
// and reports in Sample.BodyFound which it found, so that a check on a
// body of any size costs no memory. SearchesBody says whether it does; a
// client over the plugin wire asks its plugin. The core keeps a body for
// its checks (Call.KeepBody) only from a client that does not search.
type BodySearcher interface {
	SearchesBody() bool
}

// Sample is one measurement, as a protocol's calls emit it: metrics'
// type, which the core folds into the run's figures.
type Sample = metrics.Sample

// Registry maps protocol names to protocols. It is built explicitly by the
// caller; there is no process-wide registry.
type Registry struct {
	set named.Set[Protocol]
}

// protocolName is a protocol's key in a registry.
func protocolName(p Protocol) string { return p.Describe().Name }

// NewRegistry returns a registry holding ps, keyed by their Describe().Name.
func NewRegistry(ps ...Protocol) *Registry {
	return &Registry{set: named.Set[Protocol]{}.With(protocolName, ps...)}
}

// Lookup returns the protocol with the given name.
func (r *Registry) Lookup(name string) (Protocol, bool) { return r.set.Lookup(name) }

// Names returns the registered protocol names, sorted.
func (r *Registry) Names() []string { return r.set.Names() }

// Failer is an optional ability of a Client whose protocol can fail as a
// whole, such as a plugin process that crashed or hangs. The core watches
// Failed until the client's Close has returned, and ends the run with that
// error: samples received so far are kept, and the exit code says the run
// failed. A failure that ends calls should be on Failed before those calls
// return.
type Failer interface {
	Failed() <-chan error
}

// Gauger is an optional ability of a Client that holds levels over time,
// such as the streams an SSE client keeps open. The core reads them once
// per interval into Snapshot.Gauges, adding up the clients that report the
// same name. Gauges must be cheap and safe to call while Do runs.
type Gauger interface {
	Gauges(report func(name string, value int64))
}

// With returns a new registry holding r's protocols plus ps; a protocol in
// ps replaces one of r's with the same name. r is not changed, so the
// built-in registry can be shared while each test adds its plugins.
func (r *Registry) With(ps ...Protocol) *Registry {
	return &Registry{set: r.set.With(protocolName, ps...)}
}
