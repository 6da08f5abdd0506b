package html

import (
	_ "embed"
	"encoding/json"
	"html/template"
	"io"
	"maps"
	"slices"

	"github.com/hload/hload/compare"
	"github.com/hload/hload/metrics"
)

var (
	//go:embed compare.html.tmpl
	compareTemplate string
	//go:embed compare.js
	compareJS string
)

// RenderComparison writes the page of `hload compare --html`: the
// comparison's tables as the text shows them, the --fail-if rules with
// their breaches (as Check returned them), and both runs' series
// overlaid, base dashed and new solid. Like the report, it is one file
// that opens offline.
func RenderComparison(w io.Writer, c *compare.Comparison, rules []compare.Rule, breaches []compare.Breach) error {
	data, err := json.Marshal(compareData{Base: sideOf(c.Base), New: sideOf(c.New)})
	if err != nil {
		return err
	}
	t, err := parsePage("compare", compareTemplate)
	if err != nil {
		return err
	}
	v := compareView{page: newPage(data), C: c, CompareJS: template.JS(compareJS),
		Capacity: map[string]*compare.Capacity{}}
	for _, rule := range rules {
		r := compareRule{Text: rule.Text}
		for _, b := range breaches {
			if b.Rule.Text == rule.Text {
				r.Breaches = append(r.Breaches, b.String())
			}
		}
		v.Rules = append(v.Rules, r)
	}
	for _, cp := range c.Capacities() {
		v.Capacity[cp.Scenario] = &cp
	}
	names := map[string]bool{}
	for _, sum := range []*metrics.Summary{c.Base.Summary, c.New.Summary} {
		for name := range sum.Scenarios {
			names[name] = true
		}
	}
	for _, name := range slices.Sorted(maps.Keys(names)) {
		sc := compareScenario{Name: name}
		for _, r := range c.Requests {
			if r.Scenario == name {
				sc.Requests = append(sc.Requests, r)
			}
		}
		v.Scenarios = append(v.Scenarios, sc)
	}
	return t.Execute(w, v)
}

// compareData is what the page's script reads: each run's series, and
// the capacity searches that the two runs both ran.
type compareData struct {
	Base side `json:"base"`
	New  side `json:"new"`
}

type side struct {
	Series   *metrics.IntervalSeries             `json:"series"`
	Capacity map[string]*metrics.CapacitySummary `json:"capacity"`
}

func sideOf(r compare.Run) side {
	s := side{Series: r.Summary.Series, Capacity: map[string]*metrics.CapacitySummary{}}
	for name, sc := range r.Summary.Scenarios {
		if sc != nil && sc.Capacity != nil {
			s.Capacity[name] = sc.Capacity
		}
	}
	return s
}

// compareView is what the comparison's template reads.
type compareView struct {
	page
	C         *compare.Comparison
	CompareJS template.JS
	Scenarios []compareScenario
	Rules     []compareRule
	// Capacity are the capacity searches both runs ran, by scenario.
	Capacity map[string]*compare.Capacity
}

// compareRule is a --fail-if rule and what it broke on; it held when
// Breaches is empty.
type compareRule struct {
	Text     string
	Breaches []string
}

type compareScenario struct {
	Name     string
	Requests []compare.Request
}
