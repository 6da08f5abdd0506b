package http

import (
	"errors"
	"io"
	nethttp "net/http"
	"net/url"
	"strings"
	"time"

	"github.com/zclconf/go-cty/cty"
	ctyjson "github.com/zclconf/go-cty/cty/json"

	"github.com/hload/hload/protocols"
)

// Shared header values; net/http never writes into a header's slice.
var (
	contentTypeJSON = []string{"application/json"}
	contentTypeForm = []string{"application/x-www-form-urlencoded"}
	userAgentValue  = []string{userAgent}
)

// callOptions are a call's settings besides its request.
type callOptions struct {
	timeout  time.Duration
	expected statusSet // the request's expected_status, else the target's
}

// build turns a call's request values into the VU's request template and
// returns it with the call's options. h is the call state's header map,
// cleared and refilled here. It is the one decoder of a request: Do calls
// it per call, and ValidateRequest at load, so the two cannot disagree.
// Its errors are *protocols.AttrError naming the attribute.
func (v *vu) build(r cty.Value, h nethttp.Header) (*nethttp.Request, callOptions, error) {
	cfg := v.cfg
	var opt callOptions
	var err error
	if opt.timeout, err = protocols.DurationAttr(r, "timeout", cfg.timeout); err != nil {
		return nil, opt, err
	}
	if opt.expected, err = expectedStatus(r); err != nil {
		return nil, opt, err
	} else if !opt.expected.set {
		opt.expected = cfg.expected
	}

	payload, contentType, hasBody, err := requestBody(r)
	if err != nil {
		return nil, opt, err
	}

	method := nethttp.MethodGet
	if hasBody {
		method = nethttp.MethodPost
	}
	if s, err := protocols.StringAttr(r, "method"); err != nil {
		return nil, opt, err
	} else if s != "" {
		method = strings.ToUpper(s)
		if err := checkMethod(method); err != nil {
			return nil, opt, err
		}
	}

	u, err := v.url(r)
	if err != nil {
		return nil, opt, err
	}

	// Headers: the target's, then the request's over them. The map is
	// reused, and the client adds cookies to it, so it starts empty.
	clear(h)
	host := cfg.host
	for _, f := range cfg.headers {
		h[f.key] = f.vals
	}
	if hv := protocols.Attr(r, "headers"); !hv.IsNull() {
		kvs, err := protocols.StringMapAttr(r, "headers")
		if err != nil {
			return nil, opt, err
		}
		for _, kv := range kvs {
			if err := checkHeader("headers", kv); err != nil {
				return nil, opt, err
			}
			k := nethttp.CanonicalHeaderKey(kv.Key)
			if k == "Host" {
				host = kv.Value
				continue
			}
			h[k] = []string{kv.Value}
		}
	}
	if _, ok := h["User-Agent"]; !ok {
		h["User-Agent"] = userAgentValue
	}
	if contentType != nil {
		if _, ok := h["Content-Type"]; !ok {
			h["Content-Type"] = contentType
		}
	}

	v.req = nethttp.Request{
		Method:     method,
		URL:        u,
		Proto:      "HTTP/1.1",
		ProtoMajor: 1,
		ProtoMinor: 1,
		Header:     h,
		Host:       host,
	}
	if hasBody {
		v.req.ContentLength = int64(len(payload))
		if len(payload) > 0 {
			// GetBody lets the client replay the body on a 307 or 308
			// redirect, and on a retry the transport makes when nothing
			// of the request was written; see docs/http.md.
			v.req.GetBody = func() (io.ReadCloser, error) {
				return io.NopCloser(strings.NewReader(payload)), nil
			}
			v.req.Body, _ = v.req.GetBody()
		} else {
			v.req.Body = nethttp.NoBody
			v.req.GetBody = func() (io.ReadCloser, error) { return nethttp.NoBody, nil }
		}
	}
	return &v.req, opt, nil
}

// requestBody returns the payload of body, json or form, at most one of
// which may be set, and the content type it implies.
func requestBody(r cty.Value) (payload string, contentType []string, has bool, err error) {
	first := ""
	one := func(name string) error {
		if first != "" {
			return protocols.AttrErrorf(name, "cannot be set with %s: a request has one body; keep one of body, json and form", first)
		}
		first = name
		return nil
	}
	if s := protocols.Attr(r, "body"); !s.IsNull() {
		if err := one("body"); err != nil {
			return "", nil, false, err
		}
		if payload, err = protocols.StringAttr(r, "body"); err != nil {
			return "", nil, false, err
		}
	}
	if j := protocols.Attr(r, "json"); !j.IsNull() {
		if err := one("json"); err != nil {
			return "", nil, false, err
		}
		if !j.IsWhollyKnown() {
			return "", nil, false, protocols.AttrErrorf("json", "is not known")
		}
		j, _ = j.UnmarkDeep()
		b, err := ctyjson.Marshal(j, j.Type())
		if err != nil {
			return "", nil, false, protocols.AttrErrorf("json", "cannot be encoded: %v", err)
		}
		payload, contentType = string(b), contentTypeJSON
	}
	if f := protocols.Attr(r, "form"); !f.IsNull() {
		if err := one("form"); err != nil {
			return "", nil, false, err
		}
		kvs, err := protocols.StringMapAttr(r, "form")
		if err != nil {
			return "", nil, false, err
		}
		form := make(url.Values, len(kvs))
		for _, kv := range kvs {
			form.Add(kv.Key, kv.Value)
		}
		payload, contentType = form.Encode(), contentTypeForm
	}
	return payload, contentType, first != "", nil
}

// url joins the call's path and query to the target's base URL.
func (v *vu) url(r cty.Value) (*url.URL, error) {
	path, err := protocols.StringAttr(r, "path")
	if err != nil {
		return nil, err
	}
	query := protocols.Attr(r, "query")
	if query.IsNull() && v.lastURL != nil && path == v.lastPath {
		// The cached URL is shared by calls but never written to.
		return v.lastURL, nil
	}

	cfg := v.cfg
	raw := cfg.baseURL
	if path != "" {
		if path[0] == '/' {
			raw += path
		} else {
			raw += "/" + path
		}
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, protocols.AttrErrorf("path", "%q does not make a URL with the target's base_url: %v", path, errors.Unwrap(err))
	}
	if cfg.baseQuery != "" {
		if u.RawQuery == "" {
			u.RawQuery = cfg.baseQuery
		} else {
			u.RawQuery = cfg.baseQuery + "&" + u.RawQuery
		}
	}
	if query.IsNull() {
		v.lastPath, v.lastURL = path, u
		return u, nil
	}
	kvs, err := protocols.StringMapAttr(r, "query")
	if err != nil {
		return nil, err
	}
	if len(kvs) > 0 {
		q := make(url.Values, len(kvs))
		for _, kv := range kvs {
			q.Add(kv.Key, kv.Value)
		}
		if u.RawQuery == "" {
			u.RawQuery = q.Encode()
		} else {
			u.RawQuery += "&" + q.Encode()
		}
	}
	return u, nil
}

// standardMethods are the methods of RFC 9110 and PATCH (RFC 5789).
var standardMethods = [...]string{"GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH"}

// registeredMethods are the other methods of the IANA HTTP Method
// Registry (WebDAV and its kin). They are accepted even when one edit
// away from a standard method.
var registeredMethods = map[string]bool{
	"ACL": true, "BASELINE-CONTROL": true, "BIND": true, "CHECKIN": true, "CHECKOUT": true,
	"COPY": true, "LABEL": true, "LINK": true, "LOCK": true, "MERGE": true, "MKACTIVITY": true,
	"MKCALENDAR": true, "MKCOL": true, "MKREDIRECTREF": true, "MKWORKSPACE": true, "MOVE": true,
	"ORDERPATCH": true, "PROPFIND": true, "PROPPATCH": true, "QUERY": true, "REBIND": true,
	"REPORT": true, "SEARCH": true, "UNBIND": true, "UNCHECKOUT": true, "UNLINK": true,
	"UNLOCK": true, "UPDATE": true, "UPDATEREDIRECTREF": true, "VERSION-CONTROL": true,
}

// checkMethod accepts, after upper-casing, a standard or registered
// method, or any other RFC 9110 token that is not one typing slip (a
// letter added, dropped, changed or swapped with its neighbour) away from
// a standard method: "GTE" and "POTS" are refused, "PURGE" is sent.
func checkMethod(m string) error {
	for _, s := range standardMethods {
		if m == s {
			return nil
		}
	}
	if !isToken(m) {
		return protocols.AttrErrorf("method", "%q is not an HTTP method: a method is a word of letters, digits and !#$%%&'*+-.^_`|~, such as \"GET\"", m)
	}
	if registeredMethods[m] {
		return nil
	}
	for _, s := range standardMethods {
		if oneSlip(m, s) {
			return protocols.AttrErrorf("method", "%q is not an HTTP method; did you mean %q?", m, s)
		}
	}
	return nil
}

// oneSlip reports whether a and b differ by one insertion, deletion,
// substitution or swap of adjacent letters.
func oneSlip(a, b string) bool {
	if len(a) < len(b) {
		a, b = b, a
	}
	switch len(a) - len(b) {
	case 0:
		i := 0
		for i < len(a) && a[i] == b[i] {
			i++
		}
		if i == len(a) {
			return false // equal
		}
		if a[i+1:] == b[i+1:] {
			return true // substitution
		}
		return i+1 < len(a) && a[i] == b[i+1] && a[i+1] == b[i] && a[i+2:] == b[i+2:]
	case 1:
		i := 0
		for i < len(b) && a[i] == b[i] {
			i++
		}
		return a[i+1:] == b[i:]
	}
	return false
}

// isToken reports whether s is an RFC 9110 token, as net/http requires of
// a method and a header name.
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' {
			continue
		}
		if !strings.ContainsRune("!#$%&'*+-.^_`|~", rune(c)) {
			return false
		}
	}
	return true
}

// checkHeader refuses what net/http would refuse to send: a header name
// that is not a token, or a value with a control character other than a
// tab (a CR or LF would split the header).
func checkHeader(attr string, kv protocols.Pair) error {
	if !isToken(kv.Key) {
		return protocols.AttrErrorf(attr, "name %q is not a header name: a name is a word of letters, digits and !#$%%&'*+-.^_`|~", kv.Key)
	}
	for i := 0; i < len(kv.Value); i++ {
		if c := kv.Value[i]; c < ' ' && c != '\t' || c == 0x7f {
			return protocols.AttrErrorf(attr, "[%q] holds the control character %q, which a header cannot carry", kv.Key, c)
		}
	}
	return nil
}
