// Package http is hload's built-in HTTP protocol. Each VU behaves as one
// browser user would: it keeps its own keep-alive connection(s) and its own
// cookie jar, so the server sees as many connections as there are VUs.
//
// Byte counts are taken on the TCP connection itself: for https they include
// the TLS record overhead and, on the call that opened the connection, the
// TLS handshake; for HTTP/2 they include the frames the connection exchanged
// in the background since the VU's previous call (window updates, pings).
package http

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	nethttp "net/http"

	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/zclconf/go-cty/cty"

	"github.com/hload/hload/protocols"
)

// Name is the protocol's name in a target's protocol attribute.
const Name = "http"

// Version is the version of this protocol implementation.
const Version = "0.1.0"

// Defaults applied to target attributes the user left out.
const (
	DefaultTimeout          = 60 * time.Second
	DefaultMaxRedirects     = 10
	DefaultConnectionsPerVU = 1
)

// userAgent is sent unless the target or the request sets its own, so that
// server logs tell hload's traffic apart from Go's default client.
const userAgent = "hload/" + Version

// Protocol is the HTTP protocol. The zero value is not usable; call New.
type Protocol struct {
	info protocols.Info
}

var (
	_ protocols.Protocol         = (*Protocol)(nil)
	_ protocols.TargetValidator  = (*Protocol)(nil)
	_ protocols.RequestValidator = (*Protocol)(nil)
)

// New returns the HTTP protocol.
func New() *Protocol {
	return &Protocol{info: protocols.Info{
		Name:        Name,
		Version:     Version,
		TargetSpec:  targetSpec(),
		RequestSpec: requestSpec(),
		Metrics:     []string{protocols.MetricTTFB, protocols.MetricConnect},
	}}
}

// Describe returns the protocol's name, version and schemas.
func (p *Protocol) Describe() protocols.Info { return p.info }

// Durations are strings in the schema: HCL converts a number of seconds to
// one ("2"), which protocols.DurationAttr reads as seconds.
func targetSpec() hcldec.ObjectSpec {
	return hcldec.ObjectSpec{
		"base_url":             &hcldec.AttrSpec{Name: "base_url", Type: cty.String, Required: true},
		"headers":              &hcldec.AttrSpec{Name: "headers", Type: cty.Map(cty.String)},
		"timeout":              &hcldec.AttrSpec{Name: "timeout", Type: cty.String},
		"insecure_skip_verify": &hcldec.AttrSpec{Name: "insecure_skip_verify", Type: cty.Bool},
		"follow_redirects":     &hcldec.AttrSpec{Name: "follow_redirects", Type: cty.Bool},
		"max_redirects":        &hcldec.AttrSpec{Name: "max_redirects", Type: cty.Number},
		"http2":                &hcldec.AttrSpec{Name: "http2", Type: cty.Bool},
		"connections_per_vu":   &hcldec.AttrSpec{Name: "connections_per_vu", Type: cty.Number},
		"expected_status":      &hcldec.AttrSpec{Name: "expected_status", Type: cty.List(cty.Number)},
	}
}

func requestSpec() hcldec.ObjectSpec {
	return hcldec.ObjectSpec{
		"method":          &hcldec.AttrSpec{Name: "method", Type: cty.String},
		"path":            &hcldec.AttrSpec{Name: "path", Type: cty.String},
		"query":           &hcldec.AttrSpec{Name: "query", Type: cty.Map(cty.String)},
		"headers":         &hcldec.AttrSpec{Name: "headers", Type: cty.Map(cty.String)},
		"body":            &hcldec.AttrSpec{Name: "body", Type: cty.String},
		"json":            &hcldec.AttrSpec{Name: "json", Type: cty.DynamicPseudoType},
		"form":            &hcldec.AttrSpec{Name: "form", Type: cty.Map(cty.String)},
		"timeout":         &hcldec.AttrSpec{Name: "timeout", Type: cty.String},
		"expected_status": &hcldec.AttrSpec{Name: "expected_status", Type: cty.List(cty.Number)},
	}
}

// Open validates a target and returns its client. No connection is made
// until a VU's first call.
func (p *Protocol) Open(ctx context.Context, target cty.Value) (protocols.Client, error) {
	cfg, err := parseTarget(target)
	if err != nil {
		return nil, fmt.Errorf("http: target %w", err)
	}
	return newClient(cfg), nil
}

// ValidateTarget checks a target with the decoder Open uses and returns
// the attribute at fault.
func (p *Protocol) ValidateTarget(target cty.Value) (string, error) {
	if _, err := parseTarget(target); err != nil {
		return protocols.AttrName(err), err
	}
	return "", nil
}

// ValidateRequest checks a request with the builder every call goes
// through and returns the attribute at fault. It builds the request
// against a placeholder target, so that what it checks is the request's
// own values.
func (p *Protocol) ValidateRequest(request cty.Value) (string, error) {
	if err := render(validationTarget, request, &rendered{}, &scratch{}); err != nil {
		return protocols.AttrName(err), err
	}
	return "", nil
}

// validationTarget stands for the target when a request is checked on
// its own.
var validationTarget = &targetConfig{
	baseURL:      "http://validate.invalid",
	timeout:      DefaultTimeout,
	maxRedirects: DefaultMaxRedirects,
	connsPerVU:   DefaultConnectionsPerVU,
}

// header is one header with its canonical key. vals is shared by every call
// and never written to: net/http only replaces header slices, never edits
// them in place.
type header struct {
	key  string
	vals []string
}

// targetConfig is a validated target block.
type targetConfig struct {
	base         *url.URL
	baseURL      string // scheme://host/path without a trailing slash, query or fragment
	baseQuery    string // base_url's raw query, prepended to every call's query
	headers      []header
	host         string // Host header override, "" when none
	timeout      time.Duration
	insecure     bool
	follow       bool
	maxRedirects int
	http2        bool
	connsPerVU   int
	// baseKey is scheme://host:port of base_url: the key of the
	// connections to the target.
	baseKey string
	// expected is the statuses a response may have and succeed; when
	// unset, a status below 400 succeeds.
	expected statusSet
}

// setHeader sets a target header, replacing one of the same key.
func (cfg *targetConfig) setHeader(key, value string) {
	for i := range cfg.headers {
		if cfg.headers[i].key == key {
			cfg.headers[i].vals = []string{value}
			return
		}
	}
	cfg.headers = append(cfg.headers, header{key: key, vals: []string{value}})
}

// parseTarget decodes a target block's values. Its errors are
// *protocols.AttrError naming the attribute, and read well after "target".
func parseTarget(target cty.Value) (*targetConfig, error) {
	if target.IsNull() || !target.IsKnown() || !target.Type().IsObjectType() {
		return nil, errors.New("must be a known object")
	}
	cfg := &targetConfig{}
	var err error

	raw, err := protocols.StringAttr(target, "base_url")
	if err != nil {
		return nil, err
	}
	if cfg.base, err = parseBaseURL(raw); err != nil {
		return nil, err
	}
	u := cfg.base
	if u.User != nil {
		// Credentials in the URL become basic auth, as nethttp.Client
		// would do, so that every way of sending a request sends them.
		pass, _ := u.User.Password()
		auth := base64.StdEncoding.EncodeToString([]byte(u.User.Username() + ":" + pass))
		cfg.headers = append(cfg.headers, header{key: "Authorization", vals: []string{"Basic " + auth}})
	}
	cfg.baseKey = keyOf(u)
	cfg.baseQuery = escapeQuery(u.RawQuery)
	b := *u
	b.RawQuery, b.ForceQuery, b.Fragment, b.RawFragment = "", false, "", ""
	cfg.baseURL = strings.TrimRight(b.String(), "/")

	hs, err := protocols.StringMapAttr(target, "headers")
	if err != nil {
		return nil, err
	}
	for _, kv := range hs {
		if err := checkHeader("headers", kv); err != nil {
			return nil, err
		}
		k := nethttp.CanonicalHeaderKey(kv.Key)
		if k == "Host" {
			cfg.host = kv.Value
			continue
		}
		cfg.setHeader(k, kv.Value)
	}

	if cfg.timeout, err = protocols.DurationAttr(target, "timeout", DefaultTimeout); err != nil {
		return nil, err
	}
	if cfg.insecure, err = protocols.BoolAttr(target, "insecure_skip_verify", false); err != nil {
		return nil, err
	}
	if cfg.follow, err = protocols.BoolAttr(target, "follow_redirects", true); err != nil {
		return nil, err
	}
	if cfg.http2, err = protocols.BoolAttr(target, "http2", true); err != nil {
		return nil, err
	}
	if cfg.maxRedirects, err = protocols.IntAttr(target, "max_redirects", 0, 1000, DefaultMaxRedirects); err != nil {
		return nil, err
	}
	if cfg.connsPerVU, err = protocols.IntAttr(target, "connections_per_vu", 1, 10000, DefaultConnectionsPerVU); err != nil {
		return nil, err
	}
	if cfg.expected, err = expectedStatus(target); err != nil {
		return nil, err
	}
	return cfg, nil
}

// parseBaseURL checks that base_url is an absolute http or https URL.
func parseBaseURL(raw string) (*url.URL, error) {
	const example = `such as "http://127.0.0.1:8080"`
	if raw == "" {
		return nil, protocols.AttrErrorf("base_url", "is required: the URL of the server, %s", example)
	}
	u, err := url.Parse(raw)
	if err == nil && u.Opaque != "" {
		// "127.0.0.1:8080" parses as scheme "127.0.0.1" with an opaque
		// part, and "localhost:8080" as scheme "localhost".
		return nil, protocols.AttrErrorf("base_url", "%q has no scheme; write it with http:// or https://, %s", raw, example)
	}
	if err != nil {
		if !strings.Contains(raw, "://") {
			return nil, protocols.AttrErrorf("base_url", "%q has no scheme; write it with http:// or https://, %s", raw, example)
		}
		return nil, protocols.AttrErrorf("base_url", "%q is not a URL: %v", raw, errors.Unwrap(err))
	}
	u.Scheme = strings.ToLower(u.Scheme)
	if u.Scheme == "" {
		return nil, protocols.AttrErrorf("base_url", "%q has no scheme; write it with http:// or https://, %s", raw, example)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, protocols.AttrErrorf("base_url", "%q must be an http:// or https:// URL", raw)
	}
	if u.Host == "" || u.Hostname() == "" {
		return nil, protocols.AttrErrorf("base_url", "%q has no host, %s", raw, example)
	}
	return u, nil
}
