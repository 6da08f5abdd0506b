package main

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hload/hload/config"
	"github.com/hload/hload/protocols"
	hloadamqp "github.com/hload/hload/protocols/amqp"
	hloadhttp "github.com/hload/hload/protocols/http"
	hloadsse "github.com/hload/hload/protocols/sse"
)

// badMark ends the line of the attribute a case gets wrong.
const badMark = "# <- wrong"

// badValue is an attribute value a protocol's Open or first call refuses:
// validate, plan and apply must refuse it first, at the attribute.
type badValue struct {
	name     string
	protocol string // http, sse, amqp, or an example plugin: echo, lines
	target   string // the target's protocol attributes; "" for the protocol's defaults
	request  string // the request's attributes; "" for the protocol's defaults
}

// protocolDefaults are a valid target and request of each protocol. The
// targets point at port 1 of loopback: nothing is sent, as the test must
// end at load.
var protocolDefaults = map[string][2]string{
	"http":  {`base_url = "http://127.0.0.1:1"`, `path = "/"`},
	"sse":   {`base_url = "http://127.0.0.1:1"`, `path = "/events"`},
	"amqp":  {`url = "amqp://guest:guest@127.0.0.1:1/"`, "kind        = \"publish\"\n    routing_key = \"q\""},
	"echo":  {`address = "127.0.0.1:1"`, `payload = "x"`},
	"lines": {`address = "127.0.0.1:1"`, `line = "PING"`},
}

var badValues = []badValue{
	{name: "target timeout", protocol: "http", target: "base_url = \"http://127.0.0.1:1\"\n  timeout  = \"fast\" " + badMark},
	{name: "target base_url without scheme", protocol: "http", target: `base_url = "127.0.0.1:8080" ` + badMark},
	{name: "request timeout", protocol: "http", request: `timeout = "fast" ` + badMark},
	{name: "request timeout drawn per call", protocol: "http", request: `timeout = random_choice(["fast", "slow"]) ` + badMark},
	{name: "request method", protocol: "http", request: `method = "GTE" ` + badMark},
	{name: "request body and json", protocol: "http", request: "method = \"POST\"\n    body   = \"a\"\n    json   = { a = 1 } " + badMark},

	{name: "target timeout", protocol: "sse", target: "base_url = \"http://127.0.0.1:1\"\n  timeout  = \"fast\" " + badMark},
	{name: "target base_url without scheme", protocol: "sse", target: `base_url = "127.0.0.1:8080" ` + badMark},
	{name: "request duration", protocol: "sse", request: "path     = \"/events\"\n    duration = \"fast\" " + badMark},
	{name: "request sent_at_unit", protocol: "sse", request: "path          = \"/events\"\n    sent_at_field = \"ts\"\n    sent_at_unit  = \"fortnights\" " + badMark},

	{name: "target url without scheme", protocol: "amqp", target: `url = "127.0.0.1:5672" ` + badMark},
	{name: "target heartbeat", protocol: "amqp", target: "url       = \"amqp://127.0.0.1:1/\"\n  heartbeat = \"soon\" " + badMark},
	{name: "target channels", protocol: "amqp", target: "url      = \"amqp://127.0.0.1:1/\"\n  channels = 0 " + badMark},
	{name: "request kind", protocol: "amqp", request: `kind = "publsh" ` + badMark},
	{name: "request timeout", protocol: "amqp", request: "kind        = \"publish\"\n    routing_key = \"q\"\n    timeout     = \"fast\" " + badMark},
	{name: "request attribute of another kind", protocol: "amqp", request: "kind     = \"consume\"\n    queue    = \"q\"\n    exchange = \"x\" " + badMark},

	{name: "target address", protocol: "echo", target: `address = "7007" ` + badMark},
	{name: "target timeout", protocol: "echo", target: "address = \"127.0.0.1:1\"\n  timeout = \"fast\" " + badMark},
	{name: "request payload", protocol: "echo", request: `payload = "" ` + badMark},

	{name: "target address", protocol: "lines", target: `address = "6379" ` + badMark},
	{name: "target timeout", protocol: "lines", target: "address = \"127.0.0.1:1\"\n  timeout = true " + badMark},
	{name: "request line of two lines", protocol: "lines", request: `line = "PING\nPING" ` + badMark},
}

// isPluginProtocol reports whether name is one of the example plugins.
func isPluginProtocol(name string) bool { return name == "echo" || name == "lines" }

// badValueTest writes the test of c, with a plugin block at source for
// the example plugins, and returns the file's content.
func badValueTest(c badValue, source string) string {
	target, request := c.target, c.request
	if target == "" {
		target = protocolDefaults[c.protocol][0]
	}
	if request == "" {
		request = protocolDefaults[c.protocol][1]
	}
	var b strings.Builder
	if source != "" {
		fmt.Fprintf(&b, "plugin %q {\n  source = %q\n}\n\n", c.protocol, source)
	}
	fmt.Fprintf(&b, "target \"t\" {\n  protocol = %q\n  %s\n}\n\n", c.protocol, target)
	fmt.Fprintf(&b, "scenario \"s\" {\n  executor = \"constant-vus\"\n  vus      = 1\n  duration = \"1s\"\n\n  request \"r\" {\n    %s\n  }\n}\n", request)
	return b.String()
}

// badPlace returns file:line:col of the value of the marked attribute.
func badPlace(t *testing.T, file, src string) string {
	t.Helper()
	for i, line := range strings.Split(src, "\n") {
		if !strings.HasSuffix(line, badMark) {
			continue
		}
		eq := strings.Index(line, "=")
		col := eq + 1 + len(line[eq+1:]) - len(strings.TrimLeft(line[eq+1:], " "))
		return fmt.Sprintf("%s:%d:%d", file, i+1, col+1)
	}
	t.Fatalf("no line is marked %q in\n%s", badMark, src)
	return ""
}

// TestValidateRejectsWhatOpenRejects: for each protocol, built-in or
// example plugin, each attribute value that Open or the first call would
// refuse is refused by validate, plan and apply first: exit 2, one error,
// at the attribute's line and column, and nothing run.
func TestValidateRejectsWhatOpenRejects(t *testing.T) {
	for _, c := range badValues {
		t.Run(c.protocol+" "+c.name, func(t *testing.T) {
			source := ""
			if isPluginProtocol(c.protocol) {
				requirePlugins(t)
				source, _ = pluginCopy(t, c.protocol)
			}
			dir := t.TempDir()
			src := badValueTest(c, source)
			writeFile(t, dir, "test.hcl", src)
			want := badPlace(t, "test.hcl", src)
			for _, cmd := range []string{"validate", "plan", "apply"} {
				r := hload(t, dir, cmd, "--no-color", "test.hcl")
				closing := fmt.Sprintf("hload: 1 error(s) in the config, at %s; nothing was run", want)
				if r.code != exitUsage || !strings.Contains(r.stderr, closing) {
					t.Errorf("%s: exit %d, want 2 with %q\nfile:\n%s\nstderr:\n%s", cmd, r.code, closing, src, r.stderr)
				}
				if source != "" {
					noLeftovers(t, source)
				}
			}
		})
	}
}

// TestValidateBinaryFile: a binary file given as the config is one error
// that names it, without echoing its bytes.
func TestValidateBinaryFile(t *testing.T) {
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(1, 2))
	data := make([]byte, 4096)
	for i := range data {
		data[i] = byte(r.IntN(256))
	}
	copy(data, "\x7fELF\x02\x01\x01\x00\x00\x00")
	if err := os.WriteFile(filepath.Join(dir, "test.hcl"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	res := hload(t, dir, "validate", "--no-color", "test.hcl")
	if res.code != exitUsage {
		t.Errorf("exit %d, want 2", res.code)
	}
	if n := strings.Count(res.stderr, "Error: "); n != 1 {
		t.Errorf("%d errors, want 1", n)
	}
	for _, want := range []string{"test.hcl is not a UTF-8 text file", "hload: 1 error(s) in the config, at test.hcl:1:"} {
		if !strings.Contains(res.stderr, want) {
			t.Errorf("stderr lacks %q", want)
		}
	}
	if len(res.stderr) > 1000 || bytes.ContainsRune([]byte(res.stderr), 0) {
		t.Errorf("%d bytes of errors, some of them the file's:\n%q", len(res.stderr), res.stderr)
	}
}

// withoutValidators hides a protocol's validators: only Describe and Open
// are promoted, as for a protocol that checks nothing at load.
type withoutValidators struct{ protocols.Protocol }

// TestBadValuesFailAtOpenOrFirstCall checks the table's premise for the
// built-in protocols: with their validators hidden, the file loads, and
// each value is refused by Open, or fails the first call, which the
// server never sees. So validate refuses nothing that would have run.
// AMQP's request rows need a broker for a client, and the plugins run in
// their own processes; their Open and validators share one decoder.
func TestBadValuesFailAtOpenOrFirstCall(t *testing.T) {
	var served atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served.Add(1)
		w.Header().Set("Content-Type", "text/event-stream")
	}))
	defer srv.Close()
	builtins := map[string]protocols.Protocol{"http": hloadhttp.New(), "sse": hloadsse.New(), "amqp": hloadamqp.New()}
	reg := protocols.NewRegistry(withoutValidators{builtins["http"]}, withoutValidators{builtins["sse"]}, withoutValidators{builtins["amqp"]})
	for _, c := range badValues {
		p, builtin := builtins[c.protocol]
		if !builtin || (c.protocol == "amqp" && c.target == "") {
			continue
		}
		t.Run(c.protocol+" "+c.name, func(t *testing.T) {
			src := strings.ReplaceAll(badValueTest(c, ""), "http://127.0.0.1:1", srv.URL)
			test, diags := config.Parse(map[string][]byte{"test.hcl": []byte(src)}, t.TempDir(), config.Options{Protocols: reg})
			if diags.HasErrors() {
				t.Fatalf("without the validators, the file does not load: %s", diags.Error())
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			client, err := p.Open(ctx, test.Targets[0].Config)
			if c.target != "" {
				if err == nil {
					client.Close()
					t.Fatal("Open accepted the target")
				}
				t.Logf("Open: %v", err)
				return
			}
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			defer client.Close()
			value, diags := test.Scenarios[0].Requests[0].Value(config.Iteration{VU: 1})
			if diags.HasErrors() {
				t.Fatal(diags.Error())
			}
			before := served.Load()
			var failed []protocols.Sample
			client.Do(ctx, protocols.Call{VU: 1, Request: value}, func(s protocols.Sample) {
				if s.Metric == protocols.MetricRequest && s.Error != protocols.ErrNone {
					failed = append(failed, s)
				}
			})
			if len(failed) != 1 {
				t.Fatalf("the first call did not fail")
			}
			if n := served.Load() - before; n != 0 {
				t.Errorf("the server received %d requests of a call that failed on its own values", n)
			}
			t.Logf("first call: %s %s", failed[0].Error, failed[0].Message)
		})
	}
}

// TestPluginNullAttributes: a plugin source that evaluates to null is a
// mistake at load for validate, plan and apply alike, never a panic; a
// sha256 that is null or "" leaves the binary unpinned, so that a variable
// can make the pin optional.
func TestPluginNullAttributes(t *testing.T) {
	requirePlugins(t)
	bin, _ := pluginCopy(t, "echo")
	srv := startEchoServer(t)
	test := func(plugin string) string {
		return `variable "pin" {
  type    = string
  default = null
}

variable "source" {
  type    = string
  default = null
}

plugin "echo" {
  ` + plugin + `
}

target "t" {
  protocol = "echo"
  address  = "` + srv.addr + `"
}

scenario "s" {
  executor = "constant-vus"
  vus      = 1
  duration = "1s"

  request "r" {
    payload = "x"
  }
}
`
	}
	for _, c := range []struct {
		name, plugin string
		vars         []string
		code         int
		place        string
	}{
		{"source null", "source = null", nil, exitUsage, "test.hcl:12:12"},
		{"source null through a variable", "source = var.source", nil, exitUsage, "test.hcl:12:12"},
		{"sha256 null", "source = " + fmt.Sprintf("%q", bin) + "\n  sha256 = var.pin", nil, exitOK, ""},
		{"sha256 empty", "source = " + fmt.Sprintf("%q", bin) + "\n  sha256 = var.pin", []string{"--var", "pin="}, exitOK, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, dir, "test.hcl", test(c.plugin))
			// An unpinned plugin runs: apply sends its load to the echo server.
			before := srv.conns.Load()
			for _, cmd := range []string{"validate", "plan", "apply"} {
				args := []string{cmd, "--no-color", "test.hcl"}
				if cmd == "apply" {
					args = append(args, "--quiet")
				}
				r := hload(t, dir, append(args, c.vars...)...)
				noLeftovers(t, bin)
				if r.code != c.code || strings.Contains(r.stderr, "panic") || (c.place != "" && !strings.Contains(r.stderr, "at "+c.place+";")) {
					t.Errorf("%s: exit %d, want %d at %q\nstderr:\n%s", cmd, r.code, c.code, c.place, r.stderr)
				}
			}
			if sent := srv.conns.Load() - before; (sent > 0) != (c.code == exitOK) {
				t.Errorf("the echo server got %d connections", sent)
			}
		})
	}
}

// TestPlanAndValidateAreDeterministic: a local drawn once per load whose value fails
// for half the draws gets the same verdict from plan and validate on every run (12
// runs agreeing by chance: 1 in 2048).
func TestPlanAndValidateAreDeterministic(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "test.hcl", `
locals {
  port = tonumber(random_choice(["8080", "80", "x", "y"]))
}

target "shop" {
  base_url = "http://127.0.0.1:${local.port}"
}

scenario "s" {
  executor = "constant-vus"
  vus      = 1
  duration = "1s"

  request "r" {
    path = "/"
  }
}
`)
	for _, cmd := range []string{"plan", "validate"} {
		codes := map[int]int{}
		for range 12 {
			codes[hload(t, dir, cmd, "--no-color", "test.hcl").code]++
		}
		if len(codes) != 1 {
			t.Errorf("12 runs of %s gave the exit codes %v", cmd, codes)
		}
	}
}
