package wire

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/zclconf/go-cty/cty"

	"github.com/hload/hload/config"
	"github.com/hload/hload/protocols"
	httpproto "github.com/hload/hload/protocols/http"
)

// rawServer is a loopback HTTP/1.1 server that keeps the bytes of every
// request it read, as they came: its own count and record, not the
// client's.
type rawServer struct {
	ln   net.Listener
	url  string
	mu   sync.Mutex
	reqs [][]byte
	wg   sync.WaitGroup
}

func newRawServer(t *testing.T) *rawServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &rawServer{ln: ln, url: "http://" + ln.Addr().String()}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			s.wg.Add(1)
			go s.serve(conn)
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		s.wg.Wait()
	})
	return s
}

// serve answers each request of conn with a 200, keeping its bytes: the
// client waits for the response before it sends the next, so what was
// read up to the end of a request's body is that request.
func (s *rawServer) serve(conn net.Conn) {
	defer s.wg.Done()
	defer conn.Close()
	var raw bytes.Buffer
	r := bufio.NewReader(io.TeeReader(conn, &raw))
	for {
		conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		req, err := http.ReadRequest(r)
		if err != nil {
			return
		}
		if _, err := io.Copy(io.Discard, req.Body); err != nil {
			return
		}
		if r.Buffered() != 0 {
			return // pipelined: not what the client does
		}
		s.mu.Lock()
		s.reqs = append(s.reqs, bytes.Clone(raw.Bytes()))
		s.mu.Unlock()
		raw.Reset()
		if _, err := io.WriteString(conn, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"); err != nil {
			return
		}
	}
}

// take returns the requests read since the last take.
func (s *rawServer) take() [][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	reqs := s.reqs
	s.reqs = nil
	return reqs
}

// loadTemplateTest loads testdata/template.hcl against base, with the
// built-in HTTP protocol's schemas.
func loadTemplateTest(t *testing.T, base string) *config.Test {
	t.Helper()
	src, err := os.ReadFile("testdata/template.hcl")
	if err != nil {
		t.Fatal(err)
	}
	test, diags := config.Parse(map[string][]byte{"template.hcl": src}, t.TempDir(), config.Options{
		Protocols: protocols.NewRegistry(httpproto.New()),
		Vars:      map[string]string{"base_url": base},
	})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	return test
}

// TestTemplateSameBytes: a request evaluated per call, sent through the
// plugin wire as a template and its holes' values, reaches the server as
// the very bytes the built-in HTTP client sends in-process, from its
// template and from the whole request, and as the wire sends it whole to
// a plugin of version 3. Each call is one request at the server, whose
// own record is compared.
func TestTemplateSameBytes(t *testing.T) {
	srv := newRawServer(t)
	test := loadTemplateTest(t, srv.url)
	target := test.Targets[0].Config
	ctx := context.Background()

	open := func(p protocols.Protocol) protocols.Client {
		c, err := p.Open(ctx, target)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	harness := func(version int, direct bool) protocols.Client {
		h, err := newHarness(httpproto.New(), RemoteOptions{ProtocolVersion: version})
		if err != nil {
			t.Fatal(err)
		}
		if !direct {
			h.server.listen = nil // a plugin built before Direct
		}
		t.Cleanup(func() { h.Close() })
		return open(h)
	}
	inProcess := open(httpproto.New())
	plugin := harness(ProtocolVersion, true)
	pluginGRPC := harness(ProtocolVersion, false) // templates over gRPC's Run stream
	pluginV3 := harness(3, true)

	for _, tc := range []struct {
		request string
		holes   int // at least
		body    string
	}{
		{"order", 8, `"quantity":1`},
		{"whole", 1, `"quantity":2`},
	} {
		t.Run(tc.request, func(t *testing.T) {
			var rq *config.Request
			for _, r := range test.Scenarios[0].Requests {
				if r.Name == tc.request {
					rq = r
				}
			}
			shape, holes, ok := rq.Shape()
			if !ok || holes < tc.holes {
				t.Fatalf("Shape() = %#v, %d holes, %v; want at least %d", shape, holes, ok, tc.holes)
			}
			inTmpl, err := inProcess.(protocols.Templater).Template(shape, holes)
			if err != nil {
				t.Fatalf("in-process Template: %v", err)
			}
			wireTmpl, err := plugin.(protocols.Templater).Template(shape, holes)
			if err != nil {
				t.Fatalf("Template through the wire: %v", err)
			}
			if _, ok := wireTmpl.(*template); !ok {
				t.Fatalf("Template through the wire returned %T, not the wire's template", wireTmpl)
			}
			grpcTmpl, err := pluginGRPC.(protocols.Templater).Template(shape, holes)
			if err != nil {
				t.Fatalf("Template through the wire without Direct: %v", err)
			}
			if tmpl, err := pluginV3.(protocols.Templater).Template(shape, holes); err == nil || !strings.Contains(err.Error(), "wire version") {
				t.Fatalf("Template at wire version 3 = %v, %v; want an error naming the wire version", tmpl, err)
			}

			paths := []struct {
				name     string
				client   protocols.Client
				template any // nil: the whole request
			}{
				{"in-process, whole request", inProcess, nil},
				{"in-process, template", inProcess, inTmpl},
				{"plugin, template", plugin, wireTmpl},
				{"plugin without a direct connection, template", pluginGRPC, grpcTmpl},
				{"plugin of wire version 3, whole request", pluginV3, nil},
			}
			const calls = 30
			for i := range calls {
				it := config.Iteration{VU: uint64(i%3 + 1), Iteration: uint64(i), Scenario: "s"}
				value, _, diags := rq.Eval(it)
				if diags.HasErrors() {
					t.Fatal(diags.Error())
				}
				for _, p := range paths {
					call := protocols.Call{VU: it.VU, Iteration: it.Iteration, Request: value}
					if p.template != nil {
						hv, _, diags := rq.EvalHoles(it, nil)
						if diags.HasErrors() {
							t.Fatal(diags.Error())
						}
						call.Request, call.Prepared, call.Holes = cty.NilVal, p.template, hv
					}
					for _, s := range collect(ctx, p.client, call) {
						if s.Metric == protocols.MetricRequest && (s.Error != protocols.ErrNone || s.Status != 200) {
							t.Fatalf("call %d, %s: sample %+v", i, p.name, s)
						}
					}
				}
				got := srv.take()
				if len(got) != len(paths) {
					t.Fatalf("call %d: the server read %d requests for %d calls", i, len(got), len(paths))
				}
				for j := 1; j < len(paths); j++ {
					if !bytes.Equal(got[j], got[0]) {
						t.Errorf("call %d: %s sent\n%q\n%s sent\n%q", i, paths[j].name, got[j], paths[0].name, got[0])
					}
				}
				if i == 1 && !bytes.Contains(got[0], []byte(tc.body)) {
					t.Fatalf("call 1 sent %q, without its iteration's values (%s)", got[0], tc.body)
				}
			}
		})
	}
}

// defaultsProtocol is a protocol whose request has a default, and whose
// client takes templates: it keeps the shapes and holes it was given.
type defaultsProtocol struct {
	mu     sync.Mutex
	shapes []cty.Value
	holes  [][]cty.Value
}

var defaultsInfo = protocols.Info{
	Name:    "defaults",
	Version: "1.0.0",
	TargetSpec: hcldec.ObjectSpec{
		"address": &hcldec.AttrSpec{Name: "address", Type: cty.String},
	},
	RequestSpec: hcldec.ObjectSpec{
		"path":     &hcldec.AttrSpec{Name: "path", Type: cty.String},
		"greeting": &hcldec.AttrSpec{Name: "greeting", Type: cty.String},
		"json":     &hcldec.AttrSpec{Name: "json", Type: cty.DynamicPseudoType},
	},
	RequestDocs: map[string]protocols.AttrDoc{
		"greeting": {Description: "what to say", Default: cty.StringVal("hello")},
	},
}

func (p *defaultsProtocol) Describe() protocols.Info { return defaultsInfo }

func (p *defaultsProtocol) Open(context.Context, cty.Value) (protocols.Client, error) {
	return defaultsClient{p}, nil
}

type defaultsClient struct{ p *defaultsProtocol }

func (c defaultsClient) Template(shape cty.Value, holes int) (any, error) {
	c.p.mu.Lock()
	defer c.p.mu.Unlock()
	c.p.shapes = append(c.p.shapes, shape)
	return len(c.p.shapes), nil
}

func (c defaultsClient) Do(_ context.Context, call protocols.Call, emit func(protocols.Sample)) {
	c.p.mu.Lock()
	c.p.holes = append(c.p.holes, append([]cty.Value(nil), call.Holes...))
	c.p.mu.Unlock()
	okSample(emit)
}

func (defaultsClient) Close() error { return nil }

// openThroughWire opens a client of p through a harness, both closed
// when the test ends.
func openThroughWire(t *testing.T, p protocols.Protocol) protocols.Client {
	t.Helper()
	h, err := newHarness(p, RemoteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	c, err := h.Open(context.Background(), cty.ObjectVal(map[string]cty.Value{"address": cty.StringVal("x")}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestTemplateDefaults: the schema's defaults reach a template's client
// as they reach a whole request's: in the shape, for an attribute left
// null, and per call, for an attribute that is a hole as a whole and
// null in that call; a hole inside an attribute stays null. A marked
// value arrives unmarked.
func TestTemplateDefaults(t *testing.T) {
	p := &defaultsProtocol{}
	c := openThroughWire(t, p)
	templater := c.(protocols.Templater)

	// greeting left out: the default in the shape.
	shape := cty.ObjectVal(map[string]cty.Value{"path": cty.DynamicVal})
	tmpl, err := templater.Template(shape, 1)
	if err != nil {
		t.Fatal(err)
	}
	// greeting a whole hole, json with a hole inside.
	shape2 := cty.ObjectVal(map[string]cty.Value{
		"path": cty.StringVal("/"), "greeting": cty.DynamicVal,
		"json": cty.ObjectVal(map[string]cty.Value{"a": cty.DynamicVal}),
	})
	tmpl2, err := templater.Template(shape2, 2)
	if err != nil {
		t.Fatal(err)
	}
	calls := [][]cty.Value{
		{cty.StringVal("/a")},
		{cty.NullVal(cty.String), cty.NullVal(cty.DynamicPseudoType)},
		// Marked, as a sensitive value is: the wire carries no marks.
		{cty.StringVal("hi").Mark("sensitive"), cty.ObjectVal(map[string]cty.Value{"n": cty.NumberIntVal(3).Mark("sensitive")})},
	}
	for i, hv := range calls {
		call := protocols.Call{VU: 1, Iteration: uint64(i), Prepared: tmpl, Holes: hv}
		if i > 0 {
			call.Prepared = tmpl2
		}
		if got := collect(context.Background(), c, call); len(got) != 1 || got[0].Error != protocols.ErrNone {
			t.Fatalf("call %d: samples %+v", i, got)
		}
	}

	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.shapes) != 2 {
		t.Fatalf("the client made %d templates, want 2", len(p.shapes))
	}
	if g := p.shapes[0].GetAttr("greeting"); !g.RawEquals(cty.StringVal("hello")) {
		t.Errorf("the shape's greeting left out is %#v, want the default", g)
	}
	if g := p.shapes[1].GetAttr("greeting"); g.IsKnown() {
		t.Errorf("the shape's greeting hole is %#v, want a hole", g)
	}
	want := [][]cty.Value{
		{cty.StringVal("/a")},
		{cty.StringVal("hello"), cty.NullVal(cty.DynamicPseudoType)},
		{cty.StringVal("hi"), cty.ObjectVal(map[string]cty.Value{"n": cty.NumberIntVal(3)})},
	}
	if len(p.holes) != len(want) {
		t.Fatalf("the client got %d calls, want %d", len(p.holes), len(want))
	}
	for i := range want {
		if fmt.Sprintf("%#v", p.holes[i]) != fmt.Sprintf("%#v", want[i]) {
			t.Errorf("call %d: holes %#v, want %#v", i, p.holes[i], want[i])
		}
	}
}

// TestTemplateRefused: a plugin whose client takes no templates refuses
// the shape with a clear error, and the calls then carry their whole
// requests, which reach the protocol as sent.
func TestTemplateRefused(t *testing.T) {
	var mu sync.Mutex
	var paths []string
	_, c, _ := open(t, RemoteOptions{}, func(_ context.Context, call protocols.Call, emit func(protocols.Sample)) {
		mu.Lock()
		paths = append(paths, call.Request.GetAttr("path").AsString())
		mu.Unlock()
		okSample(emit)
	})
	shape := cty.ObjectVal(map[string]cty.Value{"path": cty.DynamicVal})
	tmpl, err := c.(protocols.Templater).Template(shape, 1)
	if err == nil || !strings.Contains(err.Error(), "takes no templates") {
		t.Fatalf("Template = %v, %v; want the plugin's refusal", tmpl, err)
	}
	const calls = 5
	for i := range calls {
		got := collect(context.Background(), c, protocols.Call{VU: 1, Iteration: uint64(i), Request: request(fmt.Sprintf("/p%d", i))})
		if len(got) != 1 || got[0].Error != protocols.ErrNone {
			t.Fatalf("call %d: samples %+v", i, got)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if got := strings.Join(paths, " "); got != "/p0 /p1 /p2 /p3 /p4" {
		t.Errorf("the protocol got paths %q", got)
	}
}

// TestTemplateConcurrentVUs: many VUs share a template and the stream's
// type table while a hole changes type from call to call; each call's
// holes reach the protocol as sent. Run with -race, it also checks the
// host's shared state.
func TestTemplateConcurrentVUs(t *testing.T) {
	p := &defaultsProtocol{}
	c := openThroughWire(t, p)
	shape := cty.ObjectVal(map[string]cty.Value{
		"path": cty.DynamicVal, "json": cty.ObjectVal(map[string]cty.Value{"a": cty.DynamicVal}),
	})
	tmpl, err := c.(protocols.Templater).Template(shape, 2)
	if err != nil {
		t.Fatal(err)
	}
	// json.a's value for a call: a number, a string or a tuple.
	a := func(vu, it int) cty.Value {
		switch it % 3 {
		case 0:
			return cty.NumberIntVal(int64(vu*1000 + it))
		case 1:
			return cty.StringVal(fmt.Sprintf("s-%d-%d", vu, it))
		}
		return cty.TupleVal([]cty.Value{cty.NumberIntVal(int64(vu)), cty.StringVal("x")})
	}
	const vus, calls = 20, 50
	var wg sync.WaitGroup
	for vu := 1; vu <= vus; vu++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for it := range calls {
				hv := []cty.Value{cty.StringVal(fmt.Sprintf("/%d/%d", vu, it)), a(vu, it)}
				got := collect(context.Background(), c, protocols.Call{VU: uint64(vu), Iteration: uint64(it), Prepared: tmpl, Holes: hv})
				if len(got) != 1 || got[0].Error != protocols.ErrNone {
					t.Errorf("VU %d call %d: samples %+v", vu, it, got)
					return
				}
			}
		}()
	}
	wg.Wait()
	p.mu.Lock()
	defer p.mu.Unlock()
	seen := make(map[string]bool)
	for _, hv := range p.holes {
		var vu, it int
		if _, err := fmt.Sscanf(hv[0].AsString(), "/%d/%d", &vu, &it); err != nil {
			t.Fatalf("path hole %#v: %v", hv[0], err)
		}
		if !hv[1].RawEquals(a(vu, it)) {
			t.Errorf("VU %d call %d: json.a %#v, want %#v", vu, it, hv[1], a(vu, it))
		}
		seen[hv[0].AsString()] = true
	}
	if len(p.holes) != vus*calls || len(seen) != vus*calls {
		t.Errorf("the protocol got %d calls, %d distinct; want %d", len(p.holes), len(seen), vus*calls)
	}
}
