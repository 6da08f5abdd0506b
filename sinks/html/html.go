// Package html is the html sink and the renderer of hload's HTML report:
// one self-contained file that opens offline from disk, with the run's
// series as charts and the summary's tables.
//
//	sink "html" {
//	  path = "report.html"
//	}
//
// The charts are drawn by uPlot 1.6.32 (MIT, vendored in uplot/ with its
// LICENSE), embedded in every report. uPlot was chosen for its size and
// speed: about 50 KB minified with no dependency, and it draws tens of
// thousands of points on a canvas in milliseconds, so a 1-hour run with 50
// requests stays light to open. The page reads its data from JSON embedded
// in it and fetches nothing: no CDN, no network.
package html

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/zclconf/go-cty/cty"

	"github.com/hload/hload/compare"
	"github.com/hload/hload/core"
	"github.com/hload/hload/metrics"
	"github.com/hload/hload/sinks"
	"github.com/hload/hload/sinks/series"
)

var (
	//go:embed uplot/uPlot.iife.min.js
	uplotJS string
	//go:embed uplot/uPlot.min.css
	uplotCSS string
	//go:embed chart.js
	chartJS string
	//go:embed report.js
	reportJS string
	//go:embed report.css
	reportCSS string
	//go:embed report.html.tmpl
	reportTemplate string
	//go:embed page.html.tmpl
	pageTemplate string
)

// Spec is the schema of a `sink "html"` block.
func Spec() hcldec.ObjectSpec {
	return hcldec.ObjectSpec{
		"path": &hcldec.AttrSpec{Name: "path", Type: cty.String, Required: true},
	}
}

// Type is the html sink as its registry knows it: `sink "html"`.
func Type() sinks.Type {
	return sinks.Type{Name: "html", Spec: Spec(), New: func(b sinks.Block) (core.Sink, error) {
		s, err := New(b.Config, b.Plans)
		if err != nil {
			return nil, err
		}
		return s, nil
	}}
}

// Sink collects the run's series and writes the report when the run
// ends. It implements core.Sink.
type Sink struct {
	path      string
	collector *series.Collector
}

var _ core.Sink = (*Sink)(nil)

// New returns an html sink for a block that conforms to Spec, for a run
// of the scenarios planned in plans (core.Plan). A relative path is taken
// from the working directory. No file is written before Close.
func New(cfg cty.Value, plans []core.ScenarioPlan) (*Sink, error) {
	if cfg.IsNull() || !cfg.Type().IsObjectType() || !cfg.IsWhollyKnown() || !cfg.Type().HasAttribute("path") {
		return nil, errors.New("html sink: the block must be a known object with a path")
	}
	p := cfg.GetAttr("path")
	if p.IsNull() || p.Type() != cty.String {
		return nil, errors.New(`html sink: "path" must be a string`)
	}
	if strings.TrimSpace(p.AsString()) == "" {
		return nil, errors.New(`html sink: "path" must not be empty`)
	}
	return &Sink{path: filepath.Clean(p.AsString()), collector: series.New(plans)}, nil
}

// Path is the report's path.
func (s *Sink) Path() string { return s.path }

// Start checks that the report's folder exists, so that a typo fails the
// run before any load rather than losing the report at its end.
func (s *Sink) Start(ctx context.Context, run metrics.RunInfo) error {
	dir := filepath.Dir(s.path)
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return fmt.Errorf("html sink: the folder of %q does not exist", s.path)
	}
	return s.collector.Start(ctx, run)
}

// Write adds the interval to the series.
func (s *Sink) Write(snap metrics.Snapshot) error { return s.collector.Write(snap) }

// Close writes the report: the summary with the series collected.
func (s *Sink) Close(sum metrics.Summary) error {
	sum.Series = s.collector.Series()
	var buf bytes.Buffer
	if err := Render(&buf, &sum); err != nil {
		return fmt.Errorf("html sink: %w", err)
	}
	if err := os.WriteFile(s.path, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("html sink: %w", err)
	}
	return nil
}

// Render writes the report of a run to w. The summary's Series give the
// charts; without them the report has the tables only.
func Render(w io.Writer, sum *metrics.Summary) error {
	data, err := json.Marshal(sum)
	if err != nil {
		return err
	}
	t, err := parsePage("report", reportTemplate)
	if err != nil {
		return err
	}
	return t.Execute(w, view{
		page:     newPage(data),
		Sum:      sum,
		ReportJS: template.JS(reportJS),
		Protocol: protocolMetrics(sum.Metrics),
	})
}

// page is what the shared parts of every page read (page.html.tmpl):
// the embedded data, uPlot, the charts' machinery and the styles.
type page struct {
	// Connect lets the page fetch from the server that served it (the
	// live dashboard); a report fetches nothing.
	Connect             bool
	Data                template.JS
	UplotJS, ChartJS    template.JS
	UplotCSS, ReportCSS template.CSS
}

// newPage embeds data, JSON already marshalled: encoding/json escapes <,
// > and &, so it is safe in a script element.
func newPage(data []byte) page {
	return page{Data: template.JS(data), UplotJS: template.JS(uplotJS), ChartJS: template.JS(chartJS),
		UplotCSS: template.CSS(uplotCSS), ReportCSS: template.CSS(reportCSS)}
}

// parsePage parses a page's template with the shared parts.
func parsePage(name, text string) (*template.Template, error) {
	t, err := template.New(name).Funcs(funcs).Parse(pageTemplate)
	if err != nil {
		return nil, err
	}
	return t.Parse(text)
}

// view is what the report's template reads.
type view struct {
	page
	Sum      *metrics.Summary
	ReportJS template.JS
	Protocol []namedMetric
}

type namedMetric struct {
	Name string
	metrics.MetricFigures
}

// protocolMetrics returns the run's protocol metrics (sse_, amqp_ and
// the rest), sorted by name.
func protocolMetrics(m map[string]metrics.MetricFigures) []namedMetric {
	var out []namedMetric
	for _, name := range slices.Sorted(maps.Keys(m)) {
		out = append(out, namedMetric{name, m[name]})
	}
	return out
}

var funcs = template.FuncMap{
	"ms":    func(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) },
	"rate":  func(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) },
	"pct":   func(v float64) string { return strconv.FormatFloat(100*v, 'f', 2, 64) },
	"num":   func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) },
	"names": func(m any) []string { return sortedKeys(m) },
	"kib": func(bytes int64, seconds float64) string {
		if seconds <= 0 {
			return "0.0"
		}
		return strconv.FormatFloat(float64(bytes)/1024/seconds, 'f', 1, 64)
	},
	"timed": func(m metrics.MetricFigures) bool { return m.Max > 0 && !math.IsNaN(m.Max) },
	"inc":   func(i int) int { return i + 1 },
	// The template escapes HTML, not the control characters a server's
	// words may carry; the page's embedded JSON escapes them itself.
	"printable": metrics.Printable,
	"stepNote":  stepNote,
	"figures":   func() []compare.Figure { return compare.Figures },
	"point":     compare.Point,
	"verdict":   compare.VerdictOf,
}

// stepNote marks a capacity search's step in its table: the saturation
// point, and the step that stopped the search past it.
func stepNote(c *metrics.CapacitySummary, i int) string {
	last := i == len(c.Steps)-1
	switch {
	case i+1 == c.Saturation.Step && last:
		return "saturation point; the search stopped: " + c.Saturation.Reason
	case i+1 == c.Saturation.Step:
		return "saturation point"
	case last:
		return "the search stopped: " + c.Saturation.Reason
	}
	return ""
}

// sortedKeys returns the keys of the maps the template walks, sorted.
func sortedKeys(m any) []string {
	switch m := m.(type) {
	case map[string]*metrics.ScenarioSummary:
		return slices.Sorted(maps.Keys(m))
	case map[string]*metrics.RequestFigures:
		return slices.Sorted(maps.Keys(m))
	case map[string]int64:
		return slices.Sorted(maps.Keys(m))
	case map[string]string:
		return slices.Sorted(maps.Keys(m))
	case map[string]*metrics.FlowFigures:
		return slices.Sorted(maps.Keys(m))
	}
	return nil
}
