// Package lines is an example hload protocol: a line-oriented TCP protocol
// in which a call sends one line and reads one line back, as a Redis inline
// command or a memcached text command does. It is small on purpose, so that
// a plugin's author can read every part of a real protocol: the schemas,
// one connection per VU, timing around the I/O, and error kinds.
//
// A reply that matches the request's expect attribute, or any reply when
// nothing is expected, has status 200; any other reply has status 500, so
// that hload's checks and thresholds can use it.
package lines

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/zclconf/go-cty/cty"

	"github.com/hload/hload/plugins/sdk"
)

// Name is the protocol's name, as hload shows it in `hload plugin list`.
// A test names the protocol by its plugin block's label.
const Name = "lines"

// Version is the version of this protocol implementation.
const Version = "0.1.0"

// DefaultTimeout bounds a call, dial included, when the target sets no
// timeout.
const DefaultTimeout = 5 * time.Second

// The statuses of a call that got its reply.
const (
	StatusOK       = 200 // the reply matched expect, or nothing was expected
	StatusMismatch = 500 // the reply differed from expect
)

// MaxLine bounds a reply line, newline included. A longer reply is a protocol error, so that a
// server that never sends a newline cannot grow a VU's buffer forever.
const MaxLine = 64 << 10

// Protocol is the lines protocol. Call New.
type Protocol struct {
	info sdk.Info
}

var (
	_ sdk.Protocol         = (*Protocol)(nil)
	_ sdk.TargetValidator  = (*Protocol)(nil)
	_ sdk.RequestValidator = (*Protocol)(nil)
)

// New returns the lines protocol.
func New() *Protocol {
	return &Protocol{info: sdk.Info{
		Name:    Name,
		Version: Version,
		TargetSpec: hcldec.ObjectSpec{
			"address": &hcldec.AttrSpec{Name: "address", Type: cty.String, Required: true},
			"timeout": &hcldec.AttrSpec{Name: "timeout", Type: cty.String},
		},
		RequestSpec: hcldec.ObjectSpec{
			"line":   &hcldec.AttrSpec{Name: "line", Type: cty.String, Required: true},
			"expect": &hcldec.AttrSpec{Name: "expect", Type: cty.String},
		},
		TargetDocs: map[string]sdk.AttrDoc{
			"address": {Description: "The server, as host:port."},
			"timeout": {Description: "How long a call may take, dial included: a duration or a number of seconds; 5s when left out."},
		},
		RequestDocs: map[string]sdk.AttrDoc{
			"line":   {Description: "The line a call sends, without its newline."},
			"expect": {Description: "The reply line a call expects: status 200 when it matches, 500 when not."},
		},
		// Besides the request: a VU's first call, and its first after a
		// failure, dials and times the connection.
		Metrics: []string{sdk.MetricConnect},
	}}
}

// Describe returns the protocol's name, version and schemas.
func (p *Protocol) Describe() sdk.Info { return p.info }

// Open checks a target and returns its client. No connection is made until
// a VU's first call, so that an unreachable server shows up as errors in
// the results rather than as a run that never starts.
func (p *Protocol) Open(ctx context.Context, target cty.Value) (sdk.Client, error) {
	address, timeout, err := parseTarget(target)
	if err != nil {
		return nil, err
	}
	return &Client{address: address, timeout: timeout, vus: map[uint64]*vu{}, conns: map[net.Conn]struct{}{}}, nil
}

// ValidateTarget checks a target with the decoder Open uses, so that hload
// validate rejects what Open would, at the attribute, before any load. It
// dials nothing: the server need not be up.
func (p *Protocol) ValidateTarget(target cty.Value) (string, error) {
	_, _, err := parseTarget(target)
	return sdk.AttrName(err), err
}

// ValidateRequest checks a request with the decoder Do uses. A value that
// is not known yet (it depends on the iteration) is left to Do.
func (p *Protocol) ValidateRequest(request cty.Value) (string, error) {
	if !request.IsWhollyKnown() {
		return "", nil
	}
	_, _, _, err := parseRequest(request)
	return sdk.AttrName(err), err
}

// parseTarget decodes a target: its address and its timeout. Its errors
// are *sdk.AttrError values, which name the attribute at fault.
func parseTarget(target cty.Value) (address string, timeout time.Duration, err error) {
	address, err = sdk.StringAttr(target, "address")
	if err != nil {
		return "", 0, err
	}
	if address == "" {
		return "", 0, sdk.AttrErrorf("address", "is required")
	}
	if host, port, err := net.SplitHostPort(address); err != nil || host == "" || port == "" {
		return "", 0, sdk.AttrErrorf("address", "%q must be host:port, such as \"127.0.0.1:6379\"", address)
	}
	timeout, err = sdk.DurationAttr(target, "timeout", DefaultTimeout)
	if err != nil {
		return "", 0, err
	}
	return address, timeout, nil
}

// Client runs calls against one target, with one connection per VU.
type Client struct {
	address string
	timeout time.Duration
	dialer  net.Dialer

	mu     sync.Mutex
	vus    map[uint64]*vu
	conns  map[net.Conn]struct{} // every open connection, so Close reaches them
	closed bool
}

var _ sdk.Client = (*Client)(nil)

// vu is one VU's connection. Only that VU's Do touches it, and the core
// never runs two calls of one VU at once, so it needs no lock.
type vu struct {
	conn net.Conn
	r    *bufio.Reader
	out  []byte // the line being sent, kept to avoid an allocation per call
}

// longAgo is a deadline in the past: setting it wakes a blocked read or
// write at once, without closing the connection under the VU.
var longAgo = time.Unix(1, 0)

// Do sends the call's line on the VU's connection and reads the reply line.
// It emits a connect sample when it had to dial, then the request sample.
func (c *Client) Do(ctx context.Context, call sdk.Call, emit func(sdk.Sample)) {
	start := time.Now()
	line, expect, hasExpect, err := parseRequest(call.Request)
	if err != nil {
		// A value that changes per iteration is checked here, with the
		// decoder validate used; the message says why in the summary.
		end := time.Now()
		emit(sdk.Sample{Metric: sdk.MetricRequest, Time: end, Value: end.Sub(start), Error: sdk.ErrProtocol, Message: err.Error()})
		return
	}
	v := c.vu(call.VU)
	deadline := start.Add(c.timeout)

	if v.conn == nil {
		dctx, cancel := context.WithDeadline(ctx, deadline)
		conn, err := c.dialer.DialContext(dctx, "tcp", c.address)
		cancel()
		connected := time.Now()
		if err == nil && !c.track(conn) {
			conn.Close()
			err = net.ErrClosed
		}
		if err != nil {
			emit(sdk.Sample{Metric: sdk.MetricRequest, Time: connected, Value: connected.Sub(start), Error: classify(ctx, err)})
			return
		}
		emit(sdk.Sample{Metric: sdk.MetricConnect, Time: connected, Value: connected.Sub(start)})
		v.conn = conn
		if v.r == nil {
			v.r = bufio.NewReaderSize(conn, 4096)
		} else {
			v.r.Reset(conn)
		}
	}

	// The deadline bounds the I/O by the target's timeout; the end of the
	// run interrupts it through the same deadline.
	conn := v.conn // the closure below may run after drop cleared v.conn
	conn.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(longAgo) })
	v.out = append(append(v.out[:0], line...), '\n')
	sent, err := conn.Write(v.out)
	var reply []byte
	if err == nil {
		reply, err = readLine(v.r)
	}
	end := time.Now()
	stop()

	s := sdk.Sample{
		Metric:        sdk.MetricRequest,
		Time:          end,
		Value:         end.Sub(start),
		BytesSent:     int64(sent),
		BytesReceived: int64(len(reply)),
	}
	if err != nil {
		// The connection's state is unknown after a failure: a late reply
		// would be read as the next call's. Start afresh.
		s.Error = classify(ctx, err)
		c.drop(v)
		emit(s)
		return
	}
	text := strings.TrimSuffix(strings.TrimSuffix(string(reply), "\n"), "\r")
	s.Status = StatusOK
	if hasExpect && text != expect {
		s.Status = StatusMismatch
	}
	if call.KeepBody {
		s.Body = []byte(text)
	}
	emit(s)
}

// readLine reads one reply line, newline included. It returns what it read
// with the error, so that the bytes count even when the call fails.
func readLine(r *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		line = append(line, chunk...)
		switch {
		case len(line) > MaxLine:
			return line, errReplyTooLong
		case err == nil:
			return line, nil
		case !errors.Is(err, bufio.ErrBufferFull):
			if errors.Is(err, io.EOF) && len(line) > 0 {
				err = io.ErrUnexpectedEOF // the server closed in the middle of a line
			}
			return line, err
		}
	}
}

var errReplyTooLong = fmt.Errorf("lines: reply longer than %d bytes", MaxLine)

// vu returns the state of VU id, creating it on its first call.
func (c *Client) vu(id uint64) *vu {
	c.mu.Lock()
	defer c.mu.Unlock()
	v := c.vus[id]
	if v == nil {
		v = &vu{}
		c.vus[id] = v
	}
	return v
}

// track records a new connection, unless the client is already closed.
func (c *Client) track(conn net.Conn) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return false
	}
	c.conns[conn] = struct{}{}
	return true
}

// drop closes v's connection, so that its next call dials again.
func (c *Client) drop(v *vu) {
	c.mu.Lock()
	delete(c.conns, v.conn)
	c.mu.Unlock()
	v.conn.Close()
	v.conn = nil
}

// Close closes every connection. It is safe to call more than once.
func (c *Client) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	for conn := range c.conns {
		conn.Close()
	}
	clear(c.conns)
	return nil
}

// classify maps a failed call's error to its kind. ctx is the context Do
// was given: once it is done, the failure is the run's end, not the server's.
func classify(ctx context.Context, err error) sdk.ErrorKind {
	if ctx.Err() != nil {
		return sdk.ErrInterrupted
	}
	var netErr net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded) || errors.As(err, &netErr) && netErr.Timeout():
		return sdk.ErrTimeout
	case errors.Is(err, syscall.ECONNREFUSED):
		return sdk.ErrConnectionRefused
	case errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNABORTED) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed):
		return sdk.ErrReset
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		return sdk.ErrDNS
	}
	return sdk.ErrProtocol
}

// parseRequest returns a request's line and expected reply. A line holding
// a newline would be two commands, whose second reply would be read as the
// next call's, so it is refused. Its errors name the attribute at fault.
func parseRequest(req cty.Value) (line, expect string, hasExpect bool, err error) {
	line, err = sdk.StringAttr(req, "line")
	if err != nil {
		return "", "", false, err
	}
	if line == "" || strings.ContainsAny(line, "\r\n") {
		return "", "", false, sdk.AttrErrorf("line", "%q must be one non-empty line", line)
	}
	if v := sdk.Attr(req, "expect"); !v.IsNull() {
		if expect, err = sdk.StringAttr(req, "expect"); err != nil {
			return "", "", false, err
		}
		hasExpect = true
	}
	return line, expect, hasExpect, nil
}
