package har

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hload/hload/config"
	"github.com/hload/hload/protocols"
	hloadhttp "github.com/hload/hload/protocols/http"
)

var update = flag.Bool("update", false, "rewrite testdata/*.hcl from testdata/*.har")

// load checks src with the decoders the run uses, as hload validate does,
// with a value for each secret.
func load(t *testing.T, src []byte, res *Result) {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "imported.hcl")
	if err := os.WriteFile(path, src, 0o644); err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{}
	for _, v := range res.Variables {
		if v.Sensitive {
			vars[v.Name] = "x"
		}
	}
	if _, diags := config.Load([]string{path}, config.Options{Protocols: protocols.NewRegistry(hloadhttp.New()), Vars: vars}); diags.HasErrors() {
		t.Fatalf("the imported test does not load: %s\n%s", diags.Error(), src)
	}
}

// TestGolden: each testdata/NAME.har gives testdata/NAME.hcl, which loads.
func TestGolden(t *testing.T) {
	hars, _ := filepath.Glob("testdata/*.har")
	if len(hars) == 0 {
		t.Fatal("no testdata/*.har")
	}
	for _, path := range hars {
		t.Run(filepath.Base(path), func(t *testing.T) {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			h, err := Parse(filepath.Base(path), data)
			if err != nil {
				t.Fatal(err)
			}
			res, err := Import(h, Options{})
			if err != nil {
				t.Fatal(err)
			}
			load(t, res.HCL, res)
			golden := strings.TrimSuffix(path, ".har") + ".hcl"
			if *update {
				if err := os.WriteFile(golden, res.HCL, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(res.HCL, want) {
				t.Errorf("%s differs from %s (go test -update rewrites it):\n%s", path, golden, res.HCL)
			}
		})
	}
}

// entry is a test's shorthand for a HAR entry.
type entry struct {
	method, url string
	reqHeaders  []NameVal
	body        string // JSON, or a form when it has no {
	status      int
	respHeaders []NameVal
	resp        string // a JSON body
	mime        string
	resType     string
}

func harOf(entries ...entry) *HAR {
	h := &HAR{File: "t.har"}
	start := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
	for i, e := range entries {
		x := Entry{Line: 10 * (i + 1), StartedDateTime: start.Add(time.Duration(i) * 200 * time.Millisecond), Time: 10, ResourceType: e.resType}
		if e.method == "" {
			e.method = "GET"
		}
		switch e.status {
		case 0:
			e.status = 200
		case -1:
			e.status = 0 // no response
		}
		if e.mime == "" {
			e.mime = "application/json"
		}
		x.Request = Request{Method: e.method, URL: e.url, Headers: e.reqHeaders}
		if e.body != "" {
			mt := "application/json"
			if !strings.HasPrefix(e.body, "{") {
				mt = "application/x-www-form-urlencoded"
			}
			x.Request.PostData = &PostData{MimeType: mt, Text: e.body}
		}
		x.Response = Response{Status: e.status, Headers: e.respHeaders, Content: Content{MimeType: e.mime, Text: e.resp}}
		h.Entries = append(h.Entries, x)
	}
	return h
}

func hv(kv ...string) []NameVal {
	var out []NameVal
	for i := 0; i < len(kv); i += 2 {
		out = append(out, NameVal{kv[i], kv[i+1]})
	}
	return out
}

const shop = "https://shop.example.com"

// TestInfer: what each recording gives, as lines the file must hold and
// must not hold, the captures found and the steps in the setup.
func TestInfer(t *testing.T) {
	login := entry{method: "POST", url: shop + "/api/login", body: `{"user":"ann","password":"hunter22"}`, resp: `{"token":"T0kenT0kenT0ken","expires":3600}`}
	cases := []struct {
		name     string
		entries  []entry
		opts     Options
		has      []string
		hasNot   []string
		captures []string // name=expr
		setup    []string
		skipped  int
	}{
		{
			name: "a bearer token from the login",
			entries: []entry{login,
				{url: shop + "/api/products", reqHeaders: hv("Authorization", "Bearer T0kenT0kenT0ken"), resp: `{"items":[{"id":17},{"id":42}]}`},
				{method: "POST", url: shop + "/api/orders", reqHeaders: hv("Authorization", "Bearer T0kenT0kenT0ken"), body: `{"product_id":42,"quantity":1}`, status: 201}},
			has:      []string{`Authorization = "Bearer ${vu.vars.token}"`, `product_id = vu.vars.product_id`, `quantity = 1`, `password = var.password`, "sensitive   = true"},
			hasNot:   []string{"T0kenT0kenT0ken", "hunter22"},
			captures: []string{`token=json("token")`, `product_id=json("items.1.id")`},
			setup:    []string{"login"},
		},
		{
			// A token shorter than minLong is not looked for inside the
			// header; it is found as the credential after the scheme.
			name: "a short bearer token after its scheme",
			entries: []entry{{method: "POST", url: shop + "/api/login", body: `{"user":"ann"}`, resp: `{"token":"sh0rtT"}`},
				{url: shop + "/api/me", reqHeaders: hv("Authorization", "Bearer sh0rtT")}},
			has:      []string{`Authorization = "Bearer ${vu.vars.token}"`},
			hasNot:   []string{`"Bearer sh0rtT"`},
			captures: []string{`token=json("token")`},
			setup:    []string{"login"},
		},
		{
			name: "a typed token is a variable",
			entries: []entry{{url: shop + "/api/me", reqHeaders: hv("Authorization", "Bearer typedTypedTyped", "X-Api-Key", "k3yk3yk3y")},
				{url: shop + "/api/me?access_token=qu3ryT0ken"}},
			has:    []string{`Authorization = "Bearer ${var.token}"`, `X-Api-Key = var.x_api_key`, `path = "/api/me?access_token=${var.access_token}"`},
			hasNot: []string{"typedTypedTyped", "k3yk3yk3y", "qu3ryT0ken", "setup"},
		},
		{
			name: "the browser's headers and cookies are dropped",
			entries: []entry{{url: shop + "/a", reqHeaders: hv("Cookie", "sid=abcdefgh", "User-Agent", "Mozilla/5.0", "Accept-Encoding", "br",
				"sec-ch-ua", `"Chromium"`, ":authority", "shop.example.com", "Connection", "keep-alive", "Referer", shop, "Accept", "*/*", "X-Request-Id", "r1")}},
			has:    []string{`X-Request-Id = "r1"`},
			hasNot: []string{"Cookie", "Mozilla", "Accept-Encoding", "Sec-", "authority", "Connection", "Referer", "Accept ="},
		},
		{
			name: "a value the client sent first is not captured",
			entries: []entry{{method: "POST", url: shop + "/api/login", body: `{"user":"annabelle"}`, resp: `{"user":"annabelle","token":"zzzzzzzzzz"}`},
				{url: shop + "/api/orders", reqHeaders: hv("X-User", "annabelle")}},
			has:    []string{`X-User = "annabelle"`},
			hasNot: []string{"= vu.vars", "capture {"},
		},
		{
			name: "short strings and numbers not under an id are not captured",
			entries: []entry{{url: shop + "/api/list", resp: `{"page":1,"total":3,"currency":"EUR","id":5}`},
				{url: shop + "/api/list?page=1&currency=EUR&n=3"},
				{url: shop + "/api/items/5"}},
			has:      []string{`path = "/api/list?page=1&currency=EUR&n=3"`, `path = "/api/items/${vu.vars.list_id}"`},
			captures: []string{`list_id=json("id")`},
		},
		{
			name: "a Set-Cookie value sent in a header",
			entries: []entry{{url: shop + "/", respHeaders: hv("Set-Cookie", "csrftoken=c5rfc5rfc5rf; Path=/"), mime: "text/html"},
				{method: "POST", url: shop + "/api/vote", reqHeaders: hv("X-CSRFToken", "c5rfc5rfc5rf", "Cookie", "csrftoken=c5rfc5rfc5rf"), body: `{"up":true}`}},
			has:      []string{`csrftoken = cookie("csrftoken")`, `X-Csrftoken = vu.vars.csrftoken`, `json    = { up = true }`},
			captures: []string{`csrftoken=cookie("csrftoken")`},
			setup:    []string{"home"},
		},
		{
			name: "a Location that names a new resource",
			entries: []entry{{method: "POST", url: shop + "/orders", body: "sku=AB-1", status: 303, respHeaders: hv("Location", "/orders/9001"), mime: "text/html"},
				{url: shop + "/orders/9001", mime: "text/html"}},
			has:      []string{`location = header("Location")`, `path = vu.vars.location`, "follow_redirects = false", `form   = { sku = "AB-1" }`, "status = 303"},
			captures: []string{`location=header("Location")`},
		},
		{
			name: "static assets are left out",
			entries: []entry{{url: shop + "/"}, {url: shop + "/app.js", mime: "text/javascript"}, {url: shop + "/logo", mime: "image/png"},
				{url: shop + "/font", resType: "font"}, {url: shop + "/x.css"}},
			hasNot:  []string{"app.js", "logo", "font", "x.css"},
			skipped: 4,
		},
		{
			name:    "static assets kept on request",
			entries: []entry{{url: shop + "/"}, {url: shop + "/app.js", mime: "text/javascript"}},
			opts:    Options{IncludeStatic: true},
			has:     []string{`path = "/app.js"`},
		},
		{
			name:    "several origins",
			entries: []entry{{url: shop + "/"}, {url: shop + "/b"}, {url: "https://cdn.example.net:8443/c"}},
			has: []string{`variable "base_url_cdn"`, `default     = "https://cdn.example.net:8443"`, `target   = "site"`, `target = "cdn"`,
				`base_url = var.base_url_cdn`},
		},
		{
			name:    "a recorded 404 and a 304",
			entries: []entry{{url: shop + "/gone", status: 404}, {url: shop + "/cached", status: 304}},
			has:     []string{"expected_status = [404]", "status = [200, 304]"},
		},
		{
			name: "a CORS preflight, a WebSocket and a failed request are left out",
			entries: []entry{{url: shop + "/"}, {method: "OPTIONS", url: shop + "/api", reqHeaders: hv("Access-Control-Request-Method", "POST"), status: 204},
				{url: "wss://shop.example.com/ws", status: 101}, {url: shop + "/ws", status: 101}, {url: shop + "/x", status: -1}, {url: "data:text/plain,hi"}},
			skipped: 5,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, err := Import(harOf(c.entries...), c.opts)
			if err != nil {
				t.Fatal(err)
			}
			load(t, res.HCL, res)
			src := string(res.HCL)
			for _, want := range c.has {
				if !strings.Contains(src, want) {
					t.Errorf("the file lacks %q:\n%s", want, src)
				}
			}
			for _, not := range c.hasNot {
				if strings.Contains(src, not) {
					t.Errorf("the file holds %q:\n%s", not, src)
				}
			}
			var caps []string
			for _, cp := range res.Captures {
				caps = append(caps, cp.Name+"="+cp.Expr)
			}
			if strings.Join(caps, " ") != strings.Join(c.captures, " ") {
				t.Errorf("captures %q, want %q", caps, c.captures)
			}
			var setup []string
			for _, s := range res.Steps {
				if s.Setup {
					setup = append(setup, s.Name)
				}
			}
			if strings.Join(setup, " ") != strings.Join(c.setup, " ") {
				t.Errorf("setup %q, want %q", setup, c.setup)
			}
			if len(res.Skipped) != c.skipped {
				t.Errorf("%d left out, want %d: %+v", len(res.Skipped), c.skipped, res.Skipped)
			}
		})
	}
}

// TestNothingLeft: a recording of static assets only is an error that
// says so, not an empty test.
func TestNothingLeft(t *testing.T) {
	_, err := Import(harOf(entry{url: shop + "/a.png", mime: "image/png"}), Options{})
	if err == nil || !strings.Contains(err.Error(), "no request is left to test") || !strings.Contains(err.Error(), "1 a static asset") {
		t.Errorf("error %v, want one that says nothing is left and why", err)
	}
}

// TestParseErrors: each file that is not a HAR is refused at its place.
func TestParseErrors(t *testing.T) {
	ok := `{"log": {"entries": [{"startedDateTime": "2026-01-01T00:00:00Z", "request": {"method": "GET", "url": "http://a/"}, "response": {"status": 200}}]}}`
	one := ok[21 : len(ok)-3]
	two := `{"log": {"entries": [` + one + ",\n" + one + "]}}"
	cases := []struct{ name, data, want string }{
		{"empty", "", "t.har:1:1: the file is empty"},
		{"cut short after a whole entry", two[:len(two)-10], "t.har:2:116: the file ends in the middle"},
		{"cut short", ok[:60], "t.har:1:61: the file ends in the middle of its JSON"},
		{"cut short after a newline", "{\"log\": {\n", "t.har:2:1: the file ends in the middle"},
		{"a syntax error", "{\"log\":\n {\"entries\": [}", "t.har:2:15: not valid JSON: invalid character '}'"},
		{"a syntax error after a multi-byte character", "{\"x\": \"é\" \"y\"}", "t.har:1:11: not valid JSON"},
		{"not an object", `[1]`, "t.har:1:1: expected a JSON object here"},
		{"no log", `{"a": 1}`, `t.har:1:1: this JSON is not a HAR: it has no "log" object`},
		{"no entries", `{"log": {"version": "1.2"}}`, `t.har:1:1: this HAR has no "log.entries"`},
		{"entries not a list", `{"log": {"entries": {}}}`, "t.har:1:21: log.entries must be a JSON list"},
		{"a wrong type", `{"log": {"entries": [{"time": "x"}]}}`, "t.har:1:31: log.entries.time is a JSON string; a HAR has a number there"},
		{"an entry without a URL", "{\"log\": {\"entries\": [\n  {\"startedDateTime\": \"2026-01-01T00:00:00Z\", \"request\": {\"method\": \"GET\"}}]}}", "t.har:2:3: an entry has no request.url"},
		{"more after the end", ok + ` {}`, "there is more after the HAR's closing brace"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse("t.har", []byte(c.data))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Parse: %v\nwant %q", err, c.want)
			}
		})
	}
	h, err := Parse("t.har", []byte("{\"log\": {\"entries\": [\n\n  "+one+"]}}"))
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Entries) != 1 || h.Entries[0].Line != 3 {
		t.Errorf("entries %+v, want one at line 3", h.Entries)
	}
}

// FuzzParse: no input makes Parse or Import panic or hang.
func FuzzParse(f *testing.F) {
	data, _ := os.ReadFile("testdata/firefox-shop.har")
	f.Add(data)
	f.Add([]byte(`{"log":{"entries":[]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		h, err := Parse("f.har", data)
		if err != nil {
			return
		}
		if _, err := Import(h, Options{}); err == nil {
			return
		}
	})
}
