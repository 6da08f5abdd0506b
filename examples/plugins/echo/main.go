// Command hload-plugin-echo is the smallest complete hload protocol plugin,
// the one docs/plugins.md walks through: a call connects to a TCP echo
// server, sends the request's payload and reads it back. Build it with
//
//	go build -o plugins/hload-plugin-echo ./examples/plugins/echo
package main

import (
	"context"
	"io"
	"net"
	"time"

	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/zclconf/go-cty/cty"

	"github.com/hload/hload/plugins/sdk"
)

func main() { sdk.Serve(echo{}) }

// echo is the protocol. It holds no state: Open builds a client per target.
type echo struct{}

// echo checks its targets and requests at load, with the code Open and Do
// use.
var (
	_ sdk.TargetValidator  = echo{}
	_ sdk.RequestValidator = echo{}
)

// Describe names the protocol and declares the attributes of its target and
// request blocks. hload validates the HCL against them before any load.
func (echo) Describe() sdk.Info {
	return sdk.Info{
		Name:    "echo",
		Version: "0.1.0",
		TargetSpec: hcldec.ObjectSpec{
			"address": &hcldec.AttrSpec{Name: "address", Type: cty.String, Required: true},
			"timeout": &hcldec.AttrSpec{Name: "timeout", Type: cty.String},
		},
		RequestSpec: hcldec.ObjectSpec{
			"payload": &hcldec.AttrSpec{Name: "payload", Type: cty.String},
		},
		// What `hload plugin describe` shows of each attribute. A default
		// is what the protocol receives when the user leaves it out.
		TargetDocs: map[string]sdk.AttrDoc{
			"address": {Description: "The echo server, as host:port."},
			"timeout": {Description: "How long a call may take: a duration or a number of seconds.", Default: cty.StringVal("5s")},
		},
		RequestDocs: map[string]sdk.AttrDoc{
			"payload": {Description: "What a call sends and expects back.", Default: cty.StringVal("ping")},
		},
	}
}

// Open opens a client for a target. hload has already checked the target
// with ValidateTarget; decoding it with the same function here means the
// two can never disagree.
func (echo) Open(ctx context.Context, target cty.Value) (sdk.Client, error) {
	c, err := parseTarget(target)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// ValidateTarget checks a target at load, so that `hload validate` points
// at the attribute at fault, with exit 2, before any load is sent. It
// connects to nothing: the server need not be up to validate a test.
func (echo) ValidateTarget(target cty.Value) (attr string, err error) {
	_, err = parseTarget(target)
	return sdk.AttrName(err), err
}

// ValidateRequest checks a request's payload at load, as Do would. A
// payload known only per iteration is left to Do.
func (echo) ValidateRequest(request cty.Value) (attr string, err error) {
	if !request.IsWhollyKnown() {
		return "", nil
	}
	_, err = parsePayload(request)
	return sdk.AttrName(err), err
}

// parseTarget decodes a target with the SDK's attribute helpers, which
// read a duration as "2s" or as a number of seconds, as hload's own
// protocols do. Their errors, and its own, are *sdk.AttrError values that
// name the attribute at fault.
func parseTarget(target cty.Value) (*client, error) {
	address, err := sdk.StringAttr(target, "address") // required: a string
	if err != nil {
		return nil, err
	}
	if _, _, err := net.SplitHostPort(address); err != nil {
		return nil, sdk.AttrErrorf("address", "%q must be host:port, such as \"127.0.0.1:7007\"", address)
	}
	timeout, err := sdk.DurationAttr(target, "timeout", 5*time.Second)
	if err != nil {
		return nil, err
	}
	return &client{address: address, timeout: timeout}, nil
}

// parsePayload decodes a request. An empty payload would send nothing and
// read nothing back, which measures only the dial.
func parsePayload(request cty.Value) (string, error) {
	payload, err := sdk.StringAttr(request, "payload")
	if err == nil && payload == "" {
		err = sdk.AttrErrorf("payload", "is empty; a call would send nothing")
	}
	return payload, err
}

// client runs the calls of one target. Each call dials its own connection,
// so the client shares nothing between VUs and Do needs no lock.
type client struct {
	address string
	timeout time.Duration
	dialer  net.Dialer
}

// Do makes one call and emits exactly one request sample. The time is taken
// around the I/O only, with time.Now's monotonic clock.
func (c *client) Do(ctx context.Context, call sdk.Call, emit func(sdk.Sample)) {
	payload, err := parsePayload(call.Request)
	if err != nil {
		// A payload that changes per iteration is checked here; the
		// message tells the user why in the summary.
		emit(sdk.Sample{Metric: sdk.MetricRequest, Time: time.Now(), Error: sdk.ErrProtocol, Message: err.Error()})
		return
	}
	reply := make([]byte, len(payload))
	var ends *peer
	if call.KeepHeaders {
		ends = new(peer) // noted only when a capture reads them
	}

	start := time.Now()
	sent, received, err := c.roundTrip(ctx, payload, reply, ends)
	end := time.Now()

	s := sdk.Sample{
		Metric:        sdk.MetricRequest,
		Time:          end,
		Value:         end.Sub(start),
		BytesSent:     int64(sent),
		BytesReceived: int64(received),
	}
	switch {
	case err != nil && ctx.Err() != nil:
		s.Error = sdk.ErrInterrupted // the run ended, not the server
	case err != nil:
		s.Error = sdk.NetErrorKind(err)
	case string(reply) != payload:
		s.Error = sdk.ErrProtocol
	}
	if call.KeepBody {
		s.Body = reply[:received] // a check's body_contains or a capture reads it
	}
	if ends != nil && ends.local != "" {
		// A capture's header("Local-Address") reads them: the port the
		// call used, and the server that answered.
		s.Headers = map[string][]string{"Local-Address": {ends.local}, "Remote-Address": {ends.remote}}
	}
	emit(s)
}

// peer is the two ends of a call's connection.
type peer struct{ local, remote string }

// roundTrip dials, writes payload and reads len(reply) bytes back, and
// notes the connection's ends in ends unless it is nil. The target's
// timeout bounds the whole; when it passes, or when the end of the run
// cancels ctx, a deadline in the past wakes a blocked write or read.
func (c *client) roundTrip(ctx context.Context, payload string, reply []byte, ends *peer) (sent, received int, err error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	conn, err := c.dialer.DialContext(ctx, "tcp", c.address)
	if err != nil {
		return 0, 0, err
	}
	defer conn.Close()
	if ends != nil {
		ends.local, ends.remote = conn.LocalAddr().String(), conn.RemoteAddr().String()
	}
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	sent, err = io.WriteString(conn, payload)
	if err == nil {
		received, err = io.ReadFull(conn, reply)
	}
	return sent, received, err
}

// Close ends the client. Calls hold no connection between them, so there
// is nothing to close; it is safe to call twice.
func (c *client) Close() error { return nil }
