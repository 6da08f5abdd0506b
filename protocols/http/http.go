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
	"math/big"
	"net/url"
	"strings"
	"time"

	nethttp "net/http"

	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"

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

var _ protocols.Protocol = (*Protocol)(nil)

// New returns the HTTP protocol.
func New() *Protocol {
	return &Protocol{info: protocols.Info{
		Name:        Name,
		Version:     Version,
		TargetSpec:  targetSpec(),
		RequestSpec: requestSpec(),
	}}
}

// Describe returns the protocol's name, version and schemas.
func (p *Protocol) Describe() protocols.Info { return p.info }

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
	}
}

func requestSpec() hcldec.ObjectSpec {
	return hcldec.ObjectSpec{
		"method":  &hcldec.AttrSpec{Name: "method", Type: cty.String},
		"path":    &hcldec.AttrSpec{Name: "path", Type: cty.String},
		"query":   &hcldec.AttrSpec{Name: "query", Type: cty.Map(cty.String)},
		"headers": &hcldec.AttrSpec{Name: "headers", Type: cty.Map(cty.String)},
		"body":    &hcldec.AttrSpec{Name: "body", Type: cty.String},
		"json":    &hcldec.AttrSpec{Name: "json", Type: cty.DynamicPseudoType},
		"form":    &hcldec.AttrSpec{Name: "form", Type: cty.Map(cty.String)},
		"timeout": &hcldec.AttrSpec{Name: "timeout", Type: cty.String},
	}
}

// Open validates a target and returns its client. No connection is made
// until a VU's first call.
func (p *Protocol) Open(ctx context.Context, target cty.Value) (protocols.Client, error) {
	cfg, err := parseTarget(target)
	if err != nil {
		return nil, err
	}
	return newClient(cfg), nil
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

func parseTarget(target cty.Value) (*targetConfig, error) {
	if target.IsNull() || !target.IsKnown() || !target.Type().IsObjectType() {
		return nil, errors.New("http: target must be a known object")
	}
	cfg := &targetConfig{
		timeout:      DefaultTimeout,
		follow:       true,
		maxRedirects: DefaultMaxRedirects,
		http2:        true,
		connsPerVU:   DefaultConnectionsPerVU,
	}

	raw, err := stringAttr(target, "base_url")
	if err != nil {
		return nil, err
	}
	if raw == "" {
		return nil, errors.New("http: target base_url is required")
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("http: target base_url %q is not a URL: %v", raw, err)
	}
	u.Scheme = strings.ToLower(u.Scheme)
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("http: target base_url %q must be an http:// or https:// URL", raw)
	}
	if u.Host == "" || u.Hostname() == "" {
		return nil, fmt.Errorf("http: target base_url %q has no host", raw)
	}
	cfg.base = u
	if u.User != nil {
		// Credentials in the URL become basic auth, as nethttp.Client
		// would do, so that every way of sending a request sends them.
		pass, _ := u.User.Password()
		auth := base64.StdEncoding.EncodeToString([]byte(u.User.Username() + ":" + pass))
		cfg.headers = append(cfg.headers, header{key: "Authorization", vals: []string{"Basic " + auth}})
	}
	cfg.baseQuery = u.RawQuery
	b := *u
	b.RawQuery, b.ForceQuery, b.Fragment, b.RawFragment = "", false, "", ""
	cfg.baseURL = strings.TrimRight(b.String(), "/")

	hs, err := mapAttr(target, "headers")
	if err != nil {
		return nil, err
	}
	for _, kv := range hs {
		k := nethttp.CanonicalHeaderKey(kv[0])
		if k == "Host" {
			cfg.host = kv[1]
			continue
		}
		cfg.setHeader(k, kv[1])
	}

	if s, err := stringAttr(target, "timeout"); err != nil {
		return nil, err
	} else if s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("http: target timeout %q must be a positive duration such as \"10s\"", s)
		}
		cfg.timeout = d
	}
	if err := boolAttr(target, "insecure_skip_verify", &cfg.insecure); err != nil {
		return nil, err
	}
	if err := boolAttr(target, "follow_redirects", &cfg.follow); err != nil {
		return nil, err
	}
	if err := boolAttr(target, "http2", &cfg.http2); err != nil {
		return nil, err
	}
	if err := intAttr(target, "max_redirects", 0, 1000, &cfg.maxRedirects); err != nil {
		return nil, err
	}
	if err := intAttr(target, "connections_per_vu", 1, 10000, &cfg.connsPerVU); err != nil {
		return nil, err
	}
	return cfg, nil
}

// attr and stringAttr read the target's and request's values; the
// protocols package holds them for every protocol.
func attr(obj cty.Value, name string) cty.Value { return protocols.Attr(obj, name) }

func stringAttr(obj cty.Value, name string) (string, error) {
	v, err := protocols.StringAttr(obj, name)
	if err != nil {
		return "", fmt.Errorf("http: %w", err)
	}
	return v, nil
}

func boolAttr(obj cty.Value, name string, dst *bool) error {
	v := attr(obj, name)
	if v.IsNull() {
		return nil
	}
	c, err := convert.Convert(v, cty.Bool)
	if err != nil || !c.IsKnown() || c.IsNull() {
		return fmt.Errorf("http: target %s must be a bool", name)
	}
	*dst = c.True()
	return nil
}

func intAttr(obj cty.Value, name string, lo, hi int, dst *int) error {
	v := attr(obj, name)
	if v.IsNull() {
		return nil
	}
	c, err := convert.Convert(v, cty.Number)
	if err != nil || !c.IsKnown() || c.IsNull() {
		return fmt.Errorf("http: target %s must be a number", name)
	}
	bf := c.AsBigFloat()
	if !bf.IsInt() || bf.Cmp(big.NewFloat(float64(lo))) < 0 || bf.Cmp(big.NewFloat(float64(hi))) > 0 {
		return fmt.Errorf("http: target %s must be a whole number from %d to %d, not %s", name, lo, hi, bf.Text('g', -1))
	}
	n, _ := bf.Int64()
	*dst = int(n)
	return nil
}

// mapAttr returns a map(string) attribute as key/value pairs sorted by key.
// Objects are accepted too, because a value that crossed the plugin boundary
// or came from an HCL object literal may not have been converted to a map.
func mapAttr(obj cty.Value, name string) ([][2]string, error) {
	v := attr(obj, name)
	if v.IsNull() {
		return nil, nil
	}
	if !v.IsKnown() || !(v.Type().IsMapType() || v.Type().IsObjectType()) {
		return nil, fmt.Errorf("http: %s must be a map of strings", name)
	}
	out := make([][2]string, 0, v.LengthInt())
	for it := v.ElementIterator(); it.Next(); {
		k, e := it.Element()
		e, _ = e.Unmark()
		if e.IsNull() {
			continue
		}
		s, err := convert.Convert(e, cty.String)
		if err != nil || !s.IsKnown() {
			return nil, fmt.Errorf("http: %s[%q] must be a string", name, k.AsString())
		}
		out = append(out, [2]string{k.AsString(), s.AsString()})
	}
	return out, nil
}
