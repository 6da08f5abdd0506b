// Package amqp is hload's built-in AMQP 0-9-1 protocol, on
// github.com/rabbitmq/amqp091-go.
//
// A target is one broker connection with a pool of channels, and the
// topology (exchanges, queues, bindings) it declares once at Open and again
// after every reconnect. A request is one of three kinds:
//
//   - publish: one message, timed up to the broker's confirm when confirms
//     are on (the default), or up to the write when they are off;
//   - consume: holds a consumer on a queue for a duration or for N
//     messages, and emits one sample per message with its end-to-end
//     latency, taken from the x-hload-sent-at header publish sets;
//   - rpc: publishes with reply_to and a correlation id and waits for the
//     reply.
//
// When the connection drops, calls in flight fail with the kind
// connection_lost, the client reconnects in the background with backoff,
// and new calls wait for it (up to reconnect_wait) and go on.
package amqp

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/zclconf/go-cty/cty"

	"github.com/hload/hload/protocols"
)

// Name is the protocol's name in a target's protocol attribute.
const Name = "amqp"

// Version is the version of this protocol implementation.
const Version = "0.1.0"

// Defaults applied to attributes the user left out.
const (
	DefaultChannels      = 32
	DefaultHeartbeat     = 10 * time.Second
	DefaultReconnectWait = 30 * time.Second
	DefaultTimeout       = 30 * time.Second
	DefaultPrefetch      = 100
)

// HeaderSentAt is the header publish sets to the send time, in Unix
// nanoseconds (int64), for consume's end-to-end latency.
const HeaderSentAt = "x-hload-sent-at"

// The metrics this protocol emits besides the request sample. Each is one
// sample per event; its value is a time where one applies.
const (
	// MetricConfirmed is a publish the broker acked; value: the time to
	// the ack.
	MetricConfirmed = "amqp_confirmed"
	// MetricNacked is a publish the broker nacked.
	MetricNacked = "amqp_nacked"
	// MetricReturned is a mandatory publish the broker could not route.
	MetricReturned = "amqp_returned"
	// MetricConsumed is a message a consume call received that carries
	// x-hload-sent-at; value: now minus that time (end-to-end latency).
	MetricConsumed = "amqp_consumed"
	// MetricConsumedUntimed is a message received without x-hload-sent-at
	// (published by something else than hload).
	MetricConsumedUntimed = "amqp_consumed_untimed"
	// MetricRedelivered is a received message the broker flagged as
	// redelivered: it may have been counted before.
	MetricRedelivered = "amqp_redelivered"
	// MetricConnectionLost is the connection dropping.
	MetricConnectionLost = "amqp_connection_lost"
	// MetricReconnected is the connection coming back; value: the time it
	// was down.
	MetricReconnected = "amqp_reconnected"
	// MetricBlocked is the broker blocking the connection (a resource
	// alarm); value: how long it stayed blocked.
	MetricBlocked = "amqp_blocked"
)

// The gauges a client reports once per interval.
const (
	GaugeConnected = "amqp_connections_up"      // 1 while the target's connection is open
	GaugeBlocked   = "amqp_connections_blocked" // 1 while the broker blocks it
)

// The error kinds of this protocol, besides the shared timeout,
// interrupted, connection_refused, reset, dns and tls.
const (
	// ErrConnectionLost: the connection dropped while the call was in
	// flight; an unconfirmed publish is not counted as confirmed.
	ErrConnectionLost protocols.ErrorKind = "connection_lost"
	// ErrNotConnected: the call waited reconnect_wait for a connection and
	// none came.
	ErrNotConnected protocols.ErrorKind = "not_connected"
	// ErrChannel: the broker closed the channel; Status is the AMQP reply
	// code, such as 404 (no such queue or exchange) or 406 (precondition
	// failed).
	ErrChannel protocols.ErrorKind = "channel_error"
	// ErrNacked: the broker nacked the publish.
	ErrNacked protocols.ErrorKind = "nacked"
	// ErrReturned: a mandatory publish could not be routed (Status 312).
	ErrReturned protocols.ErrorKind = "returned"
	// ErrRequest: the call's own values are wrong, such as an unknown kind.
	ErrRequest protocols.ErrorKind = "bad_request"
)

// StatusOK is the request sample's status on success: AMQP's reply-success.
const StatusOK = 200

// Protocol is the AMQP protocol. The zero value is not usable; call New.
type Protocol struct {
	info protocols.Info
	// observe, when set (by tests), sees every message a consume call
	// counts, after it was counted.
	observe func(body []byte)
}

var (
	_ protocols.Protocol         = (*Protocol)(nil)
	_ protocols.TargetValidator  = (*Protocol)(nil)
	_ protocols.RequestValidator = (*Protocol)(nil)
)

// emitted lists what the clients emit besides the request sample, so that
// a threshold on any other name fails at load; gauges, their levels.
var (
	emitted = []string{
		MetricConfirmed, MetricNacked, MetricReturned, MetricConsumed, MetricConsumedUntimed,
		MetricRedelivered, MetricConnectionLost, MetricReconnected, MetricBlocked,
	}
	gauges = []string{GaugeConnected, GaugeBlocked}
)

// New returns the AMQP protocol.
func New() *Protocol {
	return &Protocol{info: protocols.Info{
		Name:        Name,
		Version:     Version,
		TargetSpec:  targetSpec(),
		RequestSpec: requestSpec(),
		Metrics:     slices.Clone(emitted),
		Gauges:      slices.Clone(gauges),
	}}
}

// Describe returns the protocol's name, version and schemas.
func (p *Protocol) Describe() protocols.Info { return p.info }

// ValidateTarget checks a target at load (protocols.TargetValidator) with
// parseTarget, the decoder Open uses: a value Open would refuse is a
// diagnostic at its attribute before anything connects.
func (p *Protocol) ValidateTarget(target cty.Value) (string, error) {
	_, err := parseTarget(target)
	if err == nil {
		return "", nil
	}
	attr := protocols.AttrName(err)
	// "amqp: target url ...": the config's diagnostic names the protocol
	// and the place already.
	msg := strings.TrimPrefix(strings.TrimPrefix(err.Error(), "amqp: "), "target ")
	return attr, errors.New(msg)
}

// ValidateRequest checks a request at load (protocols.RequestValidator): a
// kind that does not exist, an attribute its kind does not take or a
// malformed value is a diagnostic at that attribute before any load is
// sent, not an error on every call.
func (p *Protocol) ValidateRequest(r cty.Value) (string, error) {
	_, err := parseRequest(r)
	if err == nil {
		return "", nil
	}
	// The messages read "amqp: request <attribute>...": the config's
	// diagnostic names the protocol and the place already.
	msg := strings.TrimPrefix(err.Error(), "amqp: ")
	attr := ""
	if rest, ok := strings.CutPrefix(msg, "request "); ok {
		name := rest[:strings.IndexFunc(rest+" ", func(c rune) bool { return c == ' ' || c == '[' || c == ':' })]
		if _, known := p.info.RequestSpec[name]; known {
			attr = name
		}
	}
	return attr, errors.New(msg)
}

// The topology is a list of objects rather than nested blocks because only
// attributes cross the plugin boundary, and isolate = true runs a built-in
// protocol behind it.
func targetSpec() hcldec.ObjectSpec {
	return hcldec.ObjectSpec{
		"url":                  &hcldec.AttrSpec{Name: "url", Type: cty.String, Required: true},
		"tls_ca":               &hcldec.AttrSpec{Name: "tls_ca", Type: cty.String},
		"tls_cert":             &hcldec.AttrSpec{Name: "tls_cert", Type: cty.String},
		"tls_key":              &hcldec.AttrSpec{Name: "tls_key", Type: cty.String},
		"tls_server_name":      &hcldec.AttrSpec{Name: "tls_server_name", Type: cty.String},
		"insecure_skip_verify": &hcldec.AttrSpec{Name: "insecure_skip_verify", Type: cty.Bool},
		"channels":             &hcldec.AttrSpec{Name: "channels", Type: cty.Number},
		"heartbeat":            &hcldec.AttrSpec{Name: "heartbeat", Type: cty.String},
		"reconnect_wait":       &hcldec.AttrSpec{Name: "reconnect_wait", Type: cty.String},
		"connection_name":      &hcldec.AttrSpec{Name: "connection_name", Type: cty.String},
		"exchanges":            &hcldec.AttrSpec{Name: "exchanges", Type: cty.DynamicPseudoType},
		"queues":               &hcldec.AttrSpec{Name: "queues", Type: cty.DynamicPseudoType},
		"bindings":             &hcldec.AttrSpec{Name: "bindings", Type: cty.DynamicPseudoType},
	}
}

func requestSpec() hcldec.ObjectSpec {
	return hcldec.ObjectSpec{
		"kind":         &hcldec.AttrSpec{Name: "kind", Type: cty.String, Required: true},
		"exchange":     &hcldec.AttrSpec{Name: "exchange", Type: cty.String},
		"routing_key":  &hcldec.AttrSpec{Name: "routing_key", Type: cty.String},
		"body":         &hcldec.AttrSpec{Name: "body", Type: cty.String},
		"json":         &hcldec.AttrSpec{Name: "json", Type: cty.DynamicPseudoType},
		"headers":      &hcldec.AttrSpec{Name: "headers", Type: cty.Map(cty.String)},
		"content_type": &hcldec.AttrSpec{Name: "content_type", Type: cty.String},
		"message_id":   &hcldec.AttrSpec{Name: "message_id", Type: cty.String},
		"persistent":   &hcldec.AttrSpec{Name: "persistent", Type: cty.Bool},
		"mandatory":    &hcldec.AttrSpec{Name: "mandatory", Type: cty.Bool},
		"confirm":      &hcldec.AttrSpec{Name: "confirm", Type: cty.Bool},
		"queue":        &hcldec.AttrSpec{Name: "queue", Type: cty.String},
		"prefetch":     &hcldec.AttrSpec{Name: "prefetch", Type: cty.Number},
		"auto_ack":     &hcldec.AttrSpec{Name: "auto_ack", Type: cty.Bool},
		"duration":     &hcldec.AttrSpec{Name: "duration", Type: cty.String},
		"messages":     &hcldec.AttrSpec{Name: "messages", Type: cty.Number},
		"reply":        &hcldec.AttrSpec{Name: "reply", Type: cty.String},
		"timeout":      &hcldec.AttrSpec{Name: "timeout", Type: cty.String},
	}
}

// Open validates the target, connects, declares its topology and returns
// its client. A broker that cannot be reached or a topology it refuses
// fails Open, so nothing is sent.
func (p *Protocol) Open(ctx context.Context, target cty.Value) (protocols.Client, error) {
	cfg, err := parseTarget(target)
	if err != nil {
		return nil, err
	}
	return open(ctx, cfg, p.observe)
}
