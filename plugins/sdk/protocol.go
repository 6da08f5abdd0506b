package sdk

import (
	"context"

	"github.com/hload/hload/protocols"
	"github.com/hload/hload/protocols/delivery"
)

// The contract a plugin implements is hload's own, the one its built-in
// protocols implement: these are the same types under the SDK's name, so
// a plugin's code imports this package alone, and a value of one is a
// value of the other.

// Protocol is implemented by every protocol: Describe declares its
// schemas, and Open makes a client for each target, before any load is
// sent.
type Protocol = protocols.Protocol

// Client executes the calls of one target. Do is called concurrently by
// many VUs, but never concurrently for the same VU; it emits exactly one
// sample whose Metric is MetricRequest, plus any others.
type Client = protocols.Client

// Info names a protocol and declares its target and request schemas, the
// attributes' docs and defaults, and the metrics and gauges it reports.
type Info = protocols.Info

// AttrDoc describes one attribute of a schema: its description and its
// default, what the protocol receives when the user leaves it out.
type AttrDoc = protocols.AttrDoc

// Call is one request of one iteration, with every expression already
// evaluated.
type Call = protocols.Call

// Sample is one measurement, emitted by Client.Do.
type Sample = protocols.Sample

// ErrorKind classifies a failed call. The empty kind means success; a
// plugin may also name kinds of its own.
type ErrorKind = protocols.ErrorKind

// The error kinds hload's built-in protocols report, which the summary
// counts under errors_by_kind.
const (
	ErrNone              = protocols.ErrNone
	ErrTimeout           = protocols.ErrTimeout
	ErrConnectionRefused = protocols.ErrConnectionRefused
	ErrReset             = protocols.ErrReset
	ErrDNS               = protocols.ErrDNS
	ErrTLS               = protocols.ErrTLS
	ErrProtocol          = protocols.ErrProtocol
	// ErrInterrupted marks a call cancelled by the end of the run: its
	// ctx is done. Tell it from a server's failure before NetErrorKind.
	ErrInterrupted = protocols.ErrInterrupted
	// ErrIdleClosed marks a request sent on a kept-alive connection that
	// the server had already closed, which failed before any byte of a
	// response.
	ErrIdleClosed = protocols.ErrIdleClosed
)

// The metric names shared by the built-in protocols. Any other name a
// sample carries becomes a metric of its own, listed in Info.Metrics.
const (
	MetricRequest = protocols.MetricRequest // the one sample of every call: latency, status, bytes, error
	MetricTTFB    = protocols.MetricTTFB    // time to first byte
	MetricConnect = protocols.MetricConnect // connection set-up, when a call made a new connection
)

// TargetValidator is an optional ability of a Protocol: it checks a
// target at load, with the decoder Open uses, and names the attribute at
// fault.
type TargetValidator = protocols.TargetValidator

// RequestValidator is an optional ability of a Protocol: it checks a
// request at load, with the decoder Do uses, and names the attribute at
// fault.
type RequestValidator = protocols.RequestValidator

// BodySearcher is an optional ability of a Client: it looks for
// Call.BodyContains as it reads each body and reports in Sample.BodyFound
// what it found, so that hload asks it to keep no body for its checks.
type BodySearcher = protocols.BodySearcher

// BodyScan keeps a response body within Call.MaxBody and looks for
// Call.BodyContains in it as it is read: Reset it with the call, Write
// each piece of the body, and Fill the request sample.
type BodyScan = protocols.BodyScan

// Gauger is an optional ability of a Client that holds levels over time,
// such as open streams; hload reads them once per interval.
type Gauger = protocols.Gauger

// NetErrorKind returns the kind of a connection's error, as the built-in
// protocols classify theirs: ErrDNS, ErrConnectionRefused, ErrTLS, ErrReset
// (an EOF before the answer included), ErrTimeout, else ErrProtocol. Tell
// a call cancelled by the end of the run (ErrInterrupted) first.
func NetErrorKind(err error) ErrorKind { return protocols.NetErrorKind(err) }

// Ending returns a channel that closes when the call's scenario stops
// starting iterations, or nil, which never closes: a call held until then,
// such as a subscription, ends as a success rather than wait to be
// cancelled.
func Ending(ctx context.Context) <-chan struct{} { return protocols.Ending(ctx) }

// Ledger is the run's record of delivery sends, as a subscriber sees it:
// Watch a key once its stream is open, mark each event Received, and
// Settle and Close the watch for the events missed.
type Ledger = delivery.Ledger

// Watch follows one key's sends for a subscriber, from Ledger.Watch.
type Watch = delivery.Watch

// Receipt says what an id a subscriber received was.
type Receipt = delivery.Receipt

// The receipts Watch.Received returns.
const (
	ReceiptUnknown   = delivery.ReceiptUnknown   // not an id sent for the key since the watch began
	ReceiptFirst     = delivery.ReceiptFirst     // expected, and received for the first time
	ReceiptDuplicate = delivery.ReceiptDuplicate // received before
	ReceiptLate      = delivery.ReceiptLate      // received after the watch counted it missed
	// ReceiptEarly: the id's send has not reached the plugin yet; it
	// counts as received if the send arrives within 5 s.
	ReceiptEarly = delivery.ReceiptEarly
)

// LedgerFrom returns the run's delivery ledger, which Open's context and
// every call's carry, or nil when ctx carries none.
func LedgerFrom(ctx context.Context) *Ledger { return delivery.LedgerFrom(ctx) }
