package http

import (
	"errors"
	"io"
	nethttp "net/http"
	"net/url"
	"strings"
	"time"

	"github.com/zclconf/go-cty/cty"

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

// rendered is a request decoded from its values and encoded for the wire:
// all that a call sends but the VU's cookies. A request that is the same
// for every call is rendered once, by Prepare, and shared by every VU;
// any other is rendered per call into the VU's own, over the last. What a
// request is given of it (the URL, the body, the header values) is never
// written: a transport goroutine may still read those of a call that
// returned.
type rendered struct {
	method string
	url    *url.URL
	// header holds the target's headers, the request's over them, then
	// User-Agent and Content-Type unless one of those set them.
	header  []header
	host    string // the Host header, "" for the URL's host
	body    string
	hasBody bool
	// getBody lets the client replay the body on a 307 or 308 redirect,
	// and on a retry the transport makes when nothing of the request was
	// written; see docs/http.md.
	getBody func() (io.ReadCloser, error)
	opt     callOptions
}

// scratch is what a VU keeps from one rendering to the next, so that the
// next costs less (see render_cache.go).
type scratch struct {
	// out is the rendering the fields below describe, valid when the
	// last call to render into it succeeded, for cfg.
	out   *rendered
	cfg   *targetConfig
	valid bool
	// last holds the attributes out was rendered from: an attribute
	// equal to its last value keeps what out holds of it.
	last struct {
		timeout, expected, method, headers, query, path, json cty.Value
		hasBody                                               bool
		contentType                                           []string
	}
	// attrs are the attributes of the call being rendered.
	attrs requestAttrs
	// lastURL is the URL of the last call, and query its rendered query.
	lastURL *url.URL
	query   string
	// base joins a plain path to the target's base URL.
	base plainBase
	// json is the buffer a json attribute is encoded into, jsonBody the
	// payload it gave, and jsonCache what helps encode the next.
	json      []byte
	jsonBody  string
	jsonCache jsonCache
	// r is the request being rendered, when it came as one object (tmpl
	// nil); else it came as a template's holes, which tmpl and holes
	// hold, with holeCache helping encode the holes of a json
	// template (see template.go).
	r         cty.Value
	tmpl      *template
	holes     []cty.Value
	holeCache []jsonCache
}

// obj is an object holding the request's attribute name, whose value
// is v, for the readers of protocols that take an object: the request
// itself when it came as one.
func (s *scratch) obj(name string, v cty.Value) cty.Value {
	if s.tmpl == nil {
		return s.r
	}
	return cty.ObjectVal(map[string]cty.Value{name: v})
}

// prepared is a request Client.Prepare rendered once.
type prepared struct {
	client *Client // the client it was rendered for, with its target
	rendered
	// wire is the request as the engine writes it when the VU holds no
	// cookie.
	wire []byte
}

// render decodes a call's request values into out. It is the one decoder
// of a request: Prepare calls it once for a request that is the same for
// every call, Do per call for the others, and ValidateRequest at load, so
// that the three cannot disagree. Its errors are *protocols.AttrError
// naming the attribute.
func render(cfg *targetConfig, r cty.Value, out *rendered, s *scratch) error {
	s.attrs.read(r)
	s.r, s.tmpl = r, nil
	return renderAttrs(cfg, out, s)
}

// renderAttrs is render for a request whose attributes are in s.attrs,
// and, when its values came as a template's holes, the template in s.tmpl
// (see template.go).
func renderAttrs(cfg *targetConfig, out *rendered, s *scratch) error {
	// same is true for an attribute whose value is its value in the last
	// rendering into out: what out holds of it stays.
	reuse := s.valid && s.out == out && s.cfg == cfg
	same := func(cur, last *cty.Value) bool {
		if reuse && sameValue(cur, last) {
			return true
		}
		*last = *cur
		return false
	}
	s.valid, s.out, s.cfg = false, out, cfg // until this rendering succeeds
	a, l := &s.attrs, &s.last

	var err error
	if !same(&a.timeout, &l.timeout) {
		if out.opt.timeout, err = protocols.DurationAttr(s.obj("timeout", a.timeout), "timeout", cfg.timeout); err != nil {
			return err
		}
	}
	if !same(&a.expected, &l.expected) {
		if out.opt.expected, err = expectedStatus(s.obj("expected_status", a.expected)); err != nil {
			return err
		} else if !out.opt.expected.set {
			out.opt.expected = cfg.expected
		}
	}

	var contentType []string
	if out.body, contentType, out.hasBody, err = requestBody(s, reuse); err != nil {
		return err
	}

	if !same(&a.method, &l.method) || out.hasBody != l.hasBody {
		out.method = nethttp.MethodGet
		if out.hasBody {
			out.method = nethttp.MethodPost
		}
		if m, err := protocols.StringAttr(s.obj("method", a.method), "method"); err != nil {
			return err
		} else if m != "" {
			out.method = strings.ToUpper(m)
			if err := checkMethod(out.method); err != nil {
				return err
			}
		}
	}

	if out.url, err = requestURL(cfg, s, reuse); err != nil {
		return err
	}
	// The header list depends on the headers and on the content type.
	if !same(&a.headers, &l.headers) || !sameContentType(contentType, l.contentType) || out.hasBody != l.hasBody {
		if err := requestHeaders(cfg, s.obj("headers", a.headers), out); err != nil {
			return err
		}
		if contentType != nil && !hasHeader(out.header, "Content-Type") {
			out.header = append(out.header, header{key: "Content-Type", vals: contentType})
		}
	}
	l.hasBody, l.contentType = out.hasBody, contentType

	out.getBody = nil
	switch {
	case !out.hasBody:
	case out.body == "":
		out.getBody = noBody
	default:
		body := out.body
		out.getBody = func() (io.ReadCloser, error) { return newBodyReader(body), nil }
	}
	s.valid = true
	return nil
}

// sameContentType reports whether a and b are the same content type, one
// of the shared slices or nil.
func sameContentType(a, b []string) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return &a[0] == &b[0]
}

// requestHeaders sets out's header list and Host: the target's, then the
// request's over them, then User-Agent unless either set it.
func requestHeaders(cfg *targetConfig, r cty.Value, out *rendered) error {
	out.header = append(out.header[:0], cfg.headers...)
	out.host = cfg.host
	if hv := protocols.Attr(r, "headers"); !hv.IsNull() {
		kvs, err := protocols.StringMapAttr(r, "headers")
		if err != nil {
			return err
		}
		for _, kv := range kvs {
			if err := checkHeader("headers", kv); err != nil {
				return err
			}
			k := nethttp.CanonicalHeaderKey(kv.Key)
			if k == "Host" {
				out.host = kv.Value
				continue
			}
			out.header = setHeader(out.header, k, []string{kv.Value})
		}
	}
	if !hasHeader(out.header, "User-Agent") {
		out.header = append(out.header, header{key: "User-Agent", vals: userAgentValue})
	}
	return nil
}

// setHeader sets key in hs, replacing an entry of the same key.
func setHeader(hs []header, key string, vals []string) []header {
	for i := range hs {
		if hs[i].key == key {
			hs[i].vals = vals
			return hs
		}
	}
	return append(hs, header{key: key, vals: vals})
}

func hasHeader(hs []header, key string) bool {
	for i := range hs {
		if hs[i].key == key {
			return true
		}
	}
	return false
}

// request fills the VU's request template from rd and returns it. h is
// the call state's header map, cleared and refilled here: the client adds
// cookies to it, so it is the call's own, never rd's.
func (v *vu) request(rd *rendered, h nethttp.Header) *nethttp.Request {
	clear(h)
	for _, f := range rd.header {
		h[f.key] = f.vals
	}
	v.req = nethttp.Request{
		Method:     rd.method,
		URL:        rd.url,
		Proto:      "HTTP/1.1",
		ProtoMajor: 1,
		ProtoMinor: 1,
		Header:     h,
		Host:       rd.host,
	}
	if rd.hasBody {
		v.req.ContentLength = int64(len(rd.body))
		v.req.GetBody = rd.getBody
		v.req.Body = nethttp.NoBody
		if rd.body != "" {
			v.req.Body = newBodyReader(rd.body)
		}
	}
	return &v.req
}

// bodyReader is a request body: one allocation per call, where
// io.NopCloser(strings.NewReader(s)) makes two.
type bodyReader struct {
	strings.Reader
}

func newBodyReader(s string) *bodyReader {
	b := new(bodyReader)
	b.Reset(s)
	return b
}

func (*bodyReader) Close() error { return nil }

func noBody() (io.ReadCloser, error) { return nethttp.NoBody, nil }

// requestBody returns the payload of body, json or form, at most one of
// which may be set, and the content type it implies. A json body is
// encoded into s.json, then copied out, since calls in flight may still
// read the payload.
//
// reuse says that s describes the VU's last call (see render): a json
// value that is the very one of the last call keeps its payload.
func requestBody(s *scratch, reuse bool) (payload string, contentType []string, has bool, err error) {
	first := ""
	one := func(name string) error {
		if first != "" {
			return protocols.AttrErrorf(name, "cannot be set with %s: a request has one body; keep one of body, json and form", first)
		}
		first = name
		return nil
	}
	a := &s.attrs
	if b := a.body; !b.IsNull() {
		if err := one("body"); err != nil {
			return "", nil, false, err
		}
		if payload, err = protocols.StringAttr(s.obj("body", b), "body"); err != nil {
			return "", nil, false, err
		}
	}
	if j := a.json; !j.IsNull() {
		if err := one("json"); err != nil {
			return "", nil, false, err
		}
		if s.tmpl != nil && s.tmpl.json != nil {
			b, err := s.tmpl.json.append(s.json[:0], s.holes, &s.holeCache)
			if err != nil {
				return "", nil, false, err
			}
			s.json = b
			payload, contentType = string(b), contentTypeJSON
			s.jsonBody = payload
		} else if reuse && identical(&a.json, &s.last.json) {
			payload, contentType = s.jsonBody, contentTypeJSON
		} else {
			b, err := encodeJSONCached(s.json[:0], j, &s.jsonCache)
			if err != nil {
				return "", nil, false, err
			}
			s.json = b
			payload, contentType = string(b), contentTypeJSON
			s.jsonBody = payload
		}
	}
	s.last.json = a.json
	if f := a.form; !f.IsNull() {
		if err := one("form"); err != nil {
			return "", nil, false, err
		}
		kvs, err := protocols.StringMapAttr(s.obj("form", f), "form")
		if err != nil {
			return "", nil, false, err
		}
		payload, contentType = string(appendQuery(nil, kvs)), contentTypeForm
	}
	return payload, contentType, first != "", nil
}

// encodeJSON appends the json attribute's value j to dst. Most values
// are known and unmarked, and are encoded in one walk; the others are
// checked, unmarked and encoded after.
func encodeJSON(dst []byte, j cty.Value) ([]byte, error) {
	if b, ok := appendJSONValue(dst, j, j.Type()); ok {
		return b, nil
	}
	if !j.IsWhollyKnown() {
		return dst, protocols.AttrErrorf("json", "is not known")
	}
	j, _ = j.UnmarkDeep()
	b, err := appendJSON(dst, j)
	if err != nil {
		return dst, protocols.AttrErrorf("json", "cannot be encoded: %v", err)
	}
	return b, nil
}

// encodeJSONCached is encodeJSON with a VU's cache of its last JSON.
func encodeJSONCached(dst []byte, j cty.Value, c *jsonCache) ([]byte, error) {
	if b, ok := appendJSONCached(dst, j, j.Type(), c); ok {
		return b, nil
	}
	*c = jsonCache{} // it may be half updated
	return encodeJSON(dst, j)
}

// appendQuery appends kvs, sorted by key with no key twice (as
// protocols.StringMapAttr returns them), as url.Values.Encode would.
func appendQuery(dst []byte, kvs []protocols.Pair) []byte {
	for i, kv := range kvs {
		if i > 0 {
			dst = append(dst, '&')
		}
		dst = append(dst, url.QueryEscape(kv.Key)...)
		dst = append(dst, '=')
		dst = append(dst, url.QueryEscape(kv.Value)...)
	}
	return dst
}

// requestURL joins the call's path and query to the target's base URL.
// reuse says that s describes the VU's last call (see render): a query
// equal to its last value keeps its rendered form, and a path equal to
// its last value too keeps the last URL.
func requestURL(cfg *targetConfig, s *scratch, reuse bool) (*url.URL, error) {
	l := &s.last
	a := &s.attrs
	pv, qv := a.path, a.query
	samePath := reuse && sameValue(&a.path, &l.path)
	sameQuery := reuse && sameValue(&a.query, &l.query)
	if samePath && sameQuery && s.lastURL != nil {
		// The cached URL is shared by calls but never written to.
		return s.lastURL, nil
	}
	path := ""
	if pv.Type() == cty.String && pv.IsKnown() && !pv.IsNull() {
		path = pv.AsString()
	} else if p, err := protocols.StringAttr(s.obj("path", pv), "path"); err != nil {
		return nil, err
	} else {
		path = p
	}
	if !sameQuery {
		kvs, err := protocols.StringMapAttr(s.obj("query", qv), "query")
		if err != nil {
			return nil, err
		}
		s.query = string(appendQuery(nil, kvs))
	}
	// Set only once both are read: an error leaves s invalid anyway.
	l.path, l.query = pv, qv

	raw, joined := cfg.baseURL, path
	if path != "" && path[0] != '/' {
		joined = "/" + path
	}
	s.base.parse(raw)
	u := s.base.join(joined)
	if u == nil {
		var err error
		if u, err = url.Parse(raw + joined); err != nil {
			return nil, protocols.AttrErrorf("path", "%q does not make a URL with the target's base_url: %v", path, errors.Unwrap(err))
		}
		// url.Parse keeps a path's query as written, which may hold
		// what a request line cannot: encoded as EscapedPath encodes
		// the path.
		u.RawQuery = escapeQuery(u.RawQuery)
	}
	if cfg.baseQuery != "" {
		if u.RawQuery == "" {
			u.RawQuery = cfg.baseQuery
		} else {
			u.RawQuery = cfg.baseQuery + "&" + u.RawQuery
		}
	}
	if s.query != "" {
		if u.RawQuery == "" {
			u.RawQuery = s.query
		} else {
			u.RawQuery += "&" + s.query
		}
	}
	s.lastURL = u
	return u, nil
}

// escapeQuery returns q with every byte that may not appear as it is in a
// URL's query (RFC 3986 3.4) percent-encoded: a space, '"', '<', '>',
// '\', '^', '`', '{', '|', '}', control characters, bytes of non-ASCII
// characters, and a '%' that does not begin a %XX escape. What may appear
// is kept as written: letters and digits, "-._~", the delimiters
// "!$&'()*+,;=:@/?" (so '&' and '=' still split the query, and '+' is
// the server's to read), and %XX escapes. A query that needs nothing is
// returned as it is, without allocating.
func escapeQuery(q string) string {
	i := 0
	for i < len(q) && queryKeeps(q, i) {
		i++
	}
	if i == len(q) {
		return q
	}
	const hex = "0123456789ABCDEF"
	b := make([]byte, 0, len(q)+16)
	b = append(b, q[:i]...)
	for ; i < len(q); i++ {
		if c := q[i]; queryKeeps(q, i) {
			b = append(b, c)
		} else {
			b = append(b, '%', hex[c>>4], hex[c&15])
		}
	}
	return string(b)
}

// queryKeeps reports whether q[i] may stay as it is in a URL's query.
func queryKeeps(q string, i int) bool {
	c := q[i]
	if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' {
		return true
	}
	switch c {
	case '-', '.', '_', '~', '!', '$', '&', '\'', '(', ')', '*', '+', ',', ';', '=', ':', '@', '/', '?':
		return true
	case '%':
		return i+2 < len(q) && isHex(q[i+1]) && isHex(q[i+2])
	}
	return false
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
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
