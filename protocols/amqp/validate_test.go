package amqp

import (
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
