// Package fake is the "fake" protocol of the host's test plugins: the
// fake plugin serves it with the current SDK, and fakeplugin-v2 with the
// SDK of wire version 2. When the target's address is an http:// URL,
// each call also GETs the address with the request's message as the path,
// so that a test server counts the calls the plugin made.
package fake

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/zclconf/go-cty/cty"

	"github.com/hload/hload/protocols"
)

// Protocol is the "fake" protocol.
type Protocol struct{}

func (Protocol) Describe() protocols.Info {
	return protocols.Info{
		Name:    "fake",
		Version: "1.2.3",
		TargetSpec: hcldec.ObjectSpec{
			"address": &hcldec.AttrSpec{Name: "address", Type: cty.String, Required: true},
		},
		RequestSpec: hcldec.ObjectSpec{
			"message": &hcldec.AttrSpec{Name: "message", Type: cty.String},
		},
		Metrics: []string{"fake_metric"},
		Gauges:  []string{"fake_gauge"},
	}
}

// ValidateTarget refuses the address "bad", without dialling anything.
func (Protocol) ValidateTarget(target cty.Value) (string, error) {
	if a, _ := protocols.StringAttr(target, "address"); a == "bad" {
		return "address", errors.New(`address "bad" is not host:port`)
	}
	return "", nil
}

func (Protocol) Open(ctx context.Context, target cty.Value) (protocols.Client, error) {
	a, _ := protocols.StringAttr(target, "address")
	if strings.HasPrefix(a, "http://") {
		return client{server: a}, nil
	}
	if n, ok := strings.CutPrefix(a, "crash:"); ok {
		lines, _ := strconv.Atoi(n)
		return crasher{lines: lines}, nil
	}
	return client{}, nil
}

type client struct {
	server string // a test server's URL, or ""
}

// prepared is what the client's Prepare makes of a request.
type prepared struct{ message string }

// Prepare implements protocols.Preparer, so that a test sees the plugin
// prepare what the host prepared.
func (client) Prepare(request cty.Value) (any, error) {
	msg, _ := protocols.StringAttr(request, "message")
	if msg == "refuse" {
		return nil, errors.New("refused")
	}
	return &prepared{message: msg}, nil
}

// template is what the client's Template makes of a shape whose message
// is a hole.
type template struct{}

// Template implements protocols.Templater for a request whose message is
// evaluated per call, so that a test sees the calls of a template reach
// the plugin with their holes; a plugin of a wire version before 4 is
// never asked.
func (client) Template(shape cty.Value, holes int) (any, error) {
	if holes != 1 || shape.GetAttr("message").IsKnown() {
		return nil, fmt.Errorf("a template of the message only, not %d holes", holes)
	}
	return template{}, nil
}

// Do answers with the request's message as the body and in a header,
// beside a header sent twice. It hands them back whether or not the call
// asks, so that the host's tests see the SDK drop what was not asked. A
// call with what Prepare made of its request answers 203 instead of 200,
// with the prepared message, and one of a template 206, with its hole's
// message; with a test server, a call that could not reach it answers
// 502.
func (c client) Do(ctx context.Context, call protocols.Call, emit func(protocols.Sample)) {
	msg, _ := protocols.StringAttr(call.Request, "message")
	status := 200
	if p, ok := call.Prepared.(*prepared); ok {
		msg, status = p.message, 203
	}
	if _, ok := call.Prepared.(template); ok && len(call.Holes) == 1 {
		msg, status = call.Holes[0].AsString(), 206
	}
	if c.server != "" {
		resp, err := http.Get(c.server + "/" + url.PathEscape(msg))
		if err != nil {
			status = 502
		} else {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}
	emit(protocols.Sample{Metric: protocols.MetricRequest, Time: time.Now(), Value: time.Millisecond, Status: status,
		Body:    []byte(msg),
		Headers: map[string][]string{"X-Message": {msg}, "Set-Cookie": {"a=1", "b=2"}},
	})
}

func (client) Close() error { return nil }

// crasher is the client of a target whose address is "crash:N": its first
// call writes N numbered lines to the process's own stderr, as the Go
// runtime writes a crash's stack, and exits at once.
type crasher struct{ lines int }

func (c crasher) Do(context.Context, protocols.Call, func(protocols.Sample)) {
	// File descriptor 2, not os.Stderr, which go-plugin replaced.
	raw := os.NewFile(2, "stderr")
	var b strings.Builder
	for i := 1; i <= c.lines; i++ {
		fmt.Fprintf(&b, "fake: crash line %d of %d\n", i, c.lines)
	}
	raw.WriteString(b.String())
	os.Exit(3)
}

func (crasher) Close() error { return nil }
