// Command fakeplugin is a tiny protocol plugin for the host's tests. Its
// first argument picks a behaviour:
//
//	serve          serve the "fake" protocol (the default)
//	stderr N       write N numbered lines to stderr, then serve
//	hang           never answer the handshake
//	wrong-cookie   serve with another magic cookie
//	wrong-version  serve protocol version 99 only
//	v2             serve wire version 2 only, as a plugin built with the
//	               SDK of that version does
//
// When the target's address is an http:// URL, each call also GETs the
// address with the request's message as the path, so that a test server
// counts the calls the plugin made.
package main

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

	"github.com/hashicorp/go-plugin"
	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/zclconf/go-cty/cty"

	"github.com/hload/hload/plugins/internal/wire"
	"github.com/hload/hload/plugins/sdk"
	"github.com/hload/hload/protocols"
)

type fake struct{}

func (fake) Describe() protocols.Info {
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
func (fake) ValidateTarget(target cty.Value) (string, error) {
	if a, _ := protocols.StringAttr(target, "address"); a == "bad" {
		return "address", errors.New(`address "bad" is not host:port`)
	}
	return "", nil
}

func (fake) Open(ctx context.Context, target cty.Value) (protocols.Client, error) {
	a, _ := protocols.StringAttr(target, "address")
	if strings.HasPrefix(a, "http://") {
		return client{server: a}, nil
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

// Do answers with the request's message as the body and in a header,
// beside a header sent twice. It hands them back whether or not the call
// asks, so that the host's tests see the SDK drop what was not asked. A
// call with what Prepare made of its request answers 203 instead of 200,
// with the prepared message; with a test server, a call that could not
// reach it answers 502.
func (c client) Do(ctx context.Context, call protocols.Call, emit func(protocols.Sample)) {
	msg, _ := protocols.StringAttr(call.Request, "message")
	status := 200
	if p, ok := call.Prepared.(*prepared); ok {
		msg, status = p.message, 203
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

func main() {
	mode := "serve"
	if len(os.Args) > 1 {
		mode = os.Args[1]
	}
	switch mode {
	case "serve":
		sdk.Serve(fake{})
	case "stderr":
		n, _ := strconv.Atoi(os.Args[2])
		for i := 1; i <= n; i++ {
			fmt.Fprintf(os.Stderr, "fake line %d\n", i)
		}
		sdk.Serve(fake{})
	case "hang":
		fmt.Fprintln(os.Stderr, "fake: hanging at start")
		time.Sleep(time.Hour)
	case "wrong-cookie":
		hs := wire.Handshake()
		hs.MagicCookieValue = "another-program"
		plugin.Serve(&plugin.ServeConfig{
			HandshakeConfig:  hs,
			VersionedPlugins: wire.PluginSets(fake{}),
			GRPCServer:       plugin.DefaultGRPCServer,
		})
	case "wrong-version":
		hs := wire.Handshake()
		hs.ProtocolVersion = 99
		plugin.Serve(&plugin.ServeConfig{
			HandshakeConfig:  hs,
			VersionedPlugins: map[int]plugin.PluginSet{99: wire.PluginSets(fake{})[wire.ProtocolVersion]},
			GRPCServer:       plugin.DefaultGRPCServer,
		})
	case "v2":
		plugin.Serve(&plugin.ServeConfig{
			HandshakeConfig:  wire.Handshake(),
			VersionedPlugins: map[int]plugin.PluginSet{2: wire.PluginSets(fake{})[2]},
			GRPCServer:       plugin.DefaultGRPCServer,
		})
	default:
		fmt.Fprintf(os.Stderr, "fakeplugin: unknown mode %q\n", mode)
		os.Exit(2)
	}
}
