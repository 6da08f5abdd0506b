// Command hload-plugin-redis is an hload protocol plugin that speaks RESP,
// Redis's protocol, to a real server: each request sends one command (GET,
// SET, INCR, DEL, or any other with args) on a connection of the target's
// pool and reads the reply. Build it with
//
//	go build -o plugins/hload-plugin-redis ./examples/plugins/redis
//
// The client is a small hand-written one, not a library: the plugin sends
// exactly the commands the test file names, nothing more (no HELLO, PING,
// CLIENT SETINFO or SELECT on connect), so Redis's own INFO commandstats
// counts what hload counts, and it adds no module dependency.
package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/zclconf/go-cty/cty"

	"github.com/hload/hload/plugins/sdk"
)

func main() { sdk.Serve(redis{}) }

type redis struct{}

var (
	_ sdk.TargetValidator  = redis{}
	_ sdk.RequestValidator = redis{}
)

// Describe declares the target and request attributes.
func (redis) Describe() sdk.Info {
	return sdk.Info{
		Name:    "redis",
		Version: "0.1.0",
		TargetSpec: hcldec.ObjectSpec{
			"address": &hcldec.AttrSpec{Name: "address", Type: cty.String, Required: true},
			"timeout": &hcldec.AttrSpec{Name: "timeout", Type: cty.DynamicPseudoType},
			"pool":    &hcldec.AttrSpec{Name: "pool", Type: cty.Number},
		},
		RequestSpec: hcldec.ObjectSpec{
			"command": &hcldec.AttrSpec{Name: "command", Type: cty.String, Required: true},
			"key":     &hcldec.AttrSpec{Name: "key", Type: cty.String},
			"value":   &hcldec.AttrSpec{Name: "value", Type: cty.String},
			"args":    &hcldec.AttrSpec{Name: "args", Type: cty.List(cty.String)},
		},
		TargetDocs: map[string]sdk.AttrDoc{
			"address": {Description: "The Redis server, as host:port."},
			"timeout": {Description: "How long a call may take, dial included: a duration or a number of seconds.", Default: cty.StringVal("5s")},
			"pool":    {Description: "The most idle connections the target keeps, 1 to 10000.", Default: cty.NumberIntVal(16)},
		},
		RequestDocs: map[string]sdk.AttrDoc{
			"command": {Description: "One Redis command, such as GET, SET, INCR, DEL, or any other with args."},
			"key":     {Description: "The key of GET, SET, INCR and DEL."},
			"value":   {Description: "The value of SET."},
			"args":    {Description: "The arguments of any other command, in order."},
		},
	}
}

func (redis) Open(ctx context.Context, target cty.Value) (sdk.Client, error) {
	return parseTarget(target)
}

// ValidateTarget checks a target at load without connecting.
func (redis) ValidateTarget(target cty.Value) (string, error) {
	_, err := parseTarget(target)
	return sdk.AttrName(err), err
}

// ValidateRequest checks a request at load, as Do would; a request known
// only per iteration is left to Do.
func (redis) ValidateRequest(request cty.Value) (string, error) {
	if !request.IsWhollyKnown() {
		return "", nil
	}
	_, err := parseCommand(request)
	return sdk.AttrName(err), err
}

func parseTarget(target cty.Value) (*client, error) {
	address, err := sdk.StringAttr(target, "address")
	if err != nil {
		return nil, err
	}
	if _, _, err := net.SplitHostPort(address); err != nil {
		return nil, sdk.AttrErrorf("address", "%q must be host:port, such as \"127.0.0.1:6379\"", address)
	}
	timeout, err := sdk.DurationAttr(target, "timeout", 5*time.Second)
	if err != nil {
		return nil, err
	}
	pool, err := sdk.IntAttr(target, "pool", 1, 10000, 16)
	if err != nil {
		return nil, err
	}
	return &client{address: address, timeout: timeout, idle: make(chan *conn, pool)}, nil
}

// arity is how many of key and value each known command takes; another
// command takes its arguments from args alone.
var arity = map[string]int{"GET": 1, "INCR": 1, "DEL": 1, "SET": 2}

// parseCommand returns the command's words: the command, then key and
// value where it takes them, then args.
func parseCommand(request cty.Value) ([]string, error) {
	name, err := sdk.StringAttr(request, "command")
	if err != nil {
		return nil, err
	}
	name = strings.ToUpper(strings.TrimSpace(name))
	if name == "" || strings.ContainsAny(name, " \t\r\n") {
		return nil, sdk.AttrErrorf("command", "must be one Redis command, such as \"GET\"")
	}
	key, err := sdk.StringAttr(request, "key")
	if err != nil {
		return nil, err
	}
	value, err := sdk.StringAttr(request, "value")
	if err != nil {
		return nil, err
	}
	args, err := sdk.StringListAttr(request, "args")
	if err != nil {
		return nil, err
	}
	words := []string{name}
	switch n, known := arity[name]; {
	case known && key == "":
		return nil, sdk.AttrErrorf("key", "is required by %s", name)
	case known && n == 2 && sdk.Attr(request, "value").IsNull():
		return nil, sdk.AttrErrorf("value", "is required by %s", name)
	case known && n == 1 && !sdk.Attr(request, "value").IsNull():
		return nil, sdk.AttrErrorf("value", "is not taken by %s", name)
	case known:
		words = append(words, key)
		if n == 2 {
			words = append(words, value)
		}
	case key != "" || !sdk.Attr(request, "value").IsNull():
		return nil, sdk.AttrErrorf("command", "%s takes its arguments from args; key and value are for GET, SET, INCR and DEL", name)
	}
	return append(words, args...), nil
}

// client holds a target's idle connections; a call takes one or dials.
type client struct {
	address string
	timeout time.Duration
	dialer  net.Dialer
	idle    chan *conn
}

type conn struct {
	net.Conn
	r *bufio.Reader
}

// Do sends one command and emits one sample. A reply that is a Redis error
// (-WRONGTYPE ...) is the error kind redis_ followed by its first word in
// lower case (redis_wrongtype, redis_err): a custom kind, so the summary
// tells a type mistake from a network one.
func (c *client) Do(ctx context.Context, call sdk.Call, emit func(sdk.Sample)) {
	words, err := parseCommand(call.Request)
	if err != nil {
		emit(sdk.Sample{Metric: sdk.MetricRequest, Time: time.Now(), Error: sdk.ErrProtocol, Message: err.Error()})
		return
	}
	start := time.Now()
	reply, sent, received, err := c.roundTrip(ctx, words)
	end := time.Now()
	s := sdk.Sample{Metric: sdk.MetricRequest, Time: end, Value: end.Sub(start), BytesSent: int64(sent), BytesReceived: int64(received)}
	var rerr redisError
	switch {
	case errors.As(err, &rerr):
		s.Error = sdk.ErrorKind("redis_" + strings.ToLower(rerr.kind()))
		s.Message = string(rerr)
	case err != nil && ctx.Err() != nil:
		s.Error = sdk.ErrInterrupted
	case err != nil:
		s.Error = sdk.NetErrorKind(err)
		s.Message = err.Error()
	}
	if call.KeepBody {
		s.Body = reply
	}
	emit(s)
}

// redisError is an error reply, without its leading '-'.
type redisError string

func (e redisError) Error() string { return string(e) }

func (e redisError) kind() string {
	k, _, _ := strings.Cut(string(e), " ")
	return k
}

// roundTrip writes one command and reads its reply on a pooled connection.
// A connection that failed is closed; one that answered goes back to the
// pool, or is closed when the pool is full.
func (c *client) roundTrip(ctx context.Context, words []string) (reply []byte, sent, received int, err error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	var cn *conn
	select {
	case cn = <-c.idle:
	default:
		nc, err := c.dialer.DialContext(ctx, "tcp", c.address)
		if err != nil {
			return nil, 0, 0, err
		}
		cn = &conn{Conn: nc, r: bufio.NewReader(nc)}
	}
	stop := context.AfterFunc(ctx, func() { cn.SetDeadline(time.Unix(1, 0)) })
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(words))
	for _, w := range words {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(w), w)
	}
	sent, err = io.WriteString(cn, b.String())
	if err == nil {
		reply, received, err = readReply(cn.r)
	}
	if !stop() || (err != nil && !errors.As(err, new(redisError))) {
		cn.Close()
		return reply, sent, received, err
	}
	select {
	case c.idle <- cn:
	default:
		cn.Close()
	}
	return reply, sent, received, err
}

// readReply reads one RESP2 reply: the text of a simple string, integer or
// bulk string; the elements of an array joined by newlines; nil for a null.
func readReply(r *bufio.Reader) ([]byte, int, error) {
	line, err := r.ReadString('\n')
	n := len(line)
	if err != nil {
		return nil, n, err
	}
	if len(line) < 3 || line[len(line)-2] != '\r' {
		return nil, n, fmt.Errorf("malformed RESP line %q", line)
	}
	body := line[1 : len(line)-2]
	switch line[0] {
	case '+', ':':
		return []byte(body), n, nil
	case '-':
		return nil, n, redisError(body)
	case '$':
		size, err := strconv.Atoi(body)
		if err != nil {
			return nil, n, fmt.Errorf("malformed bulk length %q", body)
		}
		if size < 0 {
			return nil, n, nil
		}
		buf := make([]byte, size+2)
		m, err := io.ReadFull(r, buf)
		return buf[:max(0, min(m, size))], n + m, err
	case '*':
		count, err := strconv.Atoi(body)
		if err != nil {
			return nil, n, fmt.Errorf("malformed array length %q", body)
		}
		var out [][]byte
		var firstErr error
		for i := 0; i < count; i++ {
			el, m, err := readReply(r)
			n += m
			var re redisError
			if err != nil && !errors.As(err, &re) {
				return nil, n, err
			}
			if err != nil && firstErr == nil {
				firstErr = err
			}
			out = append(out, el)
		}
		return bytes.Join(out, []byte("\n")), n, firstErr
	}
	return nil, n, fmt.Errorf("unknown RESP type %q", line[0])
}

// Close closes the idle connections.
func (c *client) Close() error {
	for {
		select {
		case cn := <-c.idle:
			cn.Close()
		default:
			return nil
		}
	}
}
