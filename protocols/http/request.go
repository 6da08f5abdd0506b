package http

import (
	"errors"
	"fmt"
	"io"
	nethttp "net/http"
	"net/url"
	"strings"
	"time"

	"github.com/zclconf/go-cty/cty"
	ctyjson "github.com/zclconf/go-cty/cty/json"
)

// Shared header values; net/http never writes into a header's slice.
var (
	contentTypeJSON = []string{"application/json"}
	contentTypeForm = []string{"application/x-www-form-urlencoded"}
	userAgentValue  = []string{userAgent}
)

// errOneBody rejects a request that sets more than one of body, json and
// form. The core validates this at load; this guards the contract.
var errOneBody = errors.New("http: set at most one of body, json and form")

// build turns a call's request values into the VU's request template and
// returns it with the call's timeout. h is the call state's header map,
// cleared and refilled here.
func (v *vu) build(r cty.Value, h nethttp.Header) (*nethttp.Request, time.Duration, error) {
	cfg := v.cfg
	timeout := cfg.timeout
	if s, err := stringAttr(r, "timeout"); err != nil {
		return nil, 0, err
	} else if s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			return nil, 0, fmt.Errorf("http: request timeout %q must be a positive duration", s)
		}
		timeout = d
	}

	// The payload: at most one of body, json and form.
	var payload string
	var contentType []string
	n := 0
	if s := attr(r, "body"); !s.IsNull() {
		n++
		str, err := stringAttr(r, "body")
		if err != nil {
			return nil, 0, err
		}
		payload = str
	}
	if j := attr(r, "json"); !j.IsNull() {
		n++
		if !j.IsWhollyKnown() {
			return nil, 0, errors.New("http: json is not known")
		}
		j, _ = j.UnmarkDeep()
		b, err := ctyjson.Marshal(j, j.Type())
		if err != nil {
			return nil, 0, fmt.Errorf("http: json: %v", err)
		}
		payload, contentType = string(b), contentTypeJSON
	}
	if f := attr(r, "form"); !f.IsNull() {
		n++
		kvs, err := mapAttr(r, "form")
		if err != nil {
			return nil, 0, err
		}
		form := make(url.Values, len(kvs))
		for _, kv := range kvs {
			form.Add(kv[0], kv[1])
		}
		payload, contentType = form.Encode(), contentTypeForm
	}
	if n > 1 {
		return nil, 0, errOneBody
	}

	method := nethttp.MethodGet
	if n > 0 {
		method = nethttp.MethodPost
	}
	if s, err := stringAttr(r, "method"); err != nil {
		return nil, 0, err
	} else if s != "" {
		method = strings.ToUpper(s)
	}

	u, err := v.url(r)
	if err != nil {
		return nil, 0, err
	}

	// Headers: the target's, then the request's over them. The map is
	// reused, and the client adds cookies to it, so it starts empty.
	clear(h)
	host := cfg.host
	for _, f := range cfg.headers {
		h[f.key] = f.vals
	}
	if hv := attr(r, "headers"); !hv.IsNull() {
		kvs, err := mapAttr(r, "headers")
		if err != nil {
			return nil, 0, err
		}
		for _, kv := range kvs {
			k := nethttp.CanonicalHeaderKey(kv[0])
			if k == "Host" {
				host = kv[1]
				continue
			}
			h[k] = []string{kv[1]}
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
	if n > 0 {
		v.req.ContentLength = int64(len(payload))
		if len(payload) > 0 {
			// GetBody lets the client replay the body on a 307 or 308
			// redirect and on a retry over a fresh connection.
			v.req.GetBody = func() (io.ReadCloser, error) {
				return io.NopCloser(strings.NewReader(payload)), nil
			}
			v.req.Body, _ = v.req.GetBody()
		} else {
			v.req.Body = nethttp.NoBody
			v.req.GetBody = func() (io.ReadCloser, error) { return nethttp.NoBody, nil }
		}
	}
	return &v.req, timeout, nil
}

// url joins the call's path and query to the target's base URL.
func (v *vu) url(r cty.Value) (*url.URL, error) {
	path, err := stringAttr(r, "path")
	if err != nil {
		return nil, err
	}
	query := attr(r, "query")
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
		return nil, fmt.Errorf("http: path %q: %v", path, err)
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
	kvs, err := mapAttr(r, "query")
	if err != nil {
		return nil, err
	}
	if len(kvs) > 0 {
		q := make(url.Values, len(kvs))
		for _, kv := range kvs {
			q.Add(kv[0], kv[1])
		}
		if u.RawQuery == "" {
			u.RawQuery = q.Encode()
		} else {
			u.RawQuery += "&" + q.Encode()
		}
	}
	return u, nil
}
