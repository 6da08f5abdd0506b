package config

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestFileConfinement(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "config")
	for _, d := range []string{dir, filepath.Join(dir, "bodies")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(path, content string) {
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(dir, "bodies", "order.json"), `{"id": 1}`)
	write(filepath.Join(root, "secret.txt"), "secret")
	if err := os.Symlink(filepath.Join(root, "secret.txt"), filepath.Join(dir, "escape.txt")); err != nil {
		t.Skip("symbolic links not available:", err)
	}
	if err := os.Symlink(filepath.Join("bodies", "order.json"), filepath.Join(dir, "inside.json")); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		path    string
		want    string // content, when wantErr is empty
		wantErr string
	}{
		{path: "bodies/order.json", want: `{"id": 1}`},
		{path: "./bodies/../bodies/order.json", want: `{"id": 1}`},
		{path: "inside.json", want: `{"id": 1}`},
		{path: "../secret.txt", wantErr: "leaves the config folder"},
		{path: "bodies/../../secret.txt", wantErr: "leaves the config folder"},
		{path: filepath.Join(root, "secret.txt"), wantErr: "absolute path"},
		{path: "escape.txt", wantErr: "symbolic link that leads out"},
		{path: "missing.json", wantErr: "no file"},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			src := oneRequest(`body = file("` + filepath.ToSlash(tt.path) + `")`)
			test, diags := Parse(map[string][]byte{filepath.Join(dir, "test.hcl"): []byte(src)}, dir, testOptions())
			if tt.wantErr != "" {
				text := render(t, test, diags)
				if !diags.HasErrors() || !strings.Contains(text, tt.wantErr) {
					t.Fatalf("want an error mentioning %q, got:\n%s", tt.wantErr, text)
				}
				return
			}
			if diags.HasErrors() {
				t.Fatalf("unexpected errors:\n%s", render(t, test, diags))
			}
			v, _ := test.Scenarios[0].Requests[0].Value(Iteration{})
			if got := v.GetAttr("body").AsString(); got != tt.want {
				t.Errorf("body = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestUnixMicros(t *testing.T) {
	test := mustParse(t, oneRequest(`body = "${unix_micros()}"`), testOptions())
	r := test.Scenarios[0].Requests[0]
	if !r.Dynamic() {
		t.Fatal("unix_micros() must be evaluated per call")
	}
	before := time.Now().UnixMicro()
	v, diags := r.Value(Iteration{VU: 1})
	after := time.Now().UnixMicro()
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	got, err := strconv.ParseInt(v.GetAttr("body").AsString(), 10, 64)
	if err != nil || got < before || got > after {
		t.Errorf("unix_micros() = %s, want a whole number in [%d, %d]", v.GetAttr("body").AsString(), before, after)
	}
}
