package html

import (
	"encoding/json"
	"io"
	"testing"

	"github.com/hload/hload/metrics"
)

// BenchmarkHourReport measures what `hload report` does with the export
// of a synthesised 1-hour run of 50 requests: decode it and render the
// page. (The browser's drawing of it is timed in
// TestHourRunReportInBrowser, beside a page without charts.)
func BenchmarkHourReport(b *testing.B) {
	export, err := json.Marshal(hourRun(b))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(export)))
	for b.Loop() {
		var sum metrics.Summary
		if err := json.Unmarshal(export, &sum); err != nil {
			b.Fatal(err)
		}
		if err := Render(io.Discard, &sum); err != nil {
			b.Fatal(err)
		}
	}
}
