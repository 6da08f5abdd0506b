package main

import (
	"os"
	"strings"
	"testing"
)

// The marks around the generated tables in the Redis example's README.
const (
	readmeBegin = "<!-- begin: hload plugin describe redis --markdown -->\n"
	readmeEnd   = "<!-- end: hload plugin describe redis --markdown -->\n"
)

// TestRedisReadmeAttributes: the Redis example's README shows its
// attributes as `hload plugin describe redis --markdown` prints them from
// the plugin's own schemas, byte for byte, so the README cannot drift from
// the code. The tables hold every attribute, with its type, whether it is
// required, its default and its description.
func TestRedisReadmeAttributes(t *testing.T) {
	bin := buildRedisPlugin(t, t.TempDir())
	r := hload(t, t.TempDir(), "plugin", "describe", "redis", "--source", bin, "--markdown")
	noLeftovers(t, bin)
	if r.code != exitOK {
		t.Fatalf("plugin describe --markdown: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{
		"| `address` | string | yes |  | The Redis server, as host:port. |",
		"| `pool` | number | no | `16` | The most idle connections the target keeps, 1 to 10000. |",
		"| `timeout` | any | no | `\"5s\"` |",
		"| `args` | list(string) | no |  |",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("plugin describe redis --markdown lacks the row %q:\n%s", want, r.stdout)
		}
	}
	data, err := os.ReadFile("../../examples/plugins/redis/README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(data), readmeBegin)
	readme, _, ok2 := strings.Cut(rest, readmeEnd)
	if !ok || !ok2 {
		t.Fatalf("examples/plugins/redis/README.md lacks the marks %q and %q", readmeBegin, readmeEnd)
	}
	if readme != r.stdout {
		t.Errorf("examples/plugins/redis/README.md's attributes differ from the plugin's schemas; paste this between its marks:\n%s", r.stdout)
	}
}
