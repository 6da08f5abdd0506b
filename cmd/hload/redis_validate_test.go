package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRedisValidateRejectsBadAttributes: values the Redis plugin's
// attribute helpers refuse (a duration, a whole number in range, a
// command's key and value) are refused by hload validate, exit 2, with the
// file:line:col of the attribute and its name, though no redis-server is
// up: the plugin's validators run over the wire at load.
func TestRedisValidateRejectsBadAttributes(t *testing.T) {
	root := t.TempDir()
	buildRedisPlugin(t, root)
	const head = "plugin \"redis\" {\n  source = \"../plugins/hload-plugin-redis\"\n}\n"
	for _, c := range []struct {
		name, target, request, place, attr string
	}{
		{"duration", `timeout = "soon"`, `command = "GET"
    key = "k"`, "test.hcl:8:13", "timeout"},
		{"seconds", `timeout = 0.5`, `command = "GET"
    key = "k"`, "", ""},
		{"pool", `pool = 0`, `command = "GET"
    key = "k"`, "test.hcl:8:10", "pool"},
		{"value", `pool = 2`, `command = "SET"
    key = "k"`, "test.hcl:14:3", "value"},
		{"key", `pool = 2`, `command = "INCR"`, "test.hcl:14:3", "key"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(root, c.name)
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			writeFile(t, root, filepath.Join(c.name, "test.hcl"), head+`target "cache" {
  protocol = "redis"
  address  = "127.0.0.1:1"
`+"\n  "+c.target+`
}
scenario "s" {
  executor = "constant-vus"
  vus      = 1
  duration = "1s"
  request "r" {
    `+c.request+`
  }
}
`)
			r := hload(t, dir, "validate", "test.hcl")
			if c.attr == "" {
				if r.code != exitOK {
					t.Fatalf("validate: exit %d, want 0 (a number of seconds is a duration)\nstderr:\n%s", r.code, r.stderr)
				}
				return
			}
			if r.code != exitUsage || !strings.Contains(r.stderr, c.place) || !strings.Contains(r.stderr, c.attr) {
				t.Errorf("validate: exit %d, want %d, %s and %q in\n%s", r.code, exitUsage, c.place, c.attr, r.stderr)
			}
		})
	}
}
