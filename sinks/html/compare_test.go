package html

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hload/hload/compare"
	"github.com/hload/hload/metrics"
	"github.com/hload/hload/sinks/html/browsertest"
)

// searchSummary is a run without series (an export of an older hload, or
// one trimmed by hand) whose scenario "search" ran a capacity search of
// three steps, the second its saturation point; request is its one
// request's name.
func searchSummary(id, request string, scale float64) *metrics.Summary {
	c := &metrics.CapacitySummary{Model: "open", Unit: "iterations/s"}
	for _, load := range []float64{100, 150, 225} {
		c.Steps = append(c.Steps, metrics.CapacityStep{Load: load * scale, DurationS: 1, Count: int64(load),
			RPS: min(load, 160) * scale, OKRPS: min(load, 150) * scale, P95: load / 10})
	}
	c.Saturation = metrics.CapacitySaturation{Step: 2, CapacityStep: c.Steps[1], Reason: "saturated", Detail: "test"}
	return &metrics.Summary{HloadVersion: "test", RunID: id, Started: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), DurationS: 3,
		Scenarios: map[string]*metrics.ScenarioSummary{"search": {Executor: "capacity-search", Model: "open", Capacity: c,
			Requests: map[string]*metrics.RequestFigures{request: {Count: 475, RPS: 158}}}}}
}

// TestCapacityWithoutSeriesInBrowser: the capacity panel is drawn from the
// summary itself, so a report of an export without series still shows the
// curve (and only it); and a comparison of two such exports shows both
// curves and its tables, with no other chart and no error in the page's
// script (Open waits for it to finish). A name written like markup stays
// text.
func TestCapacityWithoutSeriesInBrowser(t *testing.T) {
	browsertest.RequireChromium(t)
	evil := `</script><script>alert(1)</script>`
	base, new := searchSummary("base", evil, 1), searchSummary("new", "r", 1.2)
	dir := t.TempDir()
	var report, page bytes.Buffer
	if err := Render(&report, base); err != nil {
		t.Fatal(err)
	}
	if err := RenderComparison(&page, compare.Compare(compare.Run{Path: "base.json", Summary: base}, compare.Run{Path: "new.json", Summary: new}), nil, nil); err != nil {
		t.Fatal(err)
	}
	for _, out := range []*bytes.Buffer{&report, &page} {
		if strings.Contains(out.String(), "<script>alert(1)") {
			t.Fatalf("a request's name was written as markup")
		}
	}
	browser := browsertest.NewBrowser(t)
	for name, out := range map[string]*bytes.Buffer{"report": &report, "compare": &page} {
		path := filepath.Join(dir, name+".html")
		if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		p := browsertest.Open(t, browser, path)
		if len(p.Charts) != 1 || !strings.HasPrefix(p.Charts[0].Title, "capacity search") || p.Charts[0].Coloured < 40 {
			t.Errorf("%s: charts %+v, want the capacity curve alone, drawn", name, p.Charts)
			continue
		}
		ch := p.Charts[0]
		t.Logf("%s: %d coloured pixels, %d of the saturation marks in %d columns", name, ch.Coloured, ch.SaturationMark, ch.SaturationColumns)
		// One line in the report, both runs' in the comparison (at 150
		// and 180 iterations/s), each 2 pixels wide.
		if want := map[string]int{"report": 2, "compare": 4}[name]; ch.SaturationColumns != want || ch.SaturationMark < ch.Height/4 {
			t.Errorf("%s: %d pixels of the saturation marks in %d columns, want %d columns", name, ch.SaturationMark, ch.SaturationColumns, want)
		}
		if n := len(p.Tables["capacity"]); n != map[string]int{"report": 3, "compare": 4}[name] {
			t.Errorf("%s: the capacity table has %d rows", name, n)
		}
		browsertest.SaveArtifact(t, "capacity-without-series-"+name+".png", p.Screenshot)
	}
}
