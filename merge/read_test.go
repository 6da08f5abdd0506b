package merge

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestReadPathOfLog reads a pod's saved log as a file, and a compact and an
// indented export as exports.
func TestReadPathOfLog(t *testing.T) {
	a := segment(t, "1/2", "sha256:x", ms(1, 10), 0, 10, 1)
	line, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	indented, err := json.MarshalIndent(a, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	log := "hload 0.1.0: 1 scenario\n  PASS  rps  count < 100000\n" + string(line) + "\n"
	in, err := ReadPath("pod-0.log", []byte(log))
	if err != nil {
		t.Fatal(err)
	}
	if len(in) != 1 || in[0].Name != "pod-0.log, line 3" {
		t.Fatalf("read %s from a log; want one result, at pod-0.log, line 3", names(in))
	}
	for _, data := range [][]byte{line, indented} {
		in, err := ReadPath("a.json", data)
		if err != nil || len(in) != 1 || in[0].Name != "a.json" {
			t.Fatalf("read %s, %v from an export; want one result named a.json", names(in), err)
		}
	}
	_, err = ReadPath("broken.json", []byte(`{"hload_version": `))
	if err == nil || !strings.Contains(err.Error(), "broken.json: not a summary export") {
		t.Errorf("a broken export: %v; want a refusal naming broken.json", err)
	}
	_, err = ReadPath("pod-1.log", []byte("hload: error\n"))
	if err == nil || !strings.Contains(err.Error(), "pod-1.log: not a summary export") {
		t.Errorf("a log without a result: %v; want a refusal naming pod-1.log", err)
	}
}
