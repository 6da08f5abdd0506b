package outfile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path string
		want string // "" for no error
	}{
		{filepath.Join(dir, "new.json"), ""},
		{file, ""},
		{dir, "is a folder, not a file"},
		{filepath.Join(dir, "missing", "x.json"), "the folder " + filepath.Join(dir, "missing") + " does not exist; create it first"},
		{filepath.Join(file, "x.json"), "is not a folder"},
	} {
		err := Check(tc.path)
		if (err == nil) != (tc.want == "") || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("Check(%s) = %v, want %q", tc.path, err, tc.want)
		}
	}
}

// TestWrite: the file appears whole, replaces the one there, and keeps
// the mode os.Create would give it; nothing else is left in the folder.
func TestWrite(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.json")
	if err := os.WriteFile(path, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Write(path, []byte("new")); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	st, _ := os.Stat(path)
	entries, _ := os.ReadDir(dir)
	if string(data) != "new" || len(entries) != 1 {
		t.Errorf("file %q, %d entries in the folder", data, len(entries))
	}
	probe := filepath.Join(dir, "probe")
	f, _ := os.Create(probe)
	f.Close()
	want, _ := os.Stat(probe)
	if st.Mode() != want.Mode() {
		t.Errorf("mode %v, want %v as os.Create gives", st.Mode(), want.Mode())
	}
	if err := Write(filepath.Join(dir, "gone", "x"), nil); err == nil || !strings.Contains(err.Error(), "no longer exists") {
		t.Errorf("Write into a missing folder = %v", err)
	}
}
