package http

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	nethttp "net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/hload/hload/plugins/protocoltest"
	"github.com/hload/hload/protocols"
)

func TestEscapeQuery(t *testing.T) {
	cases := []struct{ in, want string }{
		{"", ""},
		{"q=a b&c=d\"e", "q=a%20b&c=d%22e"},
		{"a=1&b=2+3;c=(x)*!$'@:/?,~-._", "a=1&b=2+3;c=(x)*!$'@:/?,~-._"},
		{"q=%41%2f%zz%4", "q=%41%2f%25zz%254"},
		{"q=100%", "q=100%25"},
		{"q=é", "q=%C3%A9"},
		{"q=<>\\^`{|}", "q=%3C%3E%5C%5E%60%7B%7C%7D"},
		{"q=\t\x7f", "q=%09%7F"},
	}
	for _, tc := range cases {
		if got := escapeQuery(tc.in); got != tc.want {
			t.Errorf("escapeQuery(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	// Any string: what comes out holds only what a query may hold, is
	// left as it is by a second pass, and, for a string without '%',
	// unescapes to what went in.
	rng := rand.New(rand.NewPCG(1, 2))
	for range 10000 {
		b := make([]byte, rng.IntN(12))
		for i := range b {
			b[i] = byte(rng.IntN(256))
			if rng.IntN(2) == 0 {
				b[i] = "a%=&+ \"é4F"[rng.IntN(11)]
			}
		}
		in := string(b)
		out := escapeQuery(in)
		if again := escapeQuery(out); again != out {
			t.Fatalf("escapeQuery(%q) = %q, escaped again %q", in, out, again)
		}
		for i := range len(out) {
			if !queryKeeps(out, i) {
				t.Fatalf("escapeQuery(%q) = %q holds %q at %d", in, out, out[i], i)
			}
		}
		if !strings.Contains(in, "%") {
			if back, err := url.PathUnescape(out); err != nil || back != in {
				t.Fatalf("escapeQuery(%q) = %q, which unescapes to %q, %v", in, out, back, err)
			}
		}
	}
	if n := testing.AllocsPerRun(100, func() { escapeQuery("a=1&b=%20x") }); n != 0 {
		t.Errorf("a query that needs nothing allocated %v times", n)
	}
}

// lineRecorder is a raw HTTP/1.1 server that keeps the request line of
// every request, as it came on the wire, and answers each with a 200, or
// a redirect to the target of its Location for a request to /redirect.
type lineRecorder struct {
	url      string
	location string
	mu       sync.Mutex
	lines    []string
}

func newLineRecorder(t *testing.T, location string) *lineRecorder {
	l := &lineRecorder{location: location}
	l.url = rawServer(t, func(conn net.Conn) {
		defer conn.Close()
		br := bufio.NewReader(conn)
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				return
			}
			for {
				h, err := br.ReadString('\n')
				if err != nil {
					return
				}
				if h == "\r\n" {
					break
				}
			}
			line = strings.TrimRight(line, "\r\n")
			l.mu.Lock()
			l.lines = append(l.lines, line)
			l.mu.Unlock()
			answer := "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
			if strings.HasPrefix(line, "GET /redirect ") {
				answer = "HTTP/1.1 302 Found\r\nLocation: " + l.location + "\r\nContent-Length: 0\r\n\r\n"
			}
			io.WriteString(conn, answer)
		}
	})
	return l
}

func (l *lineRecorder) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.lines
	l.lines = nil
	return s
}

// queryCases are requests whose query needs encoding, and the
// request-target each must be sent with.
var queryCases = []struct {
	name string
	base string // added to the server's URL as base_url
	set  map[string]cty.Value
	want string
}{
	{"space and quote", "", map[string]cty.Value{"path": cty.StringVal("/x?q=a b&c=d\"e")}, "/x?q=a%20b&c=d%22e"},
	{"escapes kept, a stray % encoded", "", map[string]cty.Value{"path": cty.StringVal("/x?q=%41&r=100%")}, "/x?q=%41&r=100%25"},
	{"non-ASCII", "", map[string]cty.Value{"path": cty.StringVal("/x?q=é")}, "/x?q=%C3%A9"},
	{"delimiters kept", "", map[string]cty.Value{"path": cty.StringVal("/x?a=1&b=2+3;c=(x)*!$'@:/?,")}, "/x?a=1&b=2+3;c=(x)*!$'@:/?,"},
	{"brackets and bars", "", map[string]cty.Value{"path": cty.StringVal("/x?f={a|b}")}, "/x?f=%7Ba%7Cb%7D"},
	{"path and query attribute", "", map[string]cty.Value{"path": cty.StringVal("/a b?q=a b"), "query": strMap("k", "v w")}, "/a%20b?q=a%20b&k=v+w"},
	{"a fragment is not sent", "", map[string]cty.Value{"path": cty.StringVal("/x?q=1#frag ment")}, "/x?q=1"},
	{"base_url's query", "/api?key=a b", map[string]cty.Value{"path": cty.StringVal("/x?q=\"")}, "/api/x?key=a%20b&q=%22"},
}

// TestQueryIsEncoded checks, by the request line the server read, that a
// query written in path (or in base_url) is sent percent-encoded, as the
// path is, on both paths, for a request prepared once, rendered per call,
// or sent as a template's holes; and that a redirect's Location is too.
func TestQueryIsEncoded(t *testing.T) {
	protocoltest.Run(t, New(), func(t *testing.T, path protocoltest.Path, p protocols.Protocol) {
		srv := newLineRecorder(t, "/y?q=a b")
		for _, tc := range queryCases {
			t.Run(tc.name, func(t *testing.T) {
				c := open(t, p, srv.url+tc.base, nil)
				r := req(tc.set)
				ran := 0
				for _, mode := range []string{"per call", "prepared", "template"} {
					call := protocols.Call{VU: 1, Request: r}
					switch mode {
					case "prepared":
						pr, ok := c.(protocols.Preparer)
						if !ok {
							continue
						}
						var err error
						if call.Prepared, err = pr.Prepare(r); err != nil {
							t.Fatal(err)
						}
					case "template":
						tm, ok := c.(protocols.Templater)
						if !ok {
							continue
						}
						// The path is the hole: a value computed per call.
						attrs := r.AsValueMap()
						attrs["path"] = cty.DynamicVal
						var err error
						if call.Prepared, err = tm.Template(cty.ObjectVal(attrs), 1); err != nil {
							t.Fatal(err)
						}
						call.Request, call.Holes = cty.NilVal, []cty.Value{r.GetAttr("path")}
					}
					var got protocols.Sample
					c.Do(context.Background(), call, func(s protocols.Sample) {
						if s.Metric == protocols.MetricRequest {
							got = s
						}
					})
					if got.Error != "" || got.Status != 200 {
						t.Errorf("%s: %+v", mode, got)
					}
					if lines := srv.take(); len(lines) != 1 || lines[0] != "GET "+tc.want+" HTTP/1.1" {
						t.Errorf("%s: the server read %q, want %q", mode, lines, "GET "+tc.want+" HTTP/1.1")
					}
					ran++
				}
				// In-process and through the wire (version 4), the client
				// takes all three.
				if ran != 3 {
					t.Errorf("%d ways of sending ran, want 3", ran)
				}
			})
		}
		t.Run("a redirect's Location", func(t *testing.T) {
			c := open(t, p, srv.url, nil)
			if res := do(t, c, 1, req(map[string]cty.Value{"path": cty.StringVal("/redirect")}), false); res.request.Error != "" || res.request.Status != 200 {
				t.Errorf("%+v", res.request)
			}
			want := []string{"GET /redirect HTTP/1.1", "GET /y?q=a%20b HTTP/1.1"}
			if lines := srv.take(); fmt.Sprint(lines) != fmt.Sprint(want) {
				t.Errorf("the server read %q, want %q", lines, want)
			}
		})
	})
}

// TestQueryIsEncodedOverHTTP2 checks the same over HTTP/2, which net/http
// sends: the request's :path, as the server read it.
func TestQueryIsEncodedOverHTTP2(t *testing.T) {
	protocoltest.Run(t, New(), func(t *testing.T, _ protocoltest.Path, p protocols.Protocol) {
		var mu sync.Mutex
		var seen []string
		srv := httptest.NewUnstartedServer(nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
			mu.Lock()
			seen = append(seen, fmt.Sprintf("%s %s", r.Proto, r.RequestURI))
			mu.Unlock()
			io.WriteString(w, "ok")
		}))
		srv.EnableHTTP2 = true
		srv.StartTLS()
		defer srv.Close()
		for _, tc := range queryCases {
			t.Run(tc.name, func(t *testing.T) {
				c := open(t, p, srv.URL+tc.base, map[string]cty.Value{"insecure_skip_verify": cty.True})
				r := req(tc.set)
				plain := do(t, c, 1, r, false)
				prepared := doPrepared(t, c, 1, r, prepare(t, c, r), false)
				for _, res := range []result{plain, prepared} {
					if res.request.Error != "" || res.request.Status != 200 {
						t.Errorf("%+v", res.request)
					}
				}
				mu.Lock()
				got := seen
				seen = nil
				mu.Unlock()
				want := []string{"HTTP/2.0 " + tc.want, "HTTP/2.0 " + tc.want}
				if fmt.Sprint(got) != fmt.Sprint(want) {
					t.Errorf("the server read %q, want %q", got, want)
				}
			})
		}
	})
}
