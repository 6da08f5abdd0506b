package http

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	nethttp "net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zclconf/go-cty/cty"

	"github.com/hload/hload/config"
	"github.com/hload/hload/core"
	"github.com/hload/hload/protocols"
)

// prepare has c render r once, as the core does for a request that is
// the same for every call.
func prepare(t testing.TB, c protocols.Client, r cty.Value) any {
	t.Helper()
	p, err := c.(protocols.Preparer).Prepare(r)
	if err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	return p
}

// doPrepared is do for a prepared request.
func doPrepared(t testing.TB, c protocols.Client, vu uint64, r cty.Value, prepared any, keepBody bool) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	var res result
	c.Do(ctx, protocols.Call{VU: vu, Request: r, Prepared: prepared, KeepBody: keepBody}, func(s protocols.Sample) {
		if s.Metric == protocols.MetricRequest {
			res.request = s
			res.body = string(s.Body)
			res.count++
		}
	})
	return res
}

// wireRequest is what a server saw of one request, as text to compare.
func wireRequest(r *nethttp.Request) string {
	b, _ := io.ReadAll(r.Body)
	var hs []string
	for _, k := range []string{"Content-Type", "User-Agent", "Accept", "X-Target", "X-Request", "Cookie", "Authorization"} {
		if v, ok := r.Header[k]; ok {
			hs = append(hs, fmt.Sprintf("%s=%q", k, v))
		}
	}
	return fmt.Sprintf("%s %s host=%s length=%d headers=%s body=%q", r.Method, r.URL.RequestURI(), r.Host, r.ContentLength, strings.Join(hs, ","), b)
}

// wireRecorder is a server that keeps what it saw of every request, in
// order.
type wireRecorder struct {
	mu   sync.Mutex
	seen []string
}

func (w *wireRecorder) ServeHTTP(rw nethttp.ResponseWriter, r *nethttp.Request) {
	line := wireRequest(r)
	w.mu.Lock()
	w.seen = append(w.seen, line)
	w.mu.Unlock()
	io.WriteString(rw, "ok")
}

func (w *wireRecorder) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := w.seen
	w.seen = nil
	return s
}

// preparedCases are requests of every attribute a prepared request
// renders once.
var preparedCases = []struct {
	name string
	set  map[string]cty.Value
}{
	{"get", nil},
	{"path and query", map[string]cty.Value{"path": cty.StringVal("items/7?sort=asc"), "query": strMap("page", "2", "q", "a b&c")}},
	{"body", map[string]cty.Value{"path": cty.StringVal("/echo"), "body": cty.StringVal("hello")}},
	{"empty body", map[string]cty.Value{"method": cty.StringVal("put"), "body": cty.StringVal("")}},
	{"json", map[string]cty.Value{"json": cty.ObjectVal(map[string]cty.Value{
		"email": cty.StringVal("a@b.c"), "n": cty.MustParseNumberVal("12.5"), "ok": cty.True,
		"tags": cty.TupleVal([]cty.Value{cty.StringVal("<x>")}),
	})}},
	{"form", map[string]cty.Value{"form": strMap("user", "ada lovelace", "pass", "s&cret=1")}},
	{"headers", map[string]cty.Value{"headers": strMap("x-request", "r", "accept", "text/plain", "host", "example.test",
		"user-agent", "probe/1", "content-type", "text/x-own"), "body": cty.StringVal("b")}},
	{"method", map[string]cty.Value{"method": cty.StringVal("delete"), "path": cty.StringVal("/items/1")}},
}

// TestPreparedSendsWhatRenderedSends checks that a prepared request puts
// on the wire what the same request rendered per call does, call after
// call and VU after VU, by what the server saw.
func TestPreparedSendsWhatRenderedSends(t *testing.T) {
	srv := &wireRecorder{}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	c := open(t, New(), ts.URL+"/api?key=k", map[string]cty.Value{"headers": strMap("accept", "application/json", "X-Target", "t")})
	for _, tc := range preparedCases {
		t.Run(tc.name, func(t *testing.T) {
			r := req(tc.set)
			if res := do(t, c, 1, r, false); res.request.Error != "" {
				t.Fatalf("unprepared call: %+v", res.request)
			}
			want := srv.take()
			p := prepare(t, c, r)
			for _, vu := range []uint64{1, 2, 1} {
				if res := doPrepared(t, c, vu, r, p, false); res.request.Error != "" || res.count != 1 {
					t.Fatalf("prepared call of VU %d: %+v", vu, res.request)
				}
			}
			got := srv.take()
			if len(want) != 1 || len(got) != 3 {
				t.Fatalf("the server saw %d and %d requests, want 1 and 3", len(want), len(got))
			}
			for i, g := range got {
				if g != want[0] {
					t.Errorf("prepared call %d sent\n%s\nthe unprepared one\n%s", i, g, want[0])
				}
			}
		})
	}
}

// TestPreparedIsSentAsIs checks that a call sends what Prepare rendered,
// not its Request again, and that a client ignores what another client
// prepared, whose target it was rendered for.
func TestPreparedIsSentAsIs(t *testing.T) {
	a, b := &wireRecorder{}, &wireRecorder{}
	sa, sb := httptest.NewServer(a), httptest.NewServer(b)
	defer sa.Close()
	defer sb.Close()
	ca, cb := open(t, New(), sa.URL, nil), open(t, New(), sb.URL, nil)
	prepared := req(map[string]cty.Value{"path": cty.StringVal("/prepared"), "json": cty.ObjectVal(map[string]cty.Value{"n": cty.NumberIntVal(1)})})
	other := req(map[string]cty.Value{"path": cty.StringVal("/other")})
	p := prepare(t, ca, prepared)

	doPrepared(t, ca, 1, other, p, false)
	if got := a.take(); len(got) != 1 || !strings.HasPrefix(got[0], `POST /prepared `) || !strings.Contains(got[0], `body="{\"n\":1}"`) {
		t.Errorf("a prepared call sent %q, want the prepared POST /prepared", got)
	}
	doPrepared(t, cb, 1, other, p, false)
	if got := b.take(); len(got) != 1 || !strings.HasPrefix(got[0], "GET /other ") {
		t.Errorf("another client's prepared request made client b send %q, want its own GET /other", got)
	}
	if got := a.take(); len(got) != 0 {
		t.Errorf("client b sent %q to client a's target", got)
	}
}

// TestPreparedCookiesStayPerVU checks that the cookies the client adds to
// a prepared request are the VU's own: the rendered headers are shared by
// every VU, the header map of a call is not.
func TestPreparedCookiesStayPerVU(t *testing.T) {
	var mu sync.Mutex
	logins := 0
	ts := httptest.NewServer(nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
		if r.URL.Path == "/login" {
			mu.Lock()
			logins++
			nethttp.SetCookie(w, &nethttp.Cookie{Name: "session", Value: fmt.Sprint("s", logins), Path: "/"})
			mu.Unlock()
		}
		io.WriteString(w, strings.Join(r.Header["Cookie"], ";"))
	}))
	defer ts.Close()
	c := open(t, New(), ts.URL, nil)
	login := req(map[string]cty.Value{"path": cty.StringVal("/login"), "method": cty.StringVal("POST")})
	me := req(map[string]cty.Value{"path": cty.StringVal("/me"), "headers": strMap("X-Request", "me")})
	pl, pm := prepare(t, c, login), prepare(t, c, me)

	steps := []struct {
		vu         uint64
		r          cty.Value
		p          any
		wantCookie string
	}{
		{1, login, pl, ""},
		{1, me, pm, "session=s1"},
		{2, me, pm, ""},
		{2, login, pl, ""},
		{2, me, pm, "session=s2"},
		{1, me, pm, "session=s1"},
		{3, me, pm, ""},
	}
	for i, s := range steps {
		res := doPrepared(t, c, s.vu, s.r, s.p, true)
		if res.request.Error != "" || res.body != s.wantCookie {
			t.Errorf("step %d, VU %d: sent cookies %q (%+v), want %q", i, s.vu, res.body, res.request.Error, s.wantCookie)
		}
	}
}

// TestPreparedBodyFollowsRedirects checks that a prepared body is sent
// again on a 307 and a 308, by every VU and on every call, and dropped on
// a 303, by what the server read.
func TestPreparedBodyFollowsRedirects(t *testing.T) {
	var mu sync.Mutex
	var bodies []string
	ts := httptest.NewServer(nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
		switch r.URL.Path {
		case "/307":
			nethttp.Redirect(w, r, "/end", nethttp.StatusTemporaryRedirect)
		case "/308":
			nethttp.Redirect(w, r, "/end", nethttp.StatusPermanentRedirect)
		case "/303":
			nethttp.Redirect(w, r, "/end", nethttp.StatusSeeOther)
		default:
			b, _ := io.ReadAll(r.Body)
			mu.Lock()
			bodies = append(bodies, r.Method+" "+string(b))
			mu.Unlock()
		}
	}))
	defer ts.Close()
	c := open(t, New(), ts.URL, nil)
	json := cty.ObjectVal(map[string]cty.Value{"order": cty.StringVal("o-1")})
	for _, tc := range []struct{ path, want string }{
		{"/307", `POST {"order":"o-1"}`},
		{"/308", `POST {"order":"o-1"}`},
		{"/303", `GET `},
	} {
		r := req(map[string]cty.Value{"path": cty.StringVal(tc.path), "json": json})
		p := prepare(t, c, r)
		for _, vu := range []uint64{1, 2, 1, 2} {
			if res := doPrepared(t, c, vu, r, p, false); res.request.Error != "" || res.request.Status != 200 {
				t.Fatalf("%s, VU %d: %+v", tc.path, vu, res.request)
			}
		}
		mu.Lock()
		got := bodies
		bodies = nil
		mu.Unlock()
		if len(got) != 4 {
			t.Fatalf("%s: the server's end saw %d requests, want 4", tc.path, len(got))
		}
		for i, b := range got {
			if b != tc.want {
				t.Errorf("%s, call %d: the end read %q, want %q", tc.path, i, b, tc.want)
			}
		}
	}
}

// TestPreparedOptions checks that a prepared request keeps its own
// timeout and expected_status.
func TestPreparedOptions(t *testing.T) {
	ts := httptest.NewServer(nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
		if r.URL.Path == "/slow" {
			select {
			case <-r.Context().Done(): // the client gave up
			case <-time.After(testTimeout):
			}
			return
		}
		w.WriteHeader(nethttp.StatusNotFound)
	}))
	defer ts.Close()
	c := open(t, New(), ts.URL, map[string]cty.Value{"timeout": cty.StringVal("30s")})

	slow := req(map[string]cty.Value{"path": cty.StringVal("/slow"), "timeout": cty.StringVal("100ms")})
	if res := doPrepared(t, c, 1, slow, prepare(t, c, slow), false); res.request.Error != protocols.ErrTimeout {
		t.Errorf("a prepared request with timeout 100ms: %+v, want a timeout", res.request)
	}
	missing := req(map[string]cty.Value{"path": cty.StringVal("/missing")})
	if res := doPrepared(t, c, 1, missing, prepare(t, c, missing), false); res.request.Error != ErrHTTP4xx {
		t.Errorf("a prepared request of a 404: %+v, want http_4xx", res.request)
	}
	expected := req(map[string]cty.Value{"path": cty.StringVal("/missing"), "expected_status": cty.ListVal([]cty.Value{cty.NumberIntVal(404)})})
	if res := doPrepared(t, c, 1, expected, prepare(t, c, expected), false); res.request.Error != "" || res.request.Status != 404 {
		t.Errorf("a prepared request that expects its 404: %+v, want no error", res.request)
	}
}

// TestPrepareRefusesWhatDoRefuses checks that Prepare returns the error,
// naming the attribute, that Do reports for the same request.
func TestPrepareRefusesWhatDoRefuses(t *testing.T) {
	c := open(t, New(), "http://127.0.0.1:9", nil)
	r := req(map[string]cty.Value{"method": cty.StringVal("GTE")})
	_, err := c.(protocols.Preparer).Prepare(r)
	res := do(t, c, 1, r, false)
	if err == nil || protocols.AttrName(err) != "method" || res.request.Message != err.Error() {
		t.Errorf("Prepare error = %v, Do reported %q; want the same error about method", err, res.request.Message)
	}
}

// TestAppendQueryIsValuesEncode checks the query and form encoder against
// url.Values.Encode, for keys and values of every byte that matters.
func TestAppendQueryIsValuesEncode(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const alphabet = "aZ09-_.~ !\"#$%&'()*+,/:;<=>?@[\\]^`{|}é\x00\n"
	word := func() string {
		b := make([]byte, rng.IntN(6))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		return string(b)
	}
	for range 500 {
		m := map[string]string{}
		for range rng.IntN(5) {
			m[word()] = word()
		}
		attrs := map[string]cty.Value{}
		values := url.Values{}
		for k, v := range m {
			attrs[k] = cty.StringVal(v)
			values.Set(k, v)
		}
		var q cty.Value
		if len(attrs) == 0 {
			q = cty.MapValEmpty(cty.String)
		} else {
			q = cty.MapVal(attrs)
		}
		kvs, err := protocols.StringMapAttr(cty.ObjectVal(map[string]cty.Value{"query": q}), "query")
		if err != nil {
			t.Fatal(err)
		}
		if got, want := string(appendQuery(nil, kvs)), values.Encode(); got != want {
			t.Fatalf("appendQuery(%q) = %q, url.Values.Encode = %q", m, got, want)
		}
	}
}

// TestEncodeJSONChecksWhatItCannotEncode checks the json attribute's
// slow path: a value with marks is sent unmarked, and an unknown or
// infinite one is an error naming json.
func TestEncodeJSONChecksWhatItCannotEncode(t *testing.T) {
	marked := cty.ObjectVal(map[string]cty.Value{"token": cty.StringVal("t<1>").Mark("sensitive"), "n": cty.NumberIntVal(2)})
	if b, err := encodeJSON(nil, marked); err != nil || string(b) != `{"n":2,"token":"t\u003c1\u003e"}` {
		t.Errorf("encodeJSON(marked) = %s, %v", b, err)
	}
	for _, tc := range []struct {
		v    cty.Value
		want string
	}{
		{cty.ObjectVal(map[string]cty.Value{"id": cty.UnknownVal(cty.String)}), "is not known"},
		{cty.ObjectVal(map[string]cty.Value{"n": cty.PositiveInfinity}), "cannot be encoded"},
	} {
		_, err := encodeJSON(nil, tc.v)
		if err == nil || protocols.AttrName(err) != "json" || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("encodeJSON(%#v) error = %v, want one about json that %s", tc.v, err, tc.want)
		}
	}
}

// preparing wraps the HTTP protocol to count what the core prepares and
// templates, and which calls come with either.
type preparing struct {
	*Protocol
	mu        sync.Mutex
	prepares  int
	templates int
	calls     map[string][3]int // path: calls prepared, templated, neither
}

func (p *preparing) Open(ctx context.Context, target cty.Value) (protocols.Client, error) {
	c, err := p.Protocol.Open(ctx, target)
	return &preparingClient{Client: c.(*Client), p: p}, err
}

type preparingClient struct {
	*Client
	p *preparing
}

func (c *preparingClient) Prepare(r cty.Value) (any, error) {
	c.p.mu.Lock()
	c.p.prepares++
	c.p.mu.Unlock()
	return c.Client.Prepare(r)
}

func (c *preparingClient) Template(shape cty.Value, holes int) (any, error) {
	c.p.mu.Lock()
	c.p.templates++
	c.p.mu.Unlock()
	return c.Client.Template(shape, holes)
}

func (c *preparingClient) Do(ctx context.Context, call protocols.Call, emit func(protocols.Sample)) {
	path, _ := protocols.StringAttr(call.Request, "path")
	c.p.mu.Lock()
	n := c.p.calls[path]
	switch p := call.Prepared.(type) {
	case *prepared:
		n[0]++
	case *template:
		path = p.attrs.path.AsString()
		n = c.p.calls[path]
		n[1]++
	default:
		n[2]++
	}
	c.p.calls[path] = n
	c.p.mu.Unlock()
	c.Client.Do(ctx, call, emit)
}

// TestCorePreparesConstantRequests runs a flow of a constant POST and a
// dynamic one through the core: the constant one is prepared once and
// every call of it comes prepared, the dynamic one is templated once and
// every call of it comes as the template's holes, and the server reads
// the right body of each, by its own count.
func TestCorePreparesConstantRequests(t *testing.T) {
	var mu sync.Mutex
	bodies := map[string]int{}
	ts := httptest.NewServer(nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies[r.URL.Path+" "+string(b)]++
		mu.Unlock()
	}))
	defer ts.Close()
	src := fmt.Sprintf(`
target "t" {
  base_url = %q
}
scenario "s" {
  executor   = "iterations"
  vus        = 2
  iterations = 3
  flow "f" {
    request "constant" {
      path = "/constant"
      json = { price = 12.5, items = ["a"] }
    }
    request "dynamic" {
      path = "/dynamic"
      json = { vu = vu.id, iteration = vu.iteration }
    }
  }
}
`, ts.URL)
	p := &preparing{Protocol: New(), calls: map[string][3]int{}}
	registry := protocols.NewRegistry(p)
	test, diags := config.Parse(map[string][]byte{"test.hcl": []byte(src)}, t.TempDir(), config.Options{Protocols: registry})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sum, err := core.Run(ctx, test, core.Options{Protocols: registry})
	if err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.prepares != 1 {
		t.Errorf("the core prepared %d requests, want 1: the constant one", p.prepares)
	}
	if p.templates != 1 {
		t.Errorf("the core templated %d requests, want 1: the dynamic one", p.templates)
	}
	if got := p.calls["/constant"]; got != [3]int{6, 0, 0} {
		t.Errorf("calls of the constant request, prepared, templated and neither: %v, want [6 0 0]", got)
	}
	if got := p.calls["/dynamic"]; got != [3]int{0, 6, 0} {
		t.Errorf("calls of the dynamic request, prepared, templated and neither: %v, want [0 6 0]", got)
	}
	mu.Lock()
	defer mu.Unlock()
	want := map[string]int{`/constant {"items":["a"],"price":12.5}`: 6}
	for vu := 1; vu <= 2; vu++ {
		for it := range 3 {
			want[fmt.Sprintf(`/dynamic {"iteration":%d,"vu":%d}`, it, vu)] = 1
		}
	}
	if fmt.Sprint(bodies) != fmt.Sprint(want) {
		t.Errorf("the server read %v, want %v", bodies, want)
	}
	if r := sum.Scenarios["s"].Requests["constant"]; r == nil || r.Count != 6 || r.Errors != 0 {
		t.Errorf("hload's constant request: %+v; the server read 6", r)
	}
}

// TestPreparedSharedByManyVUs has VUs send one prepared request at once,
// as a run does: every call sends the same bytes, by the server's count
// (run with -race, it also checks that calls only read what they share).
func TestPreparedSharedByManyVUs(t *testing.T) {
	const vus, calls = 8, 25
	var mu sync.Mutex
	seen := map[string]int{}
	ts := httptest.NewServer(nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
		line := wireRequest(r)
		mu.Lock()
		seen[line]++
		mu.Unlock()
	}))
	defer ts.Close()
	c := open(t, New(), ts.URL, map[string]cty.Value{"headers": strMap("X-Target", "t")})
	r := req(map[string]cty.Value{
		"path": cty.StringVal("/orders"), "query": strMap("source", "bench"), "headers": strMap("X-Request", "r"),
		"json": cty.ObjectVal(map[string]cty.Value{"user": cty.StringVal("ada"), "price": cty.MustParseNumberVal("12.5")}),
	})
	p := prepare(t, c, r)
	var wg sync.WaitGroup
	for vu := uint64(1); vu <= vus; vu++ {
		wg.Go(func() {
			for range calls {
				if res := doPrepared(t, c, vu, r, p, false); res.request.Error != "" {
					t.Errorf("VU %d: %+v", vu, res.request)
					return
				}
			}
		})
	}
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 1 {
		t.Errorf("the server saw %d different requests, want 1: %v", len(seen), seen)
	}
	for line, n := range seen {
		if n != vus*calls || !strings.HasPrefix(line, `POST /orders?source=bench `) || !strings.Contains(line, `body="{\"price\":12.5,\"user\":\"ada\"}"`) {
			t.Errorf("the server saw %d times %s; want %d times the prepared POST", n, line, vus*calls)
		}
	}
}
