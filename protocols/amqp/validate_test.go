package amqp

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/hload/hload/config"
	"github.com/hload/hload/protocols"
)

// TestRequestMistakesAtLoad: a request that cannot run is a diagnostic at
// its attribute when the file loads, with no broker needed.
// It stays in-process: load-time checks run on the host's built-in, isolated target or not.
func TestRequestMistakesAtLoad(t *testing.T) {
	src := `
target "mq" {
  protocol = "amqp"
  url      = "amqp://guest:guest@127.0.0.1:1/"
}
scenario "s" {
  executor = "constant-vus"
  vus      = 1
  duration = "1s"
  request "p" {
    kind  = "publsh"
  }
  request "c" {
    kind     = "consume"
    queue    = "q"
    exchange = "x"
  }
  request "ok" {
    kind        = "publish"
    routing_key = "q"
  }
}
`
	_, diags := config.Parse(map[string][]byte{"test.hcl": []byte(src)}, t.TempDir(), config.Options{Protocols: protocols.NewRegistry(New())})
	if len(diags) != 2 {
		t.Fatalf("%d diagnostics, want 2:\n%s", len(diags), diags.Error())
	}
	want := []struct {
		line     int
		summary  string
		contains string
	}{
		{11, "Invalid kind", `kind "publsh" must be publish, consume or rpc`},
		{16, "Invalid exchange", `exchange does not apply to kind "consume"`},
	}
	for i, w := range want {
		d := diags[i]
		if d.Subject == nil || d.Subject.Start.Line != w.line || d.Summary != w.summary || !strings.Contains(d.Detail, w.contains) {
			t.Errorf("diagnostic %d = %s: %s (%v), want line %d %q containing %q", i, d.Summary, d.Detail, d.Subject, w.line, w.summary, w.contains)
		}
	}
}

// TestTargetMistakesAtLoad: a target value Open would refuse is a
// diagnostic at its attribute when the file loads, before anything
// connects, with the message Open gives.
func TestTargetMistakesAtLoad(t *testing.T) {
	cases := []struct {
		name, attrs string
		line, col   int
		summary     string
		contains    string
	}{
		{"url without scheme", `url = "127.0.0.1:5672"`, 4, 9, "Invalid url", `url "127.0.0.1:5672"`},
		{"heartbeat", "url = \"amqp://127.0.0.1:1/\"\n  heartbeat = \"soon\"", 5, 15, "Invalid heartbeat", `heartbeat "soon" must be a positive duration`},
		{"channels", "url = \"amqp://127.0.0.1:1/\"\n  channels = 0", 5, 14, "Invalid channels", "channels must be a whole number from 1 to 2047"},
		{"tls on plain", "url = \"amqp://127.0.0.1:1/\"\n  tls_server_name = \"mq\"", 5, 21, "Invalid tls_server_name", "need an amqps:// url"},
		{"queue", "url = \"amqp://127.0.0.1:1/\"\n  queues = [{ durable = true }]", 5, 12, "Invalid queues", "queues[0].name is required"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := "\ntarget \"mq\" {\n  protocol = \"amqp\"\n  " + c.attrs + "\n}\n" + `
scenario "s" {
  executor = "constant-vus"
  vus      = 1
  duration = "1s"
  request "ok" {
    kind        = "publish"
    routing_key = "q"
  }
}
`
			_, diags := config.Parse(map[string][]byte{"test.hcl": []byte(src)}, t.TempDir(), config.Options{Protocols: protocols.NewRegistry(New())})
			if len(diags) != 1 {
				t.Fatalf("%d diagnostics, want 1:\n%s", len(diags), diags.Error())
			}
			d := diags[0]
			if d.Subject == nil || d.Subject.Start.Line != c.line || d.Subject.Start.Column != c.col || d.Summary != c.summary || !strings.Contains(d.Detail, c.contains) {
				t.Errorf("diagnostic = %s: %s (%v), want %d:%d %q containing %q", d.Summary, d.Detail, d.Subject, c.line, c.col, c.summary, c.contains)
			}
		})
	}
}

// TestMetricsListed: Info.Metrics names every metric and gauge constant
// the package declares, so that a threshold on any of them loads, and a
// new one cannot be left out of the list.
func TestMetricsListed(t *testing.T) {
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, ".", func(fi fs.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, 0)
	if err != nil {
		t.Fatal(err)
	}
	var declared []string
	for _, f := range pkgs["amqp"].Files {
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, name := range vs.Names {
					if !strings.HasPrefix(name.Name, "Metric") && !strings.HasPrefix(name.Name, "Gauge") {
						continue
					}
					lit, ok := vs.Values[i].(*ast.BasicLit)
					if !ok {
						t.Fatalf("%s is not a string literal", name.Name)
					}
					s, _ := strconv.Unquote(lit.Value)
					declared = append(declared, s)
				}
			}
		}
	}
	info := New().Describe()
	listed := append(slices.Clone(info.Metrics), info.Gauges...)
	for _, g := range info.Gauges {
		if !strings.HasPrefix(g, "amqp_connections_") || slices.Contains(info.Metrics, g) {
			t.Errorf("gauge %q is not a connection level, or is listed as a metric too", g)
		}
	}
	slices.Sort(declared)
	listed = slices.Sorted(slices.Values(listed))
	if len(declared) < 10 || !slices.Equal(declared, listed) {
		t.Errorf("Info.Metrics = %v\nthe package declares %v", listed, declared)
	}
}
