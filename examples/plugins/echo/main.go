// Command hload-plugin-echo is the smallest complete hload protocol plugin,
// the one docs/plugins.md walks through: a call connects to a TCP echo
// server, sends the request's payload and reads it back. Build it with
//
//	go build -o plugins/hload-plugin-echo ./examples/plugins/echo
package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/zclconf/go-cty/cty"

	"github.com/hload/hload/plugins/sdk"
	"github.com/hload/hload/protocols"
)

func main() { sdk.Serve(echo{}) }

// echo is the protocol. It holds no state: Open builds a client per target.
type echo struct{}

// Describe names the protocol and declares the attributes of its target and
// request blocks. hload validates the HCL against them before any load.
func (echo) Describe() protocols.Info {
	return protocols.Info{
		Name:    "echo",
		Version: "0.1.0",
		TargetSpec: hcldec.ObjectSpec{
			"address": &hcldec.AttrSpec{Name: "address", Type: cty.String, Required: true},
			"timeout": &hcldec.AttrSpec{Name: "timeout", Type: cty.String},
		},
		RequestSpec: hcldec.ObjectSpec{
			"payload": &hcldec.AttrSpec{Name: "payload", Type: cty.String, Required: true},
		},
	}
}

// Open checks a target once, before the run. An error here stops the run
// before any load is sent, so it is the place for mistakes in the config.
func (echo) Open(ctx context.Context, target cty.Value) (protocols.Client, error) {
	address, _ := protocols.StringAttr(target, "address") // required: a string
	if _, _, err := net.SplitHostPort(address); err != nil {
		return nil, fmt.Errorf("echo: address %q must be host:port", address)
	}
	timeout := 5 * time.Second
	s, err := protocols.StringAttr(target, "timeout")
	if err == nil && s != "" { // null when left out
		timeout, err = time.ParseDuration(s)
	}
	if err != nil || timeout <= 0 {
		return nil, fmt.Errorf("echo: timeout %q must be a positive duration such as \"2s\"", s)
	}
	return &client{address: address, timeout: timeout}, nil
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
func (c *client) Do(ctx context.Context, call protocols.Call, emit func(protocols.Sample)) {
	payload, _ := protocols.StringAttr(call.Request, "payload") // required, so set
	reply := make([]byte, len(payload))

	start := time.Now()
	sent, received, err := c.roundTrip(ctx, payload, reply)
	end := time.Now()

	s := protocols.Sample{
		Metric:        protocols.MetricRequest,
		Time:          end,
		Value:         end.Sub(start),
		BytesSent:     int64(sent),
		BytesReceived: int64(received),
	}
	switch {
	case err != nil && ctx.Err() != nil:
		s.Error = protocols.ErrInterrupted // the run ended, not the server
	case err != nil:
		s.Error = protocols.NetErrorKind(err)
	case string(reply) != payload:
		s.Error = protocols.ErrProtocol
	}
	if call.KeepBody {
		s.Body = reply[:received] // a check's body_contains reads it
	}
	emit(s)
}

// roundTrip dials, writes payload and reads len(reply) bytes back. The
// target's timeout bounds the whole; when it passes, or when the end of the
// run cancels ctx, a deadline in the past wakes a blocked write or read.
func (c *client) roundTrip(ctx context.Context, payload string, reply []byte) (sent, received int, err error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	conn, err := c.dialer.DialContext(ctx, "tcp", c.address)
	if err != nil {
		return 0, 0, err
	}
	defer conn.Close()
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
