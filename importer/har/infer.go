package har

import (
	"encoding/base64"
	"fmt"
	"mime"
	"net/url"
	"path"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Options says what Import keeps.
type Options struct {
	// IncludeStatic keeps images, scripts, styles, fonts and media,
	// which Import leaves out by default: a browser fetches them from
	// its cache or a CDN, and they are seldom what a test is about.
	IncludeStatic bool
}

// Result is an imported test and what Import inferred to write it.
type Result struct {
	// HCL is the test file.
	HCL []byte
	// Steps are the requests kept, in the order of the recording.
	Steps []Step
	// Skipped are the entries left out, and why.
	Skipped []Skipped
	// Captures are the values that flow from a response to later requests.
	Captures []Capture
	// Variables are the file's variables: the origins, vus, duration,
	// and the secrets typed into the recording.
	Variables []Variable
	// Entries is the number of entries in the file.
	Entries int
}

// Step is a request kept in the test.
type Step struct {
	Entry  int // the HAR entry, from 1
	Line   int // its line in the file
	Name   string
	Method string
	Path   string // the path as the test writes it, without its query
	Setup  bool   // in the scenario's setup, else in its flow
	Status int
}

// Skipped is an entry left out of the test.
type Skipped struct {
	Entry  int
	Line   int
	Method string
	URL    string // without its query, which may hold a secret
	Reason string
}

// Capture is a value a response carried and later requests sent.
type Capture struct {
	Name  string // vu.vars.<Name>
	Expr  string // json("token"), header("Location") ...
	Step  string // the request that captures it
	Setup bool
	// SentIn says where later requests sent it: "Authorization of products".
	SentIn []string
}

// Variable is a variable of the imported test.
type Variable struct {
	Name      string
	Default   string // "" when Sensitive: the value is never written
	Sensitive bool
	// From says where a sensitive value was typed: "POST /login, field password".
	From string
}

// Import infers a test from a parsed recording. It fails only when no
// request is left to test.
func Import(h *HAR, opts Options) (*Result, error) {
	im := &importer{har: h, known: map[string]*capture{}, clientSent: map[string]bool{}, secrets: map[string]*variable{}}
	res := &Result{Entries: len(h.Entries)}
	order := make([]int, len(h.Entries))
	for i := range order {
		order[i] = i
	}
	// Browsers save entries in the order they started; sort anyway, for
	// a file another tool wrote, keeping the file's order on a tie.
	sort.SliceStable(order, func(a, b int) bool {
		return h.Entries[order[a]].StartedDateTime.Before(h.Entries[order[b]].StartedDateTime)
	})
	for _, i := range order {
		e := &h.Entries[i]
		if reason := leaveOut(e, opts); reason != "" {
			u, _ := url.Parse(e.Request.URL)
			shown := e.Request.URL
			if u != nil {
				u.RawQuery, u.Fragment = "", ""
				shown = u.String()
			}
			res.Skipped = append(res.Skipped, Skipped{Entry: i + 1, Line: e.Line, Method: e.Request.Method, URL: shown, Reason: reason})
			continue
		}
		im.add(i+1, e)
	}
	if len(im.steps) == 0 {
		return nil, &Error{File: h.File, Msg: fmt.Sprintf("no request is left to test: the %d entries are all left out (%s)", len(h.Entries), skippedSummary(res.Skipped))}
	}
	im.chooseSetup()
	im.name()
	res.HCL = im.write()
	for _, s := range im.steps {
		res.Steps = append(res.Steps, Step{Entry: s.entry, Line: s.e.Line, Name: s.name, Method: s.method, Path: s.shownPath(), Setup: s.setup, Status: s.e.Response.Status})
	}
	for _, c := range im.captures {
		if len(c.users) == 0 {
			continue
		}
		rc := Capture{Name: c.name, Expr: c.expr(), Step: c.from.name, Setup: c.from.setup}
		for _, u := range c.users {
			rc.SentIn = append(rc.SentIn, u.where+" of "+u.step.name)
		}
		res.Captures = append(res.Captures, rc)
	}
	res.Variables = im.variables()
	return res, nil
}

func skippedSummary(s []Skipped) string {
	counts := map[string]int{}
	var reasons []string
	for _, k := range s {
		if counts[k.Reason] == 0 {
			reasons = append(reasons, k.Reason)
		}
		counts[k.Reason]++
	}
	var out []string
	for _, r := range reasons {
		out = append(out, fmt.Sprintf("%d %s", counts[r], r))
	}
	return strings.Join(out, ", ")
}

// staticTypes are Chromium's resource types of static assets.
var staticTypes = map[string]bool{"image": true, "stylesheet": true, "script": true, "font": true, "media": true, "manifest": true, "texttrack": true}

// staticExtensions are the file names of static assets, for a HAR
// without resource types (Firefox's).
var staticExtensions = map[string]bool{".png": true, ".jpg": true, ".jpeg": true, ".gif": true, ".svg": true, ".ico": true,
	".webp": true, ".avif": true, ".bmp": true, ".css": true, ".js": true, ".mjs": true, ".map": true, ".woff": true,
	".woff2": true, ".ttf": true, ".otf": true, ".eot": true, ".mp4": true, ".webm": true, ".mp3": true, ".wasm": true}

// leaveOut says why an entry is not a step, or "".
func leaveOut(e *Entry, opts Options) string {
	u, err := url.Parse(e.Request.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "not an HTTP request"
	}
	switch {
	case e.ResourceType == "websocket" || e.Response.Status == 101:
		return "a WebSocket"
	case e.Request.Method == "OPTIONS" && header(e.Request.Headers, "Access-Control-Request-Method") != "":
		return "a CORS preflight, which the browser sends on its own"
	case e.ResourceType == "preflight":
		return "a CORS preflight, which the browser sends on its own"
	case e.Response.Status == 0:
		return "no response was recorded"
	}
	if !opts.IncludeStatic && isStatic(e, u) {
		return "a static asset (--include-static keeps it)"
	}
	return ""
}

func isStatic(e *Entry, u *url.URL) bool {
	if staticTypes[e.ResourceType] {
		return true
	}
	mt, _, _ := mime.ParseMediaType(e.Response.Content.MimeType)
	switch {
	case strings.HasPrefix(mt, "image/"), strings.HasPrefix(mt, "font/"), strings.HasPrefix(mt, "audio/"), strings.HasPrefix(mt, "video/"),
		mt == "text/css", strings.Contains(mt, "javascript"), strings.Contains(mt, "ecmascript"), mt == "application/wasm",
		strings.Contains(mt, "font"):
		return true
	}
	return staticExtensions[strings.ToLower(path.Ext(u.Path))]
}

// header returns the first value of the header name, whatever its case.
func header(h []NameVal, name string) string {
	for _, nv := range h {
		if strings.EqualFold(nv.Name, name) {
			return nv.Value
		}
	}
	return ""
}

// part is a piece of a value a request sends: text as recorded, or a
// capture or variable that replaces what the recording held.
type part struct {
	lit      string
	capture  *capture
	variable *variable
}

// parts is a value a request sends.
type parts []part

func lit(s string) parts { return parts{{lit: s}} }

// literal reports whether p holds no capture or variable.
func (p parts) literal() bool {
	for _, x := range p {
		if x.capture != nil || x.variable != nil {
			return false
		}
	}
	return true
}

func (p parts) String() string {
	var b strings.Builder
	for _, x := range p {
		b.WriteString(x.lit)
	}
	return b.String()
}

// capture is a value a response carried, as a capture block would read it.
type capture struct {
	fn, arg string // json "items.1.id"; header "Location"; cookie "sid"
	value   string
	key     string // the JSON key, header or cookie name
	parent  string // the JSON key above it
	number  bool
	from    *step
	name    string
	users   []use // where later requests sent it
	// credential: sent in an Authorization or similar header, or under a
	// key that names a secret; the step that captures the first one is
	// the login.
	credential bool
}

func (c *capture) expr() string { return fmt.Sprintf("%s(%q)", c.fn, c.arg) }

// variable is a secret typed into the recording, or an origin.
type variable struct {
	name, value string
	sensitive   bool
	from        string
	hint        string
}

// header of a step, with its value as sent.
type sentHeader struct {
	name  string
	value parts
}

// formField is a field of a form body.
type formField struct {
	name  string
	value parts
}

// step is a request kept in the test.
type step struct {
	entry   int
	e       *Entry
	u       *url.URL
	origin  *origin
	method  string
	path    []parts // the path's segments, escaped as recorded
	query   []formField
	headers []sentHeader
	json    *jnode
	form    []formField
	body    parts
	// captures the step makes, in the order they were found.
	captures []*capture
	setup    bool
	name     string
	// gap is the time since the previous kept request ended.
	gap time.Duration
	// uses are the steps whose captures this step sends.
	uses []*step
	// wholePath is the Location that is the whole of the path, or nil.
	wholePath *capture
	// login: it sends a password typed into a form or a JSON body.
	login bool
}

// origin is a scheme and a host the recording sent requests to.
type origin struct {
	url     string
	count   int
	first   int
	target  string
	varName string
}

type importer struct {
	har      *HAR
	steps    []*step
	captures []*capture
	origins  []*origin
	// known are the values responses carried, by value: the first
	// response that carried each.
	known map[string]*capture
	// long are the known values long enough to be found inside a
	// longer text, longest first.
	long []*capture
	// clientSent are the values a request sent before any response
	// carried them: typed or built in, not to be captured.
	clientSent map[string]bool
	secrets    map[string]*variable // by value
	secretList []*variable
	lastEnd    time.Time
}

// minString is the shortest string value matched: shorter ones ("ok",
// "USD") recur by chance.
const minString = 4

// minLong is the shortest value found inside a longer text (a token in
// "Bearer ..."); shorter ones must be the whole of what is sent.
const minLong = 8

// secretKey matches the names of fields, parameters and headers whose
// typed values are secrets.
var secretKey = regexp.MustCompile(`(?i)(passw|passwd|^pwd$|^pass$|passphrase|secret|token|api[-_]?key|apikey|^auth|credential|^otp$|^pin$|session|csrf|xsrf|jwt)`)

// passwordKey matches the fields whose typed value makes a request a login.
var passwordKey = regexp.MustCompile(`(?i)(passw|passwd|^pwd$|^pass$|passphrase)`)

// idKey matches the JSON keys whose numbers are ids.
var idKey = regexp.MustCompile(`(?i)(^id$|_id$|[a-z]Id$|ID$|^uuid$|^key$)`)

// dropped are the request headers a test does not send as recorded:
// hop-by-hop ones, those the client computes (Host, Content-Length), the
// cookies (the VU's jar keeps them) and those only a browser sends.
var dropped = map[string]bool{
	"connection": true, "keep-alive": true, "proxy-connection": true, "transfer-encoding": true, "te": true, "trailer": true,
	"upgrade": true, "proxy-authorization": true, "host": true, "content-length": true, "cookie": true,
	"user-agent": true, "accept-encoding": true, "accept-language": true, "referer": true, "origin": true, "dnt": true,
	"upgrade-insecure-requests": true, "priority": true, "pragma": true, "cache-control": true, "if-none-match": true,
	"if-modified-since": true, "purpose": true, "x-client-data": true,
}

// droppedHeader reports whether a recorded request header is left out.
func droppedHeader(name, value string, bodyTyped bool) bool {
	n := strings.ToLower(name)
	switch {
	case dropped[n], strings.HasPrefix(n, ":"), strings.HasPrefix(n, "sec-"):
		return true
	case n == "accept" && strings.Contains(value, "*/*"):
		return true // a browser's default, not the page's choice
	case n == "content-type" && bodyTyped:
		return true // json and form set it
	}
	return false
}

// plainResponseHeaders are response headers that carry nothing a client
// sends back.
var plainResponseHeaders = map[string]bool{
	"date": true, "content-type": true, "content-length": true, "server": true, "vary": true, "cache-control": true,
	"server-timing": true, "connection": true, "keep-alive": true, "expires": true, "last-modified": true, "age": true,
	"accept-ranges": true, "content-encoding": true, "transfer-encoding": true, "set-cookie": true, "pragma": true,
	"via": true, "alt-svc": true, "report-to": true, "nel": true, "permissions-policy": true, "referrer-policy": true,
	"strict-transport-security": true, "content-security-policy": true, "x-content-type-options": true,
	"x-frame-options": true, "x-xss-protection": true, "timing-allow-origin": true, "status": true,
}

func (im *importer) origin(u *url.URL, entry int) *origin {
	key := u.Scheme + "://" + u.Host
	for _, o := range im.origins {
		if o.url == key {
			o.count++
			return o
		}
	}
	o := &origin{url: key, count: 1, first: entry}
	im.origins = append(im.origins, o)
	return o
}

// add makes an entry a step: what its request sends, resolved against
// what earlier responses carried, then what its response carries.
func (im *importer) add(n int, e *Entry) {
	u, _ := url.Parse(e.Request.URL)
	s := &step{entry: n, e: e, u: u, method: strings.ToUpper(e.Request.Method)}
	s.origin = im.origin(u, n)
	if !im.lastEnd.IsZero() {
		s.gap = max(0, e.StartedDateTime.Sub(im.lastEnd))
	}
	if end := e.StartedDateTime.Add(time.Duration(e.Time * float64(time.Millisecond))); end.After(im.lastEnd) {
		im.lastEnd = end
	}
	im.steps = append(im.steps, s)

	// A redirect's Location that names a resource (an id in its path, or
	// a query) is the whole path of the request that follows it: the
	// request keeps no path or query of its own, and what it names below
	// has no path either.
	if c := im.known[u.RequestURI()]; c != nil && c.fn == "header" && c.arg == "Location" && namesResource(c.value) {
		s.wholePath = c
		im.use(s, c, "the path")
		u = &url.URL{Scheme: u.Scheme, Host: u.Host}
	}
	var sent []string // what this request sends as recorded, once resolved
	sent = im.addPath(s, u, sent)
	sent = im.addQuery(s, u, sent)
	bodyTyped := false
	if pd := e.Request.PostData; pd != nil {
		bodyTyped, sent = im.addBody(s, u, pd, sent)
	}
	sent = im.addHeaders(s, u, bodyTyped, sent)
	for _, v := range sent {
		if im.known[v] == nil {
			im.clientSent[v] = true
		}
	}
	im.carried(s)
}

// addPath resolves the path, a segment at a time, unless a redirect gave
// the whole path. It returns sent with each segment as recorded.
func (im *importer) addPath(s *step, u *url.URL, sent []string) []string {
	if s.wholePath != nil {
		return sent
	}
	for seg := range strings.SplitSeq(strings.TrimPrefix(u.EscapedPath(), "/"), "/") {
		raw, err := url.PathUnescape(seg)
		if err != nil {
			raw = seg
		}
		p := im.resolve(s, raw, "the path", true)
		if p.literal() {
			p = lit(seg)
		}
		s.path = append(s.path, p)
		sent = append(sent, raw)
	}
	return sent
}

// addQuery resolves the query, a parameter at a time; a literal value
// under a secret-looking key becomes a sensitive variable. It returns
// sent with each value as recorded.
func (im *importer) addQuery(s *step, u *url.URL, sent []string) []string {
	if u.RawQuery == "" {
		return sent
	}
	for pair := range strings.SplitSeq(u.RawQuery, "&") {
		k, v, _ := strings.Cut(pair, "=")
		key, _ := url.QueryUnescape(k)
		val, err := url.QueryUnescape(v)
		if err != nil {
			val = v
		}
		p := im.resolve(s, val, "the query", true)
		if p.literal() {
			p = lit(v)
			if secretKey.MatchString(key) && val != "" {
				p = parts{{variable: im.secret(val, key, fmt.Sprintf("%s %s, query parameter %s", s.method, u.Path, key))}}
			}
		}
		s.query = append(s.query, formField{name: k, value: p})
		sent = append(sent, val)
	}
	return sent
}

// addBody resolves the body: field by field when it is JSON or a form
// that names each field once (typed), as text otherwise. It reports
// whether the body was typed, and returns sent with what it sends.
func (im *importer) addBody(s *step, u *url.URL, pd *PostData, sent []string) (bool, []string) {
	mt, _, _ := mime.ParseMediaType(pd.MimeType)
	if mt == "" {
		mt, _, _ = mime.ParseMediaType(header(s.e.Request.Headers, "Content-Type"))
	}
	typed := false
	switch {
	case strings.Contains(mt, "json"):
		typed, sent = im.addJSONBody(s, u, pd.Text, sent)
	case mt == "application/x-www-form-urlencoded":
		typed, sent = im.addFormBody(s, u, pd, sent)
	}
	if !typed && pd.Text != "" {
		s.body = im.resolve(s, pd.Text, "the body", false)
		sent = append(sent, pd.Text)
	}
	return typed, sent
}

// addJSONBody resolves a JSON body leaf by leaf; a literal string under a
// secret-looking key becomes a sensitive variable, and one under a
// password key makes the step a login. It reports false when the text
// is not JSON.
func (im *importer) addJSONBody(s *step, u *url.URL, text string, sent []string) (bool, []string) {
	n, ok := parseJSON(text)
	if !ok {
		return false, sent
	}
	s.json = n
	for _, l := range leaves(n) {
		p := im.resolve(s, l.node.text, "the body", true)
		if p.literal() && l.node.kind == 's' && secretKey.MatchString(l.key) && l.node.text != "" {
			p = parts{{variable: im.secret(l.node.text, l.key, fmt.Sprintf("%s %s, body field %s", s.method, u.Path, l.path))}}
			s.login = s.login || passwordKey.MatchString(l.key)
		}
		l.node.sent = p
		sent = append(sent, l.node.text)
	}
	return true, sent
}

// addFormBody resolves a form body field by field, as addJSONBody does a
// JSON one. It reports false when a field repeats: form takes each name
// once, so such a body is sent as text.
func (im *importer) addFormBody(s *step, u *url.URL, pd *PostData, sent []string) (bool, []string) {
	fields := formFields(pd)
	seen := map[string]bool{}
	for _, f := range fields {
		if seen[f.Name] {
			return false, sent
		}
		seen[f.Name] = true
	}
	for _, f := range fields {
		val, err := url.QueryUnescape(f.Value)
		if err != nil || len(pd.Params) == 0 {
			val = f.Value
		}
		p := im.resolve(s, val, "the body", true)
		if p.literal() && secretKey.MatchString(f.Name) && val != "" {
			p = parts{{variable: im.secret(val, f.Name, fmt.Sprintf("%s %s, form field %s", s.method, u.Path, f.Name))}}
			s.login = s.login || passwordKey.MatchString(f.Name)
		}
		s.form = append(s.form, formField{name: f.Name, value: p})
		sent = append(sent, val)
	}
	return true, sent
}

// formFields are a form body's fields in order: the recorded params, or,
// when the HAR has none, the fields parsed from the text (unescaped).
func formFields(pd *PostData) []NameVal {
	fields := pd.Params
	if len(fields) > 0 {
		return fields
	}
	q, _ := url.ParseQuery(pd.Text)
	for pair := range strings.SplitSeq(pd.Text, "&") {
		k, _, _ := strings.Cut(pair, "=")
		if key, err := url.QueryUnescape(k); err == nil && q.Has(key) {
			fields = append(fields, NameVal{Name: key, Value: q[key][0]})
			q[key] = q[key][1:]
		}
	}
	return fields
}

// addHeaders resolves the headers the request sends (droppedHeader says
// which it leaves to hload), and returns sent with each value as recorded.
func (im *importer) addHeaders(s *step, u *url.URL, bodyTyped bool, sent []string) []string {
	for _, h := range s.e.Request.Headers {
		if droppedHeader(h.Name, h.Value, bodyTyped) {
			continue
		}
		p := im.headerValue(s, u, h)
		if strings.EqualFold(h.Name, "Authorization") || secretKey.MatchString(h.Name) {
			for _, x := range p {
				if x.capture != nil {
					x.capture.credential = true
				}
			}
		}
		s.headers = append(s.headers, sentHeader{name: h.Name, value: p})
		sent = append(sent, h.Value)
	}
	return sent
}

// headerValue resolves one header's value. A literal "Bearer TOKEN" is
// resolved again for the credential after its scheme; a literal under a
// secret-looking name becomes a sensitive variable.
func (im *importer) headerValue(s *step, u *url.URL, h NameVal) parts {
	where := h.Name
	p := im.resolve(s, h.Value, where, true)
	if !p.literal() {
		return p
	}
	if scheme, cred, ok := strings.Cut(h.Value, " "); ok && !strings.Contains(cred, " ") && cred != "" {
		if c := im.resolve(s, cred, where, true); !c.literal() {
			p = append(lit(scheme+" "), c...)
		} else if secretKey.MatchString(h.Name) {
			p = append(lit(scheme+" "), part{variable: im.secret(cred, schemeVar(scheme), fmt.Sprintf("%s %s, header %s", s.method, u.Path, h.Name))})
		}
	} else if secretKey.MatchString(h.Name) && h.Value != "" {
		p = parts{{variable: im.secret(h.Value, h.Name, fmt.Sprintf("%s %s, header %s", s.method, u.Path, h.Name))}}
	}
	return p
}

// namesResource reports whether a redirect's Location names a resource
// made for this user (an id in its path, or a query), which a later
// request must take from the response; a fixed page such as /account is
// written as it is.
func namesResource(location string) bool {
	u, err := url.Parse(location)
	if err != nil || u.Host != "" {
		return false
	}
	if u.RawQuery != "" {
		return true
	}
	for seg := range strings.SplitSeq(u.Path, "/") {
		if idSegment.MatchString(seg) {
			return true
		}
	}
	return false
}

// schemeVar names the variable of a typed credential after its scheme.
func schemeVar(scheme string) string {
	switch strings.ToLower(scheme) {
	case "bearer", "token":
		return "token"
	case "basic":
		return "basic_auth"
	}
	return scheme + "_credentials"
}

// secret returns the variable that replaces a typed secret, one per value.
func (im *importer) secret(value, key, from string) *variable {
	if v := im.secrets[value]; v != nil {
		return v
	}
	v := &variable{value: value, sensitive: true, from: from, hint: key}
	im.secrets[value] = v
	im.secretList = append(im.secretList, v)
	return v
}

// resolve turns a value a request sends into parts: a capture where an
// earlier response carried it. whole: the value is a field of its own (a
// path segment, a parameter, a JSON leaf, a header), which short values
// and numbers must fill exactly to match; any value may still be found
// inside it when it is long.
func (im *importer) resolve(s *step, value, where string, whole bool) parts {
	if c := im.known[value]; c != nil && whole && eligible(c) {
		im.use(s, c, where)
		return parts{{capture: c}}
	}
	var out parts
	rest := value
	for len(rest) > 0 {
		best, at := (*capture)(nil), -1
		for _, c := range im.long {
			if i := strings.Index(rest, c.value); i >= 0 && (at < 0 || i < at) {
				best, at = c, i
			}
		}
		if best == nil {
			break
		}
		if at > 0 {
			out = append(out, part{lit: rest[:at]})
		}
		out = append(out, part{capture: best})
		im.use(s, best, where)
		rest = rest[at+len(best.value):]
	}
	if len(out) == 0 {
		return lit(value)
	}
	if rest != "" {
		out = append(out, part{lit: rest})
	}
	return out
}

// eligible reports whether a carried value is distinctive enough to be
// matched as the whole of a field: a number only under an id's key or
// with five digits or more, a string of minString characters or more.
func eligible(c *capture) bool {
	if c.number || isDigits(c.value) {
		return idKey.MatchString(c.key) || len(strings.TrimLeft(c.value, "-")) >= 5
	}
	return len(c.value) >= minString
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// use is a place a request sent a captured value.
type use struct {
	where string // "Authorization", "the path"
	step  *step
}

func (im *importer) use(s *step, c *capture, where string) {
	if u := (use{where, s}); !slices.Contains(c.users, u) {
		c.users = append(c.users, u)
	}
	if !slices.Contains(s.uses, c.from) && c.from != s {
		s.uses = append(s.uses, c.from)
	}
}

// carried notes the values a step's response carried that no request
// sent before: its JSON body's strings and numbers, its headers, its
// cookies.
func (im *importer) carried(s *step) {
	r := &s.e.Response
	note := func(c *capture) {
		if c.value == "" || im.known[c.value] != nil || im.clientSent[c.value] {
			return
		}
		c.from = s
		im.known[c.value] = c
		s.captures = append(s.captures, c)
		im.captures = append(im.captures, c)
		if len(c.value) >= minLong && !isDigits(c.value) {
			at, _ := slices.BinarySearchFunc(im.long, c, func(a, b *capture) int { return len(b.value) - len(a.value) })
			im.long = slices.Insert(im.long, at, c)
		}
	}
	text := r.Content.Text
	if r.Content.Encoding == "base64" {
		b, err := base64.StdEncoding.DecodeString(text)
		if err != nil {
			text = ""
		} else {
			text = string(b)
		}
	}
	if mt, _, _ := mime.ParseMediaType(r.Content.MimeType); strings.Contains(mt, "json") || strings.HasPrefix(strings.TrimSpace(text), "{") {
		if n, ok := parseJSON(text); ok {
			for _, l := range leaves(n) {
				note(&capture{fn: "json", arg: l.path, value: l.node.text, key: l.key, parent: l.parent, number: l.node.kind == 'n',
					credential: secretKey.MatchString(l.key)})
			}
		}
	}
	for _, h := range r.Headers {
		n := strings.ToLower(h.Name)
		if plainResponseHeaders[n] || strings.HasPrefix(n, "access-control-") || strings.HasPrefix(n, ":") {
			continue
		}
		note(&capture{fn: "header", arg: canonical(h.Name), value: h.Value, key: h.Name, credential: secretKey.MatchString(h.Name)})
	}
	cookies := r.Cookies
	if len(cookies) == 0 {
		for _, h := range r.Headers {
			if strings.EqualFold(h.Name, "Set-Cookie") {
				for line := range strings.SplitSeq(h.Value, "\n") {
					nv, _, _ := strings.Cut(line, ";")
					if name, value, ok := strings.Cut(strings.TrimSpace(nv), "="); ok {
						cookies = append(cookies, NameVal{Name: name, Value: value})
					}
				}
			}
		}
	}
	for _, c := range cookies {
		note(&capture{fn: "cookie", arg: c.Name, value: c.Value, key: c.Name, credential: secretKey.MatchString(c.Name)})
	}
}

// canonical writes a header's name as HTTP/1.1 does, for a HAR of an
// HTTP/2 exchange, whose names are lower case.
func canonical(name string) string {
	words := strings.Split(name, "-")
	for i, w := range words {
		if w != "" {
			words[i] = strings.ToUpper(w[:1]) + strings.ToLower(w[1:])
		}
	}
	return strings.Join(words, "-")
}

// chooseSetup moves the login, and the steps it needs, to the setup: the
// first step that sends a typed password, or whose capture later requests
// send as a credential (a bearer token, a CSRF token). A test whose every
// step it would take keeps them in its flow.
func (im *importer) chooseSetup() {
	var login *step
	for _, s := range im.steps {
		if s.login {
			login = s
			break
		}
		for _, c := range s.captures {
			if c.credential && len(c.users) > 0 {
				login = s
				break
			}
		}
		if login != nil {
			break
		}
	}
	if login == nil {
		return
	}
	var mark func(s *step)
	mark = func(s *step) {
		if s.setup {
			return
		}
		s.setup = true
		for _, d := range s.uses {
			mark(d)
		}
	}
	mark(login)
	for _, s := range im.steps {
		if !s.setup {
			return
		}
	}
	for _, s := range im.steps {
		s.setup = false
	}
}

// shownPath is the step's path as the test writes it, captures as
// {name}, for comments and messages; its query is left out.
func (s *step) shownPath() string {
	if s.wholePath != nil {
		return "{" + s.wholePath.name + "}"
	}
	var b strings.Builder
	for _, seg := range s.path {
		b.WriteByte('/')
		for _, p := range seg {
			switch {
			case p.capture != nil:
				b.WriteString("{" + p.capture.name + "}")
			case p.variable != nil:
				b.WriteString("{" + p.variable.name + "}")
			default:
				b.WriteString(p.lit)
			}
		}
	}
	return b.String()
}

var notWord = regexp.MustCompile(`[^a-z0-9]+`)

// ident turns a name into an HCL identifier in snake case.
func ident(s string) string {
	var b strings.Builder
	for i, r := range s {
		if r >= 'A' && r <= 'Z' {
			if i > 0 && s[i-1] >= 'a' && s[i-1] <= 'z' {
				b.WriteByte('_')
			}
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	out := strings.Trim(notWord.ReplaceAllString(b.String(), "_"), "_")
	if out == "" || out[0] >= '0' && out[0] <= '9' {
		out = "v_" + out
	}
	return out
}

func singular(s string) string {
	switch {
	case strings.HasSuffix(s, "ies") && len(s) > 3:
		return s[:len(s)-3] + "y"
	case strings.HasSuffix(s, "sses"), strings.HasSuffix(s, "xes"):
		return s[:len(s)-2]
	case strings.HasSuffix(s, "s") && !strings.HasSuffix(s, "ss") && len(s) > 1:
		return s[:len(s)-1]
	}
	return s
}

var idSegment = regexp.MustCompile(`^([0-9]+|[0-9a-fA-F]{8,}|[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})$`)

// actions are path words that already say what a request does.
var actions = map[string]bool{"login": true, "logout": true, "signin": true, "signout": true, "signup": true, "register": true,
	"auth": true, "token": true, "oauth": true, "authenticate": true, "search": true, "checkout": true, "graphql": true}

// noun is the last word of the step's path that is not an id, and
// whether an id followed it.
func (s *step) noun() (string, bool) {
	idAfter := false
	for i := len(s.path) - 1; i >= 0; i-- {
		seg := s.path[i]
		if !seg.literal() || idSegment.MatchString(seg.String()) {
			idAfter = true
			continue
		}
		w := seg.String()
		if dec, err := url.PathUnescape(w); err == nil {
			w = dec
		}
		w = strings.TrimSuffix(w, path.Ext(w))
		if id := ident(w); w != "" && id != "" && !strings.HasPrefix(id, "v_") {
			return id, idAfter
		}
	}
	return "", idAfter
}

// name names the steps, captures and variables, each name unique in its
// kind.
func (im *importer) name() {
	steps := names{}
	for _, s := range im.steps {
		s.name = steps.take(s.stepName())
	}
	caps := names{}
	for _, c := range im.captures {
		if len(c.users) > 0 {
			c.name = caps.take(c.captureName())
		}
	}
	vars := names{"base_url": 1, "vus": 1, "duration": 1}
	im.nameOrigins(vars)
	for _, v := range im.secretList {
		v.name = vars.take(ident(v.hint))
	}
}

// names counts the names taken in one kind, so that each is unique.
type names map[string]int

// take returns n, or n_2, n_3 ... when n is already taken.
func (t names) take(n string) string {
	t[n]++
	if t[n] == 1 {
		return n
	}
	return fmt.Sprintf("%s_%d", n, t[n])
}

// stepName is what a step is called before names are made unique: the
// noun of its path ("home" for none), singular when an id follows it,
// after the method when the step is not a GET and the noun not an action.
func (s *step) stepName() string {
	n, idAfter := s.noun()
	switch {
	case n == "":
		n = "home"
	case idAfter:
		n = singular(n)
	}
	if s.method != "GET" && !actions[n] {
		n = strings.ToLower(s.method) + "_" + n
	}
	return n
}

// captureName is what a capture is called before names are made unique:
// its key, after its owner's noun when the key alone says nothing (an
// "id" of a JSON object), without the x_ of a header.
func (c *capture) captureName() string {
	switch c.fn {
	case "json":
		n := ident(c.key)
		if n == "id" || n == "uuid" || n == "key" || n == "value" || strings.HasPrefix(n, "v_") {
			owner := ident(singular(c.parent))
			if c.parent == "" || generic[c.parent] {
				owner, _ = c.from.noun()
				owner = singular(owner)
			}
			if owner == "" || strings.HasPrefix(owner, "v_") {
				owner = "item"
			}
			n = owner + "_" + strings.TrimPrefix(n, "v_")
		}
		return n
	case "header":
		return strings.TrimPrefix(ident(c.key), "x_")
	default:
		return ident(c.key)
	}
}

// nameOrigins names each origin's target and variable: the most used is
// the site, with base_url; the others take the first label of their
// host, and a variable from vars.
func (im *importer) nameOrigins(vars names) {
	targets := names{}
	for i, o := range im.sortedOrigins() {
		if i == 0 {
			o.target, o.varName = targets.take("site"), "base_url"
			continue
		}
		u, _ := url.Parse(o.url)
		first := strings.Split(u.Hostname(), ".")[0]
		label := ident(first)
		if isDigits(first) || strings.HasPrefix(label, "v_") {
			label = "site"
		}
		label = targets.take(label)
		o.target, o.varName = label, vars.take("base_url_"+label)
	}
}

// generic are JSON keys of lists that say nothing of what they hold.
var generic = map[string]bool{"items": true, "data": true, "results": true, "result": true, "list": true, "records": true,
	"entries": true, "rows": true, "content": true, "payload": true, "response": true, "nodes": true, "edges": true}

// variables lists the test's variables in the order the file declares them.
func (im *importer) variables() []Variable {
	var out []Variable
	for _, o := range im.sortedOrigins() {
		out = append(out, Variable{Name: o.varName, Default: o.url})
	}
	out = append(out, Variable{Name: "vus", Default: "1"}, Variable{Name: "duration", Default: im.duration()})
	for _, v := range im.secretList {
		out = append(out, Variable{Name: v.name, Sensitive: true, From: v.from})
	}
	return out
}

// sortedOrigins lists the origins, the main one first.
func (im *importer) sortedOrigins() []*origin {
	o := slices.Clone(im.origins)
	sort.SliceStable(o, func(a, b int) bool { return o[a].count > o[b].count })
	return o
}

// duration is the recording's length, rounded up to a second.
func (im *importer) duration() string {
	first := im.steps[0].e.StartedDateTime
	d := im.lastEnd.Sub(first)
	secs := int64((d + time.Second - 1) / time.Second)
	return strconv.FormatInt(max(secs, 1), 10) + "s"
}
