// Package sse is hload's built-in Server-Sent Events protocol. A request
// subscribes one VU to an event stream and holds it: for a duration, until
// a number of events, or until the scenario ends. While it holds the
// stream it emits a sample per event, and with a delivery key it matches
// the ids in the events against the ids the run's senders recorded in the
// run's ledger (delivery.Ledger), to report delivery latency and the
// events the subscriber missed.
//
// The stream is read by hload itself, in the VU's goroutine, over a
// connection of its own: the response's head and body through the HTTP
// engine's reader (protocols/http/h1), its frames by an eventReader. Not
// with r3labs/sse/v2's Client, which spends two goroutines and net/http's
// transport buffers per stream (54 KB of memory per idle stream, measured
// as BenchmarkIdleStreams measures it), does not honour the server's retry
// field, and drops what it cannot parse silently, where hload must count
// it. An idle stream holds no buffer: its buffers go back to pools the
// client's streams share whenever every byte read has been handed out, and
// it waits for the next bytes through the runtime's poller with none (on
// Linux and macOS, over plain TCP; over TLS its reads wait in the reader's
// buffer). It keeps the VU goroutine's stack, the connection and a few
// small structs.
package sse

import (
	"context"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	nethttp "net/http"

	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/zclconf/go-cty/cty"

	"github.com/hload/hload/protocols"
	"github.com/hload/hload/protocols/delivery"
)

// Name is the protocol's name in a target's protocol attribute.
const Name = "sse"

// Version is the version of this protocol implementation.
const Version = "0.1.0"

// Defaults of the target and request attributes the user left out.
const (
	DefaultTimeout        = 10 * time.Second
	DefaultMaxEventSize   = 64 << 10
	DefaultReconnectDelay = time.Second
	DefaultMissGrace      = time.Second
)

// Metric names of the samples a stream emits, besides the request sample.
const (
	MetricConnect         = "sse_connect"          // from dialling to the stream's response headers
	MetricFirstEvent      = "sse_first_event"      // from dialling to the first event of a connection
	MetricEventGap        = "sse_event_gap"        // between two events of a connection
	MetricEvents          = "sse_events"           // one sample per event; its count is the figure
	MetricDeliveryLatency = "sse_delivery_latency" // receive time - the send time in the event
	MetricEventsMissed    = "sse_events_missed"    // one sample per expected id not received
	MetricEventsLate      = "sse_events_late"      // an id received after it was counted missed
	MetricEventsDuplicate = "sse_events_duplicate" // an id received twice
	MetricExtractErrors   = "sse_extract_errors"   // an event whose id or send time could not be read
	MetricMalformed       = "sse_malformed"        // a frame with a line that is not SSE
	MetricDisconnects     = "sse_disconnects"      // a stream lost, Error = the reason
	MetricReconnects      = "sse_reconnects"       // a reconnection made, Error = the reason; Value = the wait
	GaugeOpenStreams      = "sse_open_streams"     // streams open at the end of each interval
)

// The reasons a stream ends or is lost, as error kinds, besides the shared
// ones (reset, timeout, connection_refused, dns, tls, interrupted).
const (
	ErrEOF       protocols.ErrorKind = "eof"       // the server ended the stream
	ErrStall     protocols.ErrorKind = "stall"     // nothing arrived for idle_timeout
	ErrMalformed protocols.ErrorKind = "malformed" // a frame longer than max_event_size
	ErrStatus    protocols.ErrorKind = "status"    // the response was not 200 text/event-stream
)

// reasons are the error kinds a stream can be lost with, each the suffix
// of an sse_disconnects_<reason> metric; all but status also name an
// sse_reconnects_<reason> metric (status is never retried). The shared
// ones are what protocols.NetErrorKind returns, and reset for a
// connection closed before its answer.
var reasons = []protocols.ErrorKind{
	ErrEOF, ErrStall, ErrMalformed, ErrStatus,
	protocols.ErrReset, protocols.ErrTimeout, protocols.ErrConnectionRefused,
	protocols.ErrDNS, protocols.ErrTLS, protocols.ErrProtocol,
}

// metrics lists every metric a stream emits besides the request sample,
// for Info.Metrics: a threshold on any other name is an error at load.
func metrics() []string {
	out := []string{
		MetricConnect, MetricFirstEvent, MetricEventGap, MetricEvents, MetricDeliveryLatency,
		MetricEventsMissed, MetricEventsLate, MetricEventsDuplicate, MetricExtractErrors, MetricMalformed,
		MetricDisconnects, MetricReconnects,
	}
	for _, r := range reasons {
		out = append(out, MetricDisconnects+"_"+string(r))
	}
	for _, r := range reasons {
		if r != ErrStatus {
			out = append(out, MetricReconnects+"_"+string(r))
		}
	}
	return out
}

// userAgent tells hload's streams apart in server logs.
const userAgent = "hload/" + Version

// Protocol is the SSE protocol. The zero value is not usable; call New.
type Protocol struct {
	info protocols.Info
}

var (
	_ protocols.Protocol         = (*Protocol)(nil)
	_ protocols.TargetValidator  = (*Protocol)(nil)
	_ protocols.RequestValidator = (*Protocol)(nil)
)

// New returns the SSE protocol.
func New() *Protocol {
	return &Protocol{info: protocols.Info{
		Name:        Name,
		Version:     Version,
		TargetSpec:  targetSpec(),
		RequestSpec: requestSpec(),
		Metrics:     metrics(),
		Gauges:      []string{GaugeOpenStreams},
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
		"max_event_size":       &hcldec.AttrSpec{Name: "max_event_size", Type: cty.Number},
	}
}

func requestSpec() hcldec.ObjectSpec {
	return hcldec.ObjectSpec{
		"path":            &hcldec.AttrSpec{Name: "path", Type: cty.String},
		"url":             &hcldec.AttrSpec{Name: "url", Type: cty.String},
		"query":           &hcldec.AttrSpec{Name: "query", Type: cty.Map(cty.String)},
		"headers":         &hcldec.AttrSpec{Name: "headers", Type: cty.Map(cty.String)},
		"last_event_id":   &hcldec.AttrSpec{Name: "last_event_id", Type: cty.String},
		"duration":        &hcldec.AttrSpec{Name: "duration", Type: cty.String},
		"events":          &hcldec.AttrSpec{Name: "events", Type: cty.Number},
		"reconnect":       &hcldec.AttrSpec{Name: "reconnect", Type: cty.Bool},
		"reconnect_delay": &hcldec.AttrSpec{Name: "reconnect_delay", Type: cty.String},
		"idle_timeout":    &hcldec.AttrSpec{Name: "idle_timeout", Type: cty.String},
		"delivery_key":    &hcldec.AttrSpec{Name: "delivery_key", Type: cty.String},
		"id_field":        &hcldec.AttrSpec{Name: "id_field", Type: cty.String},
		"id_regex":        &hcldec.AttrSpec{Name: "id_regex", Type: cty.String},
		"sent_at_field":   &hcldec.AttrSpec{Name: "sent_at_field", Type: cty.String},
		"sent_at_regex":   &hcldec.AttrSpec{Name: "sent_at_regex", Type: cty.String},
		"sent_at_unit":    &hcldec.AttrSpec{Name: "sent_at_unit", Type: cty.String},
		"miss_grace":      &hcldec.AttrSpec{Name: "miss_grace", Type: cty.String},
	}
}

// Open validates a target and returns its client. The run's ledger, if
// ctx carries one, is kept for matching delivery ids.
func (p *Protocol) Open(ctx context.Context, target cty.Value) (protocols.Client, error) {
	cfg, ae := parseTarget(target)
	if ae != nil {
		return nil, fmt.Errorf("sse: target %w", ae.err)
	}
	return newClient(cfg, delivery.LedgerFrom(ctx)), nil
}

// ValidateTarget checks a target's values at load with parseTarget, the
// decoder Open uses (protocols.TargetValidator): it returns the attribute
// at fault, and a message that starts with its name.
func (p *Protocol) ValidateTarget(target cty.Value) (string, error) {
	if _, ae := parseTarget(target); ae != nil {
		return ae.attr, ae.err
	}
	return "", nil
}

// ValidateRequest checks a request's values at load with parseRequest, the
// decoder each call uses (protocols.RequestValidator): it returns the
// attribute at fault, and a message that starts with its name.
func (p *Protocol) ValidateRequest(request cty.Value) (string, error) {
	var rc regexCache
	if _, ae := parseRequest(request, &rc); ae != nil {
		return ae.attr, ae.err
	}
	return "", nil
}

// targetConfig is a validated target block.
type targetConfig struct {
	base         *url.URL // without a trailing slash
	headers      [][2]string
	timeout      time.Duration
	insecure     bool
	maxEventSize int
}

// parseTarget validates a target block's values; Open and ValidateTarget
// both go through it.
func parseTarget(target cty.Value) (*targetConfig, *attrError) {
	if target.IsNull() || !target.IsKnown() || !target.Type().IsObjectType() {
		return nil, bad("", "the target must be a known object")
	}
	cfg := &targetConfig{timeout: DefaultTimeout, maxEventSize: DefaultMaxEventSize}
	raw, err := protocols.StringAttr(target, "base_url")
	if err != nil {
		return nil, &attrError{attr: "base_url", err: err}
	}
	if raw == "" {
		return nil, bad("base_url", "base_url is required")
	}
	u, err := parseBaseURL(raw)
	if err != nil {
		return nil, bad("base_url", "base_url %v", err)
	}
	cfg.base = u
	if cfg.headers, err = mapAttr(target, "headers"); err != nil {
		return nil, &attrError{attr: "headers", err: err}
	}
	if cfg.timeout, err = protocols.DurationAttr(target, "timeout", cfg.timeout); err != nil {
		return nil, &attrError{attr: "timeout", err: err}
	}
	if cfg.insecure, err = protocols.BoolAttr(target, "insecure_skip_verify", false); err != nil {
		return nil, &attrError{attr: "insecure_skip_verify", err: err}
	}
	if cfg.maxEventSize, err = protocols.IntAttr(target, "max_event_size", 256, 64<<20, cfg.maxEventSize); err != nil {
		return nil, &attrError{attr: "max_event_size", err: err}
	}
	return cfg, nil
}

func parseBaseURL(raw string) (*url.URL, error) {
	if !strings.Contains(raw, "://") {
		// "127.0.0.1:8080" parses as a scheme and an opaque part, or not
		// at all: neither message would say what is missing.
		return nil, fmt.Errorf("%q has no scheme: write \"http://%s\" or \"https://%s\"", raw, raw, raw)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("%q is not a URL: %v", raw, err)
	}
	u.Scheme = strings.ToLower(u.Scheme)
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("%q must be an http:// or https:// URL", raw)
	}
	if u.Hostname() == "" {
		return nil, fmt.Errorf("%q has no host", raw)
	}
	u.Path = strings.TrimRight(u.Path, "/")
	u.RawPath = ""
	u.Fragment, u.RawFragment = "", ""
	return u, nil
}

// streamConfig is a validated request: one subscription.
type streamConfig struct {
	url         *url.URL
	headers     [][2]string
	lastEventID string

	duration       time.Duration // 0: no limit
	events         int           // 0: no limit
	reconnect      bool
	reconnectDelay time.Duration
	idleTimeout    time.Duration // 0: none

	deliveryKey string
	id          extractor
	sentAt      extractor
	sentAtUnit  time.Duration
	missGrace   time.Duration
}

// attrError is a request value at fault, with the attribute's name.
type attrError struct {
	attr string
	err  error
}

func (e *attrError) Error() string { return "sse: " + e.err.Error() }

func bad(attr string, format string, args ...any) *attrError {
	return &attrError{attr: attr, err: fmt.Errorf(format, args...)}
}

// parseRequest validates a call's request values.
func parseRequest(r cty.Value, rc *regexCache) (*streamConfig, *attrError) {
	sc := &streamConfig{reconnectDelay: DefaultReconnectDelay, missGrace: DefaultMissGrace}
	var ae *attrError
	if sc.url, ae = parseStreamURL(r); ae != nil {
		return nil, ae
	}
	var err error
	if sc.headers, err = mapAttr(r, "headers"); err != nil {
		return nil, &attrError{attr: "headers", err: err}
	}
	if sc.lastEventID, ae = stringAttr(r, "last_event_id"); ae != nil {
		return nil, ae
	}
	if strings.ContainsAny(sc.lastEventID, "\r\n\x00") {
		return nil, bad("last_event_id", "last_event_id must not contain line breaks or NUL")
	}
	if ae = parseHold(r, sc); ae != nil {
		return nil, ae
	}
	if sc.deliveryKey, ae = stringAttr(r, "delivery_key"); ae != nil {
		return nil, ae
	}
	if sc.id, ae = parseExtractor(r, rc, "id_field", "id_regex"); ae != nil {
		return nil, ae
	}
	if sc.sentAt, ae = parseExtractor(r, rc, "sent_at_field", "sent_at_regex"); ae != nil {
		return nil, ae
	}
	if sc.sentAtUnit, ae = parseSentAtUnit(r); ae != nil {
		return nil, ae
	}
	if sc.deliveryKey != "" && !sc.id.set() {
		return nil, bad("delivery_key", "delivery_key needs id_field or id_regex, to read each event's id")
	}
	return sc, nil
}

// stringAttr is protocols.StringAttr with the attribute named in its
// error.
func stringAttr(r cty.Value, name string) (string, *attrError) {
	s, err := protocols.StringAttr(r, name)
	if err != nil {
		return "", &attrError{attr: name, err: err}
	}
	return s, nil
}

// durationAttr is protocols.DurationAttr with the attribute named in its
// error.
func durationAttr(r cty.Value, name string, def time.Duration) (time.Duration, *attrError) {
	d, err := protocols.DurationAttr(r, name, def)
	if err != nil {
		return 0, &attrError{attr: name, err: err}
	}
	return d, nil
}

// parseStreamURL returns the stream's URL from url, or from path, with
// query added to it; nil when the request sets neither, and the target's
// base URL is the stream's.
func parseStreamURL(r cty.Value) (*url.URL, *attrError) {
	raw, ae := stringAttr(r, "url")
	if ae != nil {
		return nil, ae
	}
	var u *url.URL
	if raw != "" {
		if u, ae = absoluteURL(raw); ae != nil {
			return nil, ae
		}
	}
	if path, ae := stringAttr(r, "path"); ae != nil {
		return nil, ae
	} else if path != "" {
		if raw != "" {
			return nil, bad("path", "set path or url, not both")
		}
		u = &url.URL{Path: path}
	}
	query, err := mapAttr(r, "query")
	if err != nil {
		return nil, &attrError{attr: "query", err: err}
	}
	if u != nil && len(query) > 0 {
		q := u.Query()
		for _, kv := range query {
			q.Add(kv[0], kv[1])
		}
		u.RawQuery = q.Encode()
	}
	return u, nil
}

// parseHold reads how long the stream is held and how it is kept:
// duration, events, idle_timeout, reconnect with its delay, and the
// grace before an expected id counts as missed.
func parseHold(r cty.Value, sc *streamConfig) *attrError {
	var ae *attrError
	var err error
	if sc.duration, ae = durationAttr(r, "duration", 0); ae != nil {
		return ae
	}
	if sc.events, err = protocols.IntAttr(r, "events", 1, 1<<31, 0); err != nil {
		return &attrError{attr: "events", err: err}
	}
	if sc.reconnect, err = protocols.BoolAttr(r, "reconnect", false); err != nil {
		return &attrError{attr: "reconnect", err: err}
	}
	if sc.reconnectDelay, ae = durationAttr(r, "reconnect_delay", sc.reconnectDelay); ae != nil {
		return ae
	}
	if sc.idleTimeout, ae = durationAttr(r, "idle_timeout", 0); ae != nil {
		return ae
	}
	if sc.missGrace, ae = durationAttr(r, "miss_grace", sc.missGrace); ae != nil {
		return ae
	}
	return nil
}

// parseExtractor reads how a value is taken from each event: a JSON
// field (dotted path) or a regular expression's capture, not both; the
// zero extractor when the request sets neither.
func parseExtractor(r cty.Value, rc *regexCache, fieldAttr, regexAttr string) (extractor, *attrError) {
	field, ae := stringAttr(r, fieldAttr)
	if ae != nil {
		return extractor{}, ae
	}
	re, ae := stringAttr(r, regexAttr)
	if ae != nil {
		return extractor{}, ae
	}
	if field != "" && re != "" {
		return extractor{}, bad(regexAttr, "set %s or %s, not both", fieldAttr, regexAttr)
	}
	if field != "" {
		return extractor{path: strings.Split(field, ".")}, nil
	}
	if re == "" {
		return extractor{}, nil
	}
	compiled, err := rc.compile(re)
	if err != nil {
		return extractor{}, bad(regexAttr, "%s is not a valid regular expression: %v", regexAttr, err)
	}
	if compiled.NumSubexp() > 1 {
		return extractor{}, bad(regexAttr, "%s may have at most one capture group, the value; it has %d", regexAttr, compiled.NumSubexp())
	}
	return extractor{re: compiled}, nil
}

// parseSentAtUnit returns the unit of the send times events carry as
// numbers: microseconds unless sent_at_unit says otherwise.
func parseSentAtUnit(r cty.Value) (time.Duration, *attrError) {
	unit, ae := stringAttr(r, "sent_at_unit")
	if ae != nil {
		return 0, ae
	}
	switch unit {
	case "", "us":
		return time.Microsecond, nil
	case "ms":
		return time.Millisecond, nil
	case "ns":
		return time.Nanosecond, nil
	case "s":
		return time.Second, nil
	}
	return 0, bad("sent_at_unit", `sent_at_unit must be "s", "ms", "us" or "ns", not %q`, unit)
}

// absoluteURL parses a request's url attribute.
func absoluteURL(raw string) (*url.URL, *attrError) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, bad("url", "url %q is not a URL: %v", raw, err)
	}
	u.Scheme = strings.ToLower(u.Scheme)
	if (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
		return nil, bad("url", "url %q must be an absolute http:// or https:// URL", raw)
	}
	return u, nil
}

// requestURL joins a stream's path to the target's base URL.
func (cfg *targetConfig) requestURL(sc *streamConfig) *url.URL {
	if sc.url != nil && sc.url.IsAbs() {
		return sc.url
	}
	u := *cfg.base
	if sc.url != nil {
		p := sc.url.Path
		if !strings.HasPrefix(p, "/") {
			p = "/" + p
		}
		u.Path += p
		switch {
		case u.RawQuery == "":
			u.RawQuery = sc.url.RawQuery
		case sc.url.RawQuery != "":
			u.RawQuery += "&" + sc.url.RawQuery
		}
	}
	return &u
}

// mapAttr returns a map(string) attribute as key/value pairs, sorted by
// key; header keys are canonicalised.
func mapAttr(obj cty.Value, name string) ([][2]string, error) {
	pairs, err := protocols.StringMapAttr(obj, name)
	if err != nil {
		return nil, err
	}
	var out [][2]string
	for _, p := range pairs {
		key := p.Key
		if name == "headers" {
			key = nethttp.CanonicalHeaderKey(key)
			if strings.ContainsAny(key+p.Value, "\r\n") {
				return nil, fmt.Errorf("%s[%q] must not contain line breaks", name, p.Key)
			}
		}
		out = append(out, [2]string{key, p.Value})
	}
	return out, nil
}

// regexCache compiles each regular expression once per client; it is
// safe for concurrent use. It stops adding after maxRegexes, so that a
// regex computed per call cannot grow it without bound.
type regexCache struct {
	m sync.Map
	n atomic.Int32
}

const maxRegexes = 64

func (c *regexCache) compile(s string) (*regexp.Regexp, error) {
	if re, ok := c.m.Load(s); ok {
		return re.(*regexp.Regexp), nil
	}
	re, err := regexp.Compile(s)
	if err != nil {
		return nil, err
	}
	if c.n.Add(1) <= maxRegexes {
		c.m.Store(s, re)
	}
	return re, nil
}
