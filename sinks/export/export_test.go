package export

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hload/hload/metrics"
)

// TestExport: Start checks the folder, Close writes the summary with the
// series, once; a second Close returns the first's result.
func TestExport(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "summary.json")
	s := New(path, func() *metrics.IntervalSeries { return &metrics.IntervalSeries{IntervalS: 1} })
	if err := s.Start(context.Background(), metrics.RunInfo{}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(metrics.Summary{RunID: "r1", Passed: true}); err != nil {
		t.Fatal(err)
	}
	var got metrics.Summary
	data, _ := os.ReadFile(path)
	if err := json.Unmarshal(data, &got); err != nil || got.RunID != "r1" || got.Series == nil || got.Series.IntervalS != 1 {
		t.Errorf("file %s: %+v, %v", data, got, err)
	}
	if err := s.Close(metrics.Summary{RunID: "r2"}); err != nil {
		t.Fatal(err)
	}
	if data2, _ := os.ReadFile(path); string(data2) != string(data) {
		t.Error("a second Close wrote again")
	}

	missing := New(filepath.Join(dir, "gone", "summary.json"), nil)
	if err := missing.Start(context.Background(), metrics.RunInfo{}); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("Start in a missing folder = %v", err)
	}
	if err := missing.Close(metrics.Summary{}); err == nil || !strings.Contains(err.Error(), "writing "+filepath.Join(dir, "gone", "summary.json")) {
		t.Errorf("Close in a missing folder = %v", err)
	}
}
