package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hload/hload/plugins/host"
)

// pluginFileTest is a test file whose plugin block pins pin ("" for none).
func pluginFileTest(pin string) string {
	// source is relative to the file, as apply reads it.
	block := "plugin \"redis\" {\n  source = \"plugins/hload-plugin-redis\"\n"
	if pin != "" {
		block += "  sha256 = \"" + pin + "\"\n"
	}
	block += "}\n"
	return block + `target "cache" {
  protocol = "redis"
  address  = "127.0.0.1:1"
}
scenario "s" {
  executor = "constant-vus"
  vus      = 1
  duration = "1s"
  request "get" {
    command = "GET"
    key     = "k"
  }
}
`
}

// TestPluginListAndDescribeFile: `plugin list test.hcl` and `plugin
// describe NAME test.hcl` resolve the file's plugin blocks as apply does
// (source relative to the file, the sha256 pin checked), with no
// HLOAD_PLUGIN_PATH or --source, and show the path and checksum status.
func TestPluginListAndDescribeFile(t *testing.T) {
	t.Setenv(host.PathEnv, "")
	root := t.TempDir()
	bin := buildRedisPlugin(t, root)
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	actual := hex.EncodeToString(sum[:])
	wrong := strings.Repeat("0", 64)
	// hload runs in another folder: the blocks find the binary beside the
	// file that declares them, as apply does, not beside hload.
	elsewhere := t.TempDir()
	writeFile(t, root, "unpinned.hcl", pluginFileTest(""))
	writeFile(t, root, "pinned.hcl", pluginFileTest(actual))
	writeFile(t, root, "wrong.hcl", pluginFileTest(wrong))

	for _, c := range []struct {
		file, status string
		code         int
	}{
		{"unpinned.hcl", "not pinned (sha256 " + actual + ")", exitOK},
		{"pinned.hcl", "ok (pinned)", exitOK},
		{"wrong.hcl", "MISMATCH: pinned " + wrong + ", actual " + actual, exitRuntime},
	} {
		r := hload(t, elsewhere, "plugin", "list", filepath.Join(root, c.file))
		noLeftovers(t, bin)
		if r.code != c.code {
			t.Errorf("plugin list %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", c.file, r.code, c.code, r.stdout, r.stderr)
		}
		lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
		if len(lines) != 2 {
			t.Errorf("plugin list %s printed %q, want a header and one plugin", c.file, r.stdout)
			continue
		}
		fields := strings.Fields(lines[1])
		if len(fields) < 4 || fields[0] != "redis" || fields[1] != filepath.Join(root, c.file)+":1" || fields[2] != bin ||
			strings.Join(fields[3:], " ") != c.status {
			t.Errorf("plugin list %s: %q, want redis, %s:1, %s and %q", c.file, lines[1], c.file, bin, c.status)
		}
	}

	r := hload(t, elsewhere, "plugin", "describe", "redis", filepath.Join(root, "pinned.hcl"))
	noLeftovers(t, bin)
	var d host.Description
	if r.code != exitOK {
		t.Fatalf("plugin describe redis pinned.hcl: exit %d\nstderr:\n%s", r.code, r.stderr)
	}
	if err := json.Unmarshal([]byte(r.stdout), &d); err != nil || d.Name != "redis" || len(d.RequestSchema) == 0 {
		t.Errorf("plugin describe redis pinned.hcl printed %q (%v), want the redis plugin's description", r.stdout, err)
	}
	// A pin that differs refuses the binary, as apply does.
	r = hload(t, elsewhere, "plugin", "describe", "redis", filepath.Join(root, "wrong.hcl"))
	if r.code != exitRuntime || !strings.Contains(r.stderr, "sha256 mismatch") {
		t.Errorf("plugin describe redis wrong.hcl: exit %d, stderr %q: want exit %d and the sha256 mismatch", r.code, r.stderr, exitRuntime)
	}
	// With the binary moved away, the file's block finds nothing.
	if err := os.Rename(bin, filepath.Join(root, "moved")); err != nil {
		t.Fatal(err)
	}
	r = hload(t, elsewhere, "plugin", "list", filepath.Join(root, "unpinned.hcl"))
	if r.code == exitOK || !strings.Contains(r.stdout, "not found") {
		t.Errorf("plugin list with the binary moved away: exit %d, stdout %q: want it not found", r.code, r.stdout)
	}
	t.Logf("plugin list: %s resolved to %s, sha256 %s", "unpinned.hcl", bin, actual)
}
