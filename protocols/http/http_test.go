package http

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net"
	nethttp "net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/zclconf/go-cty/cty"

	"github.com/hload/hload/plugins/protocoltest"
	"github.com/hload/hload/protocols"
)

// testTimeout bounds every call a test makes, so a bug hangs no test.
const testTimeout = 10 * time.Second

// object builds a value with every attribute of spec, null unless set, the
// way the core passes target and request values.
func object(spec hcldec.ObjectSpec, set map[string]cty.Value) cty.Value {
	attrs := make(map[string]cty.Value, len(spec))
	for name, s := range spec {
		attrs[name] = cty.NullVal(s.(*hcldec.AttrSpec).Type)
	}
	for name, v := range set {
		if _, ok := spec[name]; !ok {
			panic("no attribute " + name)
		}
		attrs[name] = v
	}
	return cty.ObjectVal(attrs)
}

func strMap(kv ...string) cty.Value {
	m := make(map[string]cty.Value, len(kv)/2)
	for i := 0; i < len(kv); i += 2 {
		m[kv[i]] = cty.StringVal(kv[i+1])
	}
	return cty.MapVal(m)
}

// open opens a client of p, the protocol as the test's path reaches it, for
// baseURL with extra target attributes.
func open(t testing.TB, p protocols.Protocol, baseURL string, set map[string]cty.Value) protocols.Client {
	t.Helper()
	attrs := map[string]cty.Value{"base_url": cty.StringVal(baseURL), "timeout": cty.StringVal("5s")}
	for k, v := range set {
		attrs[k] = v
	}
	c, err := p.Open(context.Background(), object(p.Describe().TargetSpec, attrs))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func req(set map[string]cty.Value) cty.Value {
	return object(requestSpec(), set)
}

// result is what one Do emitted.
type result struct {
	request protocols.Sample
	body    string
	ttfb    *protocols.Sample
	connect *protocols.Sample
	count   int // request samples; must be 1
}

func do(t testing.TB, c protocols.Client, vu uint64, r cty.Value, keepBody bool) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	return doCtx(ctx, c, vu, r, keepBody)
}

func doCtx(ctx context.Context, c protocols.Client, vu uint64, r cty.Value, keepBody bool) result {
	var res result
	c.Do(ctx, protocols.Call{VU: vu, Request: r, KeepBody: keepBody}, func(s protocols.Sample) {
		switch s.Metric {
		case protocols.MetricRequest:
			res.request = s
			res.body = string(s.Body) // Body is valid only during emit
			res.count++
		case protocols.MetricTTFB:
			res.ttfb = &s
		case protocols.MetricConnect:
			res.connect = &s
		}
	})
	return res
}

func TestDescribe(t *testing.T) {
	protocoltest.Run(t, New(), func(t *testing.T, _ protocoltest.Path, p protocols.Protocol) {
		info := p.Describe()
		if info.Name != "http" || info.Version != "0.1.0" {
			t.Errorf("Describe = %q %q", info.Name, info.Version)
		}
		for _, spec := range []hcldec.ObjectSpec{info.TargetSpec, info.RequestSpec} {
			for name, s := range spec {
				if _, ok := s.(*hcldec.AttrSpec); !ok {
					t.Errorf("%s is %T, want *hcldec.AttrSpec", name, s)
				}
			}
		}
		if !info.TargetSpec["base_url"].(*hcldec.AttrSpec).Required {
			t.Error("base_url is not required")
		}
		if got := info.RequestSpec["json"].(*hcldec.AttrSpec).Type; got != cty.DynamicPseudoType {
			t.Errorf("json type = %#v", got)
		}
		// Every metric a call emits besides request is declared, so that a
		// threshold on it is accepted, and no other.
		if got := strings.Join(info.Metrics, ","); got != "ttfb,connect" {
			t.Errorf("Metrics = %q, want ttfb,connect", got)
		}
	})
}

func TestOpenRejectsBadTargets(t *testing.T) {
	protocoltest.Run(t, New(), func(t *testing.T, _ protocoltest.Path, p protocols.Protocol) {
		cases := []struct {
			name string
			set  map[string]cty.Value
			want string
		}{
			{"scheme", map[string]cty.Value{"base_url": cty.StringVal("ftp://example.com")}, "http:// or https://"},
			{"no scheme", map[string]cty.Value{"base_url": cty.StringVal("example.com")}, "http:// or https://"},
			{"no host", map[string]cty.Value{"base_url": cty.StringVal("http://")}, "no host"},
			{"missing", map[string]cty.Value{}, "required"},
			{"timeout", map[string]cty.Value{"base_url": cty.StringVal("http://x"), "timeout": cty.StringVal("soon")}, "timeout"},
			{"zero timeout", map[string]cty.Value{"base_url": cty.StringVal("http://x"), "timeout": cty.StringVal("0s")}, "timeout"},
			{"redirects", map[string]cty.Value{"base_url": cty.StringVal("http://x"), "max_redirects": cty.NumberFloatVal(1.5)}, "max_redirects"},
			{"connections", map[string]cty.Value{"base_url": cty.StringVal("http://x"), "connections_per_vu": cty.NumberIntVal(0)}, "connections_per_vu"},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				_, err := p.Open(context.Background(), object(p.Describe().TargetSpec, tc.set))
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("Open error = %v, want one containing %q", err, tc.want)
				}
			})
		}
	})
}

// seen is what a test server saw of one request.
type seen struct {
	method, path, query, contentType, body string
	header                                 nethttp.Header
	host                                   string
}

func recorder(t *testing.T) (*httptest.Server, func() seen) {
	var mu sync.Mutex
	var last seen
	srv := httptest.NewServer(nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		last = seen{r.Method, r.URL.Path, r.URL.RawQuery, r.Header.Get("Content-Type"), string(b), r.Header.Clone(), r.Host}
		mu.Unlock()
		io.WriteString(w, "ok")
	}))
	t.Cleanup(srv.Close)
	return srv, func() seen { mu.Lock(); defer mu.Unlock(); return last }
}

func TestRequests(t *testing.T) {
	protocoltest.Run(t, New(), func(t *testing.T, _ protocoltest.Path, p protocols.Protocol) {
		srv, last := recorder(t)
		c := open(t, p, srv.URL+"/api/", map[string]cty.Value{"headers": strMap("accept", "application/json", "X-Target", "t")})

		cases := []struct {
			name string
			set  map[string]cty.Value
			want seen
		}{
			{"get", nil, seen{method: "GET", path: "/api"}},
			{"path and query", map[string]cty.Value{
				"path":  cty.StringVal("items/7?sort=asc"),
				"query": strMap("page", "2", "q", "a b"),
			}, seen{method: "GET", path: "/api/items/7", query: "sort=asc&page=2&q=a+b"}},
			{"body", map[string]cty.Value{"path": cty.StringVal("/echo"), "body": cty.StringVal("hello")},
				seen{method: "POST", path: "/api/echo", body: "hello"}},
			{"json", map[string]cty.Value{"json": cty.ObjectVal(map[string]cty.Value{
				"email": cty.StringVal("a@b.c"), "n": cty.NumberIntVal(3), "ok": cty.True,
				"tags": cty.TupleVal([]cty.Value{cty.StringVal("x")}),
			})}, seen{method: "POST", path: "/api", contentType: "application/json",
				body: `{"email":"a@b.c","n":3,"ok":true,"tags":["x"]}`}},
			{"json with content type", map[string]cty.Value{
				"json":    cty.StringVal("s"),
				"headers": strMap("content-type", "application/vnd.x+json"),
			}, seen{method: "POST", path: "/api", contentType: "application/vnd.x+json", body: `"s"`}},
			{"form", map[string]cty.Value{"method": cty.StringVal("put"), "form": strMap("b", "2", "a", "x y")},
				seen{method: "PUT", path: "/api", contentType: "application/x-www-form-urlencoded", body: "a=x+y&b=2"}},
			{"delete", map[string]cty.Value{"method": cty.StringVal("DELETE"), "path": cty.StringVal("/items/1")},
				seen{method: "DELETE", path: "/api/items/1"}},
			{"host header", map[string]cty.Value{"headers": strMap("Host", "shop.example")},
				seen{method: "GET", path: "/api", host: "shop.example"}},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				res := do(t, c, 1, req(tc.set), false)
				if res.count != 1 || res.request.Error != "" || res.request.Status != 200 {
					t.Fatalf("request sample = %+v (count %d)", res.request, res.count)
				}
				got := last()
				if got.method != tc.want.method || got.path != tc.want.path || got.query != tc.want.query ||
					got.contentType != tc.want.contentType || got.body != tc.want.body {
					t.Errorf("server saw %s %s ?%s [%s] %q, want %s %s ?%s [%s] %q",
						got.method, got.path, got.query, got.contentType, got.body,
						tc.want.method, tc.want.path, tc.want.query, tc.want.contentType, tc.want.body)
				}
				if tc.want.host != "" && got.host != tc.want.host {
					t.Errorf("Host = %q, want %q", got.host, tc.want.host)
				}
				if got.header.Get("Accept") != "application/json" || got.header.Get("X-Target") != "t" {
					t.Errorf("target headers missing: %v", got.header)
				}
				if got.header.Get("User-Agent") != "hload/0.1.0" {
					t.Errorf("User-Agent = %q", got.header.Get("User-Agent"))
				}
			})
		}

		t.Run("request headers override target's", func(t *testing.T) {
			do(t, c, 1, req(map[string]cty.Value{"headers": strMap("x-target", "r", "User-Agent", "me")}), false)
			h := last().header
			if h.Get("X-Target") != "r" || len(h.Values("X-Target")) != 1 || h.Get("User-Agent") != "me" {
				t.Errorf("headers = %v", h)
			}
		})

		t.Run("more than one body is a protocol error without I/O", func(t *testing.T) {
			before := last()
			res := do(t, c, 1, req(map[string]cty.Value{"body": cty.StringVal("a"), "form": strMap("b", "c")}), false)
			if res.count != 1 || res.request.Error != protocols.ErrProtocol || res.request.Status != 0 {
				t.Errorf("sample = %+v", res.request)
			}
			if res.request.BytesSent != 0 || last().method != before.method || last().body != before.body {
				t.Error("the request was sent")
			}
		})
	})
}

func TestBaseURLQueryIsKept(t *testing.T) {
	protocoltest.Run(t, New(), func(t *testing.T, _ protocoltest.Path, p protocols.Protocol) {
		srv, last := recorder(t)
		c := open(t, p, srv.URL+"?key=k", nil)
		do(t, c, 1, req(map[string]cty.Value{"path": cty.StringVal("/a?b=1"), "query": strMap("c", "2")}), false)
		if got := last(); got.path != "/a" || got.query != "key=k&b=1&c=2" {
			t.Errorf("server saw %s?%s", got.path, got.query)
		}
	})
}

func TestEachVUHasItsOwnKeepAliveConnection(t *testing.T) {
	protocoltest.Run(t, New(), func(t *testing.T, _ protocoltest.Path, p protocols.Protocol) {
		var mu sync.Mutex
		addrs := map[string]int{}
		srv := httptest.NewServer(nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
			mu.Lock()
			addrs[r.RemoteAddr]++
			mu.Unlock()
			io.WriteString(w, "ok")
		}))
		defer srv.Close()
		c := open(t, p, srv.URL, nil)

		var wg sync.WaitGroup
		connects := make([]int, 4)
		for vu := uint64(1); vu <= 3; vu++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range 10 {
					res := do(t, c, vu, req(nil), false)
					if res.request.Status != 200 {
						t.Errorf("VU %d call %d: %+v", vu, i, res.request)
					}
					if res.ttfb == nil || res.ttfb.Value <= 0 || res.ttfb.Value > res.request.Value {
						t.Errorf("VU %d call %d: ttfb %v of %v", vu, i, res.ttfb, res.request.Value)
					}
					if res.connect != nil {
						connects[vu]++
						if i != 0 {
							t.Errorf("VU %d: connect sample on call %d", vu, i)
						}
						if res.connect.Value <= 0 || res.connect.Value > res.request.Value {
							t.Errorf("VU %d: connect %v of %v", vu, res.connect.Value, res.request.Value)
						}
					}
				}
			}()
		}
		wg.Wait()
		if len(addrs) != 3 {
			t.Errorf("server saw %d connections, want 3: %v", len(addrs), addrs)
		}
		for addr, n := range addrs {
			if n != 10 {
				t.Errorf("%s carried %d requests, want 10", addr, n)
			}
		}
		for vu := 1; vu <= 3; vu++ {
			if connects[vu] != 1 {
				t.Errorf("VU %d: %d connect samples, want 1", vu, connects[vu])
			}
		}
	})
}

func TestCookiesArePerVU(t *testing.T) {
	protocoltest.Run(t, New(), func(t *testing.T, _ protocoltest.Path, p protocols.Protocol) {
		srv := httptest.NewServer(nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
			if r.URL.Path == "/login" {
				nethttp.SetCookie(w, &nethttp.Cookie{Name: "session", Value: r.URL.Query().Get("who"), Path: "/"})
			}
			if ck, err := r.Cookie("session"); err == nil {
				io.WriteString(w, ck.Value)
			}
		}))
		defer srv.Close()
		c := open(t, p, srv.URL, nil)

		do(t, c, 1, req(map[string]cty.Value{"path": cty.StringVal("/login?who=one")}), false)
		if got := do(t, c, 1, req(nil), true).body; got != "one" {
			t.Errorf("VU 1 sent cookie %q, want %q", got, "one")
		}
		if got := do(t, c, 2, req(nil), true).body; got != "" {
			t.Errorf("VU 2 sent VU 1's cookie %q", got)
		}
		// An explicit Cookie header is sent with the jar's cookies.
		got := do(t, c, 1, req(map[string]cty.Value{"headers": strMap("Cookie", "x=1")}), true).body
		if got != "one" {
			t.Errorf("VU 1 sent cookie %q with an explicit header", got)
		}
	})
}

func TestRedirects(t *testing.T) {
	protocoltest.Run(t, New(), func(t *testing.T, _ protocoltest.Path, p protocols.Protocol) {
		srv := httptest.NewServer(nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
			var n int
			if _, err := fmt.Sscanf(r.URL.Path, "/hop/%d", &n); err == nil && n > 0 {
				nethttp.Redirect(w, r, fmt.Sprintf("/hop/%d", n-1), nethttp.StatusFound)
				return
			}
			io.WriteString(w, "landed "+r.Method)
		}))
		defer srv.Close()
		path := func(p string) cty.Value { return req(map[string]cty.Value{"path": cty.StringVal(p)}) }

		t.Run("followed", func(t *testing.T) {
			res := do(t, open(t, p, srv.URL, nil), 1, path("/hop/3"), true)
			if res.request.Status != 200 || res.request.Error != "" || res.body != "landed GET" {
				t.Errorf("sample = %+v body %q", res.request, res.body)
			}
		})
		t.Run("not followed", func(t *testing.T) {
			c := open(t, p, srv.URL, map[string]cty.Value{"follow_redirects": cty.False})
			res := do(t, c, 1, path("/hop/3"), false)
			if res.request.Status != 302 || res.request.Error != "" {
				t.Errorf("sample = %+v", res.request)
			}
		})
		t.Run("up to max_redirects", func(t *testing.T) {
			c := open(t, p, srv.URL, map[string]cty.Value{"max_redirects": cty.NumberIntVal(3)})
			if res := do(t, c, 1, path("/hop/3"), false); res.request.Status != 200 || res.request.Error != "" {
				t.Errorf("3 redirects: %+v", res.request)
			}
			if res := do(t, c, 1, path("/hop/4"), false); res.request.Error != protocols.ErrProtocol {
				t.Errorf("4 redirects: %+v", res.request)
			}
		})
	})
}

func TestRedirectRules(t *testing.T) {
	protocoltest.Run(t, New(), func(t *testing.T, _ protocoltest.Path, p protocols.Protocol) {
		srv := httptest.NewServer(nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
			switch r.URL.Path {
			case "/login":
				nethttp.SetCookie(w, &nethttp.Cookie{Name: "session", Value: "s1", Path: "/"})
				nethttp.Redirect(w, r, "/home", nethttp.StatusSeeOther)
			case "/temporary":
				nethttp.Redirect(w, r, "/home", nethttp.StatusTemporaryRedirect)
			case "/no-location":
				w.WriteHeader(nethttp.StatusFound)
			default:
				b, _ := io.ReadAll(r.Body)
				cookie := ""
				if ck, err := r.Cookie("session"); err == nil {
					cookie = ck.Value
				}
				fmt.Fprintf(w, "%s %s body=%s cookie=%s x=%s", r.Method, r.URL.Path, b, cookie, r.Header.Get("X-Target"))
			}
		}))
		defer srv.Close()
		c := open(t, p, srv.URL, map[string]cty.Value{"headers": strMap("X-Target", "t")})
		cases := []struct {
			name   string
			vu     uint64
			set    map[string]cty.Value
			status int
			want   string
		}{
			{"303 turns POST into GET and keeps the cookie it set", 1,
				map[string]cty.Value{"path": cty.StringVal("/login"), "body": cty.StringVal("pw")},
				200, "GET /home body= cookie=s1 x=t"},
			{"307 keeps the method and the body", 2,
				map[string]cty.Value{"path": cty.StringVal("/temporary"), "body": cty.StringVal("data")},
				200, "POST /home body=data cookie= x=t"},
			{"307 with a VU that holds cookies", 1,
				map[string]cty.Value{"path": cty.StringVal("/temporary"), "body": cty.StringVal("data")},
				200, "POST /home body=data cookie=s1 x=t"},
			{"3xx without Location is returned", 2,
				map[string]cty.Value{"path": cty.StringVal("/no-location")}, 302, ""},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				res := do(t, c, tc.vu, req(tc.set), true)
				if res.request.Error != "" || res.request.Status != tc.status || res.body != tc.want {
					t.Errorf("sample %+v body %q, want %d %q", res.request, res.body, tc.status, tc.want)
				}
			})
		}
	})
}

func TestBasicAuthFromURL(t *testing.T) {
	protocoltest.Run(t, New(), func(t *testing.T, _ protocoltest.Path, p protocols.Protocol) {
		srv := httptest.NewServer(nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
			u, p, _ := r.BasicAuth()
			io.WriteString(w, u+":"+p)
		}))
		defer srv.Close()
		c := open(t, p, strings.Replace(srv.URL, "http://", "http://ann:s3cret@", 1), nil)
		if res := do(t, c, 1, req(nil), true); res.body != "ann:s3cret" {
			t.Errorf("server saw %q", res.body)
		}
	})
}

func TestTLS(t *testing.T) {
	protocoltest.Run(t, New(), func(t *testing.T, _ protocoltest.Path, p protocols.Protocol) {
		srv := httptest.NewUnstartedServer(nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
			io.WriteString(w, r.Proto)
		}))
		srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the rejected handshake is expected
		srv.StartTLS()
		defer srv.Close()

		t.Run("verified by default", func(t *testing.T) {
			res := do(t, open(t, p, srv.URL, nil), 1, req(nil), false)
			if res.request.Error != protocols.ErrTLS || res.request.Status != 0 {
				t.Errorf("sample = %+v", res.request)
			}
		})
		t.Run("insecure_skip_verify", func(t *testing.T) {
			c := open(t, p, srv.URL, map[string]cty.Value{"insecure_skip_verify": cty.True})
			res := do(t, c, 1, req(nil), true)
			if res.request.Error != "" || res.request.Status != 200 || res.body != "HTTP/1.1" {
				t.Fatalf("sample = %+v body %q", res.request, res.body)
			}
			if res.connect == nil || res.connect.Value <= 0 {
				t.Error("no connect sample on a new TLS connection")
			}
			// The handshake crosses the counted connection.
			if res.request.BytesReceived < 500 {
				t.Errorf("received %d bytes with a TLS handshake", res.request.BytesReceived)
			}
			if res := do(t, c, 1, req(nil), false); res.connect != nil {
				t.Error("connect sample on a reused TLS connection")
			}
		})
	})
}

func TestHTTP2(t *testing.T) {
	protocoltest.Run(t, New(), func(t *testing.T, _ protocoltest.Path, p protocols.Protocol) {
		srv := httptest.NewUnstartedServer(nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
			fmt.Fprintf(w, "%d", r.ProtoMajor)
		}))
		srv.EnableHTTP2 = true
		srv.StartTLS()
		defer srv.Close()

		cases := []struct {
			name  string
			http2 cty.Value
			want  string
		}{
			{"default", cty.NullVal(cty.Bool), "2"},
			{"disabled", cty.False, "1"},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				c := open(t, p, srv.URL, map[string]cty.Value{"insecure_skip_verify": cty.True, "http2": tc.http2})
				for i := range 3 {
					res := do(t, c, 1, req(map[string]cty.Value{"body": cty.StringVal("ping")}), true)
					if res.request.Error != "" || res.body != tc.want {
						t.Fatalf("call %d: sample = %+v body %q, want HTTP/%s", i, res.request, res.body, tc.want)
					}
					if (res.connect != nil) != (i == 0) {
						t.Errorf("call %d: connect sample %v", i, res.connect)
					}
					if res.ttfb == nil || res.request.BytesSent < 4 || res.request.BytesReceived < 1 {
						t.Errorf("call %d: ttfb %v, bytes %d/%d", i, res.ttfb, res.request.BytesSent, res.request.BytesReceived)
					}
				}
			})
		}
	})
}

// rawServer accepts connections on 127.0.0.1 and hands each to serve.
func rawServer(t testing.TB, serve func(net.Conn)) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go serve(conn)
		}
	}()
	return "http://" + ln.Addr().String()
}

func TestErrorKinds(t *testing.T) {
	protocoltest.Run(t, New(), func(t *testing.T, _ protocoltest.Path, p protocols.Protocol) {
		slow := httptest.NewServer(nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
			select {
			case <-time.After(5 * time.Second):
			case <-r.Context().Done():
			}
		}))
		defer slow.Close()
		reset := httptest.NewServer(nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
			conn, _, err := w.(nethttp.Hijacker).Hijack()
			if err != nil {
				return
			}
			conn.(*net.TCPConn).SetLinger(0) // close with RST
			conn.Close()
		}))
		defer reset.Close()
		garbage := rawServer(t, func(conn net.Conn) {
			defer conn.Close()
			conn.Read(make([]byte, 4096))
			io.WriteString(conn, "garbage, not HTTP\r\n\r\n")
		})
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		closed := "http://" + ln.Addr().String()
		ln.Close()

		cases := []struct {
			name    string
			url     string
			set     map[string]cty.Value
			parent  time.Duration // cancel Do's own context after this; 0: never
			want    protocols.ErrorKind
			skipFor protocols.ErrorKind
		}{
			{name: "timeout", url: slow.URL, set: map[string]cty.Value{"timeout": cty.StringVal("100ms")}, want: protocols.ErrTimeout},
			{name: "connection refused", url: closed, want: protocols.ErrConnectionRefused},
			{name: "reset", url: reset.URL, want: protocols.ErrReset},
			// .invalid never resolves; a machine without DNS answers with a
			// timeout instead, which says nothing about the classification.
			{name: "dns", url: "http://nonexistent.invalid", set: map[string]cty.Value{"timeout": cty.StringVal("3s")},
				want: protocols.ErrDNS, skipFor: protocols.ErrTimeout},
			{name: "protocol", url: garbage, want: protocols.ErrProtocol},
			{name: "interrupted", url: slow.URL, parent: 100 * time.Millisecond, want: protocols.ErrInterrupted},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				c := open(t, p, tc.url, tc.set)
				ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
				defer cancel()
				if tc.parent > 0 {
					time.AfterFunc(tc.parent, cancel)
				}
				began := time.Now()
				res := doCtx(ctx, c, 1, req(nil), false)
				if tc.skipFor != "" && res.request.Error == tc.skipFor {
					t.Skipf("got %s; no usable resolver here", tc.skipFor)
				}
				if res.count != 1 || res.request.Error != tc.want {
					t.Fatalf("error kind = %q, want %q (sample %+v)", res.request.Error, tc.want, res.request)
				}
				if res.request.Message == "" {
					t.Errorf("a %s failure without a message", tc.want)
				}
				if res.request.Status != 0 {
					t.Errorf("status = %d", res.request.Status)
				}
				if took := time.Since(began); took > 4*time.Second {
					t.Errorf("took %v", took)
				}
			})
		}
	})
}

func TestBytes(t *testing.T) {
	protocoltest.Run(t, New(), func(t *testing.T, _ protocoltest.Path, p protocols.Protocol) {
		const reqBody, respBody = 1000, 2000
		srv := httptest.NewServer(nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
			io.Copy(io.Discard, r.Body)
			w.Write(make([]byte, respBody))
		}))
		defer srv.Close()
		c := open(t, p, srv.URL, nil)
		for i := range 3 {
			res := do(t, c, 1, req(map[string]cty.Value{"body": cty.StringVal(strings.Repeat("x", reqBody))}), false)
			s := res.request
			if s.BytesSent < reqBody || s.BytesSent > reqBody+500 {
				t.Errorf("call %d: sent %d bytes for a %d-byte body", i, s.BytesSent, reqBody)
			}
			if s.BytesReceived < respBody || s.BytesReceived > respBody+500 {
				t.Errorf("call %d: received %d bytes for a %d-byte body", i, s.BytesReceived, respBody)
			}
		}
		res := do(t, c, 1, req(nil), false)
		if res.request.BytesSent <= 0 || res.request.BytesReceived <= respBody {
			t.Errorf("GET: %d/%d bytes", res.request.BytesSent, res.request.BytesReceived)
		}
	})
}

func TestLatency(t *testing.T) {
	protocoltest.Run(t, New(), func(t *testing.T, _ protocoltest.Path, p protocols.Protocol) {
		const delay = 50 * time.Millisecond
		srv := httptest.NewServer(nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
			time.Sleep(delay)
			io.WriteString(w, "ok")
		}))
		defer srv.Close()
		c := open(t, p, srv.URL, nil)
		best := time.Hour
		for range 3 {
			res := do(t, c, 1, req(nil), false)
			if got := res.request.Value; got < delay {
				t.Errorf("latency %v < the server's %v", got, delay)
			} else if got < best {
				best = got
			}
			if res.ttfb == nil || res.ttfb.Value < delay || res.ttfb.Value > res.request.Value {
				t.Errorf("ttfb %v of %v", res.ttfb, res.request.Value)
			}
			if !res.request.Time.After(res.ttfb.Time) && !res.request.Time.Equal(res.ttfb.Time) {
				t.Errorf("request ended at %v before its first byte at %v", res.request.Time, res.ttfb.Time)
			}
		}
		// The best of three, so a noisy machine does not fail the test.
		if best >= delay+20*time.Millisecond {
			t.Errorf("latency %v, want under %v", best, delay+20*time.Millisecond)
		}
	})
}

func TestKeepBody(t *testing.T) {
	protocoltest.Run(t, New(), func(t *testing.T, _ protocoltest.Path, p protocols.Protocol) {
		big := strings.Repeat("0123456789", 10000)
		// Above gRPC's default 4 MB message: the isolated path carries
		// a kept body back in a sample batch.
		huge := strings.Repeat("0123456789", 800000)
		srv := httptest.NewServer(nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
			switch r.URL.Path {
			case "/big":
				io.WriteString(w, big)
				return
			case "/huge":
				io.WriteString(w, huge)
				return
			}
			json.NewEncoder(w).Encode(map[string]string{"path": r.URL.Path})
		}))
		defer srv.Close()
		c := open(t, p, srv.URL, nil)
		if res := do(t, c, 1, req(map[string]cty.Value{"path": cty.StringVal("/a")}), true); res.body != "{\"path\":\"/a\"}\n" {
			t.Errorf("body = %q", res.body)
		}
		if res := do(t, c, 1, req(map[string]cty.Value{"path": cty.StringVal("/big")}), true); res.body != big {
			t.Errorf("body has %d bytes, want %d", len(res.body), len(big))
		}
		if res := do(t, c, 1, req(map[string]cty.Value{"path": cty.StringVal("/huge")}), true); res.body != huge {
			t.Errorf("body has %d bytes, want %d: %+v", len(res.body), len(huge), res.request.Error)
		}
		if res := do(t, c, 1, req(nil), false); res.body != "" {
			t.Errorf("body kept without KeepBody: %q", res.body)
		}
	})
}

// keep runs one call with the given KeepBody and KeepHeaders, and returns
// its request sample with the body and headers copied, as a capture would
// read them during emit.
func keep(t *testing.T, c protocols.Client, r cty.Value, keepBody, keepHeaders bool) (s protocols.Sample) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	n := 0
	c.Do(ctx, protocols.Call{VU: 1, Request: r, KeepBody: keepBody, KeepHeaders: keepHeaders}, func(got protocols.Sample) {
		if got.Metric != protocols.MetricRequest {
			if got.Body != nil || got.Headers != nil {
				t.Errorf("%s sample carries a body or headers: %+v", got.Metric, got)
			}
			return
		}
		n++
		s = got
		if got.Body != nil {
			s.Body = append([]byte{}, got.Body...)
		}
		if got.Headers != nil {
			s.Headers = make(map[string][]string, len(got.Headers))
			for k, v := range got.Headers {
				s.Headers[k] = append([]string(nil), v...)
			}
		}
	})
	if n != 1 {
		t.Fatalf("%d request samples", n)
	}
	return s
}

// TestKeepHeaders checks that a call hands back the response's headers,
// canonical and one line per value, only when KeepHeaders asks, and its
// body only when KeepBody asks, each apart from the other, on both paths:
// what a capture reads in the core.
func TestKeepHeaders(t *testing.T) {
	protocoltest.Run(t, New(), func(t *testing.T, _ protocoltest.Path, p protocols.Protocol) {
		srv := httptest.NewServer(nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
			switch r.URL.Path {
			case "/hop":
				w.Header().Set("X-Hop", "first")
				nethttp.Redirect(w, r, "/login", nethttp.StatusFound)
				return
			case "/fail":
				w.Header().Set("X-Reason", "maintenance")
				w.WriteHeader(nethttp.StatusServiceUnavailable)
				return
			}
			// Written as the server sends it, lower case: the client
			// hands it back in canonical form.
			w.Header()["x-token"] = []string{"tok-" + r.URL.Query().Get("u")}
			w.Header().Set("X-Hop", "last")
			nethttp.SetCookie(w, &nethttp.Cookie{Name: "session", Value: "s1", Path: "/"})
			nethttp.SetCookie(w, &nethttp.Cookie{Name: "csrf", Value: "c2", Path: "/"})
			io.WriteString(w, `{"token":"abc"}`)
		}))
		defer srv.Close()
		c := open(t, p, srv.URL, nil)
		login := req(map[string]cty.Value{"path": cty.StringVal("/login"), "query": strMap("u", "7")})

		s := keep(t, c, login, true, true)
		if s.Error != "" || s.Status != 200 {
			t.Fatalf("sample = %+v", s)
		}
		if got := s.Headers["X-Token"]; len(got) != 1 || got[0] != "tok-7" {
			t.Errorf("X-Token = %q, want [tok-7]; headers %v", got, s.Headers)
		}
		if got := strings.Join(s.Headers["Set-Cookie"], " | "); got != "session=s1; Path=/ | csrf=c2; Path=/" {
			t.Errorf("Set-Cookie lines = %q", got)
		}
		if got := s.Headers["Content-Type"]; len(got) != 1 || got[0] != "text/plain; charset=utf-8" {
			t.Errorf("Content-Type = %q", got)
		}
		if string(s.Body) != `{"token":"abc"}` {
			t.Errorf("body = %q", s.Body)
		}

		if s := keep(t, c, login, false, true); s.Body != nil || len(s.Headers["X-Token"]) != 1 {
			t.Errorf("headers only: body %q, headers %v", s.Body, s.Headers)
		}
		if s := keep(t, c, login, true, false); s.Headers != nil || string(s.Body) != `{"token":"abc"}` {
			t.Errorf("body only: body %q, headers %v", s.Body, s.Headers)
		}
		if s := keep(t, c, login, false, false); s.Headers != nil || s.Body != nil {
			t.Errorf("neither asked: body %q, headers %v", s.Body, s.Headers)
		}

		// A followed redirect: the headers of the response the call ends
		// with, not the redirect's.
		s = keep(t, c, req(map[string]cty.Value{"path": cty.StringVal("/hop")}), false, true)
		if got := s.Headers["X-Hop"]; s.Status != 200 || len(got) != 1 || got[0] != "last" {
			t.Errorf("after a redirect: status %d, X-Hop %q", s.Status, got)
		}
		// A failed response keeps its headers too; the core runs no
		// capture on it, but a check may read its body.
		s = keep(t, c, req(map[string]cty.Value{"path": cty.StringVal("/fail")}), true, true)
		if got := s.Headers["X-Reason"]; s.Error != "http_5xx" || len(got) != 1 || got[0] != "maintenance" {
			t.Errorf("failed response: %+v", s)
		}
	})
}

func TestRequestTimeoutOverridesTarget(t *testing.T) {
	protocoltest.Run(t, New(), func(t *testing.T, _ protocoltest.Path, p protocols.Protocol) {
		srv := httptest.NewServer(nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
			select {
			case <-time.After(300 * time.Millisecond):
			case <-r.Context().Done():
			}
		}))
		defer srv.Close()
		c := open(t, p, srv.URL, map[string]cty.Value{"timeout": cty.StringVal("50ms")})
		if res := do(t, c, 1, req(nil), false); res.request.Error != protocols.ErrTimeout {
			t.Errorf("target timeout: %+v", res.request)
		}
		res := do(t, c, 1, req(map[string]cty.Value{"timeout": cty.StringVal("2s")}), false)
		if res.request.Error != "" || res.request.Status != 200 {
			t.Errorf("request timeout: %+v", res.request)
		}
	})
}

func TestManyVUs(t *testing.T) {
	protocoltest.Run(t, New(), func(t *testing.T, _ protocoltest.Path, p protocols.Protocol) {
		srv, _ := recorder(t)
		c := open(t, p, srv.URL, nil)
		var wg sync.WaitGroup
		for vu := uint64(1); vu <= 200; vu += 7 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if res := do(t, c, vu, req(nil), false); res.request.Status != 200 {
					t.Errorf("VU %d: %+v", vu, res.request)
				}
			}()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if res := do(t, c, 1<<40, req(nil), false); res.request.Status != 200 {
				t.Errorf("sparse VU: %+v", res.request)
			}
		}()
		wg.Wait()
		if err := c.Close(); err != nil {
			t.Error(err)
		}
		if err := c.Close(); err != nil {
			t.Error("second Close:", err)
		}
	})
}

func TestCloseClosesIdleConnections(t *testing.T) {
	protocoltest.Run(t, New(), func(t *testing.T, _ protocoltest.Path, p protocols.Protocol) {
		closed := make(chan struct{}, 4)
		srv := httptest.NewUnstartedServer(nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {}))
		srv.Config.ConnState = func(_ net.Conn, s nethttp.ConnState) {
			if s == nethttp.StateClosed {
				closed <- struct{}{}
			}
		}
		srv.Start()
		defer srv.Close()
		c := open(t, p, srv.URL, nil)
		do(t, c, 1, req(nil), false)
		do(t, c, 2, req(nil), false)
		c.Close()
		for i := range 2 {
			select {
			case <-closed:
			case <-time.After(5 * time.Second):
				t.Fatalf("%d of 2 connections closed after Close", i)
			}
		}
	})
}
