// Package config turns HCL files into a validated, typed test plan. It
// evaluates what is static once, compiles each per-iteration expression
// into the request's evaluator (Request.Eval, EvalHoles), which the core
// calls on each call, and reports every mistake as hcl.Diagnostics with
// the file, line and column. It never starts a run. Evaluation lives here,
// not in core, because the code that checks an expression at load is the
// code that evaluates it: what apply would reject, validate rejects first.
package config

import (
	"path/filepath"
	"regexp"
	"sync"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/zclconf/go-cty/cty"

	"github.com/hload/hload/protocols"
)

// Options are the inputs of Load besides the files.
type Options struct {
	// Protocols supplies the target and request schemas. Required.
	Protocols *protocols.Registry
	// Sinks maps a sink type ("csv") to the schema of its block.
	Sinks map[string]hcldec.ObjectSpec
	// Vars are --var k=v overrides; they win over HLOAD_VAR_k and defaults.
	Vars map[string]string
	// LookupEnv reads the environment, for HLOAD_VAR_k and env(). Nil means
	// an empty environment.
	LookupEnv func(string) (string, bool)
	// DemoURL is called when a config uses demo_url(), at most once per Load.
	// The CLI starts the embedded demo target there; validate and plan pass
	// a function that starts nothing. Nil makes demo_url() a diagnostic.
	DemoURL func() (string, error)
	// Plugins is called once, after the plugin blocks are decoded and
	// before the targets, when the config declares plugins. It returns
	// Protocols extended with the plugins' protocols, each under its
	// block's name, so that targets and requests are checked against the
	// plugins' own schemas before any load is sent. A plugin it could not
	// provide is reported in its diagnostics, and left out of the registry;
	// targets of that protocol are then not checked further. The CLI
	// launches the plugin binaries here. Nil makes a plugin block a
	// diagnostic.
	Plugins func(decls []*Plugin) (*protocols.Registry, hcl.Diagnostics)
	// FixedDraws makes every random function draw from a fixed seed, also
	// in values drawn once per run such as a local's, so that loading the
	// same files always gives the same verdict. It is for the commands
	// that run nothing (validate, plan): a Test loaded with it must not be
	// run, as its draws would repeat from run to run and its generator is
	// not safe for the VUs' concurrent calls. A request's per-iteration
	// values are checked with fixed draws either way.
	FixedDraws bool
}

// Test is a loaded, validated test.
type Test struct {
	Dir        string               // folder of the first file; file() is confined to it
	Files      map[string]*hcl.File // every parsed file, for rendering diagnostics
	Targets    []*Target
	Scenarios  []*Scenario
	Thresholds []*Threshold
	Sinks      []*Sink
	Feeders    []*Feeder // data blocks, in file order
	Plugins    []*Plugin // plugin blocks, in file order

	// secrets are the sensitive strings Redact replaces, longest first;
	// sensitiveVars the sensitive variables, by name (see sensitive.go).
	secrets       []string
	sensitiveVars map[string]bool
}

// Plugin is a plugin block: an external protocol binary whose protocol is
// named after the block.
type Plugin struct {
	Name string
	// Source is the binary's path as written, relative to the folder of
	// the file that declares the block; empty means search for it
	// (HLOAD_PLUGIN_PATH, then ./plugins/).
	Source string
	// SHA256 is the binary's pinned sum in lower-case hex, or empty.
	SHA256    string
	DeclRange hcl.Range
}

// Dir is the folder of the file that declares the plugin, which a
// relative Source is taken from.
func (p *Plugin) Dir() string { return filepath.Dir(p.DeclRange.Filename) }

// Target is a target block, decoded with its protocol's TargetSpec.
type Target struct {
	Name     string
	Protocol string
	Config   cty.Value // conforms to the protocol's TargetSpec; plain (unmarked)
	// Isolate runs a built-in protocol in its own process, through the
	// plugin boundary (isolate = true). Only built-ins have it: a plugin's
	// target runs in its plugin's process anyway, so the attribute is a
	// diagnostic there.
	Isolate bool
	// MaxBody is the target's max_body, the most of a response body kept
	// for the captures that read it; 0 when the target does not set it.
	MaxBody   int64
	DeclRange hcl.Range
}

// Scenario is a scenario block.
type Scenario struct {
	Name         string
	Executor     Executor
	ThinkTime    ThinkTime
	GracefulStop time.Duration // default 30s
	// Requests are all the scenario's request blocks: its setup's steps,
	// its flows' steps and its bare requests, in file order. Their names
	// are unique within the scenario, so each has a series of its own.
	Requests []*Request
	// Setup is the setup block: steps each VU runs once, in order, before
	// its first iteration; nil when there is none. Its Name is "setup".
	Setup *Flow
	// Mix is what an iteration picks from, by weight: the flow blocks and
	// the bare requests, each bare request a flow of one step (Single).
	Mix       []*Flow
	DeclRange hcl.Range
	// VUsRange is the attribute that sets how many VUs the scenario may
	// run at once (vus, stages, max_vus, or the rate its default pool is
	// sized for), for messages about them; DeclRange when none is set.
	VUsRange hcl.Range
}

// Flow is a flow block: steps one iteration runs in order. A bare request
// in a scenario is a Flow too, Single and of one step, so the core runs
// every iteration the same way.
type Flow struct {
	Name   string
	Weight int // positive; a Single flow's is its request's
	// ThinkTime is the pause between two steps (not after the last); zero
	// means none.
	ThinkTime ThinkTime
	Steps     []*Request // at least one
	// Single marks a bare request: its figures are its request's, and no
	// flow figures are recorded for it.
	Single    bool
	DeclRange hcl.Range
}

// ThinkTime is the pause after each iteration: fixed when Min == Max,
// otherwise uniform in [Min, Max].
type ThinkTime struct {
	Min, Max time.Duration
}

// Executor is one of the executor configs below.
type Executor interface {
	// Name is the executor's HCL name, such as "ramping-vus".
	Name() string
}

// ConstantVUs runs VUs VUs in a loop for Duration.
type ConstantVUs struct {
	VUs      int
	Duration time.Duration
}

// Stage is one linear ramp: reach Target over Duration.
type Stage struct {
	Duration time.Duration
	Target   int
}

// RampingVUs ramps linearly from StartVUs through Stages.
type RampingVUs struct {
	StartVUs int
	Stages   []Stage
}

// Iterations is a JMeter thread group: VUs VUs started evenly over RampUp,
// each running Iterations iterations. MaxDuration, when not zero, bounds it.
type Iterations struct {
	VUs         int
	Iterations  int
	RampUp      time.Duration
	MaxDuration time.Duration
}

// ConstantArrivalRate starts Rate iterations per TimeUnit for Duration,
// whatever the target's latency (the open model). VUs come from a pool of
// PreAllocatedVUs that grows up to MaxVUs; an iteration with no free VU is
// dropped and counted.
type ConstantArrivalRate struct {
	Rate            float64
	TimeUnit        time.Duration // default 1s
	Duration        time.Duration
	PreAllocatedVUs int // default: see the config docs; never above MaxVUs
	MaxVUs          int // default: enough for iterations of up to 1 s at the peak rate
	// MaxVUsDefault says max_vus was not set: MaxVUs is the default,
	// which the run may lower to fit the machine (core.FitDefaults).
	MaxVUsDefault bool
	// MaxQueueWait is how long an iteration may wait for a VU when all
	// MaxVUs are busy; it is dropped after that. 0 drops it at once.
	MaxQueueWait time.Duration
}

// RateStage is one linear ramp of the arrival rate: reach Target
// iterations per TimeUnit over Duration.
type RateStage struct {
	Duration time.Duration
	Target   float64
}

// RampingArrivalRate ramps the arrival rate linearly from StartRate through
// Stages, each rate per TimeUnit.
type RampingArrivalRate struct {
	StartRate       float64
	TimeUnit        time.Duration // default 1s
	Stages          []RateStage
	PreAllocatedVUs int
	MaxVUs          int
	MaxVUsDefault   bool
	MaxQueueWait    time.Duration
}

// Name implements Executor.
func (ConstantArrivalRate) Name() string { return "constant-arrival-rate" }

// Name implements Executor.
func (RampingArrivalRate) Name() string { return "ramping-arrival-rate" }

// Name implements Executor.
func (ConstantVUs) Name() string { return "constant-vus" }

// Name implements Executor.
func (RampingVUs) Name() string { return "ramping-vus" }

// Name implements Executor.
func (Iterations) Name() string { return "iterations" }

// Request is a request block. Attributes that use no per-iteration value
// were evaluated at load; the rest are evaluated by Value per iteration.
type Request struct {
	Name     string
	Target   string // resolved: never empty after Load
	Protocol string // the target's protocol
	Weight   int    // positive; 1 for a step of a setup or a flow, which has none
	Checks   []Check
	// Captures are the capture block's values, taken from a successful
	// response into the VU's vu.vars, in file order.
	Captures []Capture
	// ContinueOnFailure (on_failure = "continue") lets a flow go on to its
	// next step when this step fails; by default the flow stops there.
	ContinueOnFailure bool
	// MaxBody is the most of a response body kept for the captures that
	// read it (json, regex), in bytes: the request's max_body, else its
	// target's, else DefaultMaxBody. A check's body_contains reads the
	// whole body as it streams, whatever its length.
	MaxBody   int64
	DeclRange hcl.Range

	static  map[string]cty.Value // attributes evaluated at load (nulls filled in)
	dynamic []dynamicAttr        // attributes evaluated per iteration, in key order
	scratch sync.Pool            // maps of attributes for Eval, see attrs
	types   map[string]cty.Type  // attribute types from the RequestSpec
	base    *hcl.EvalContext     // var, local and functions
	value   cty.Value            // the whole object when there is nothing dynamic

	scenario    string        // the scenario's name
	scenarioVal cty.Value     // scenario = { name } for Value, built once
	usesVU      bool          // a dynamic attribute uses vu; Value skips building it otherwise
	usesVars    bool          // a dynamic attribute reads vu.vars; Value skips building it otherwise
	vars        *varScope     // while loading: what vu.vars may hold here
	feeders     []*Feeder     // the data blocks the dynamic attributes use
	extra       requestExtras // let and delivery; see request.go
}

// Iteration carries the per-iteration values an expression may use.
type Iteration struct {
	VU        uint64 // vu.id
	Iteration uint64 // vu.iteration
	Scenario  string // scenario.name
	// Data holds this iteration's row of each feeder the request uses,
	// keyed by the data block's name, as returned by Feeder.Row.
	Data map[string]cty.Value
	// Vars are the values the VU captured so far, read as vu.vars.<name>.
	// A request that reads one is evaluated only after a capture set it.
	Vars map[string]cty.Value
}

// CaptureSource is where a capture reads its value from.
type CaptureSource string

// The capture functions.
const (
	CaptureJSON   CaptureSource = "json"   // json("items.0.id"): a gjson path into the body
	CaptureRegex  CaptureSource = "regex"  // regex("id=(\\d+)"): the first group, or the whole match
	CaptureHeader CaptureSource = "header" // header("Location"), any case
	CaptureCookie CaptureSource = "cookie" // cookie("session"), from the response's Set-Cookie
	CaptureStatus CaptureSource = "status" // status(): the protocol status
)

// Capture is one attribute of a request's capture block, such as
// token = json("token"). Its argument is a constant, checked at load.
type Capture struct {
	Name   string // the vu.vars name
	Source CaptureSource
	Arg    string         // the path, pattern or name; "" for status
	Regexp *regexp.Regexp // compiled, for CaptureRegex
	// DeclRange is the attribute, for messages.
	DeclRange hcl.Range
}

// NeedsBody reports whether a capture of r reads the response body.
func (r *Request) NeedsBody() bool {
	for _, c := range r.Captures {
		if c.Source == CaptureJSON || c.Source == CaptureRegex {
			return true
		}
	}
	return false
}

// NeedsHeaders reports whether a capture of r reads the response headers.
func (r *Request) NeedsHeaders() bool {
	for _, c := range r.Captures {
		if c.Source == CaptureHeader || c.Source == CaptureCookie {
			return true
		}
	}
	return false
}

// Check is a check block inside a request. A failed check is counted apart
// from errors.
type Check struct {
	Status       []int  // allowed statuses; empty means any
	BodyContains string // required substring of the body; empty means none
	DeclRange    hcl.Range
}

// Threshold is a threshold block.
type Threshold struct {
	Metric    string // latency | errors | rps | checks | a protocol metric such as ttfb
	Scenario  string // optional filter
	Request   string // optional filter
	Flow      string // optional filter, for the flow metrics
	Condition Condition
	Abort     bool
	DeclRange hcl.Range
}

// Condition is a parsed threshold condition such as "p95 < 200ms".
type Condition struct {
	Text        string  // as written
	Aggregation string  // p50 ... p999 (any pNN or pNN.N), mean, stdev, min, max, rate, count
	Percentile  float64 // for pNN aggregations: 95, 99.9 ...
	Op          string  // < <= > >= == !=
	Value       float64 // durations are in milliseconds; rates are fractions (1% = 0.01)
	IsDuration  bool
}

// Sink is a sink block, decoded with the sink type's schema.
type Sink struct {
	Type      string
	Config    cty.Value // plain: sensitive values are unmarked
	DeclRange hcl.Range
	// sensitive are the paths in Config of the values that were
	// sensitive.
	sensitive []cty.Path
}

// Sensitive reports whether a value of the attribute attr of the sink's
// Config was sensitive, such as a tag set from env(): a sink that stores
// it in clear refuses it.
func (s *Sink) Sensitive(attr string) bool {
	for _, p := range s.sensitive {
		if len(p) == 0 {
			continue
		}
		if step, ok := p[0].(cty.GetAttrStep); ok && step.Name == attr {
			return true
		}
	}
	return false
}
