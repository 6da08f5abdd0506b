package accesslog

import (
	"fmt"
	"math"
	"regexp"
	"sort"
	"strings"
	"time"
)

// Options are the choices `hload import access-log` passes on from its
// flags.
type Options struct {
	// Files are the logs' names, for the test's opening comment.
	Files []string
	// Format is the format the files were read in, for the same comment.
	Format Format
	// MinShare is the share of the requests (0.01 is 1 %) below which a
	// template is folded into its nearest or dropped.
	MinShare float64
	// Scale multiplies the log's rates; 0 means 1.
	Scale float64
	// Peak gives a constant-arrival-rate at the busiest minute's rate
	// instead of the log's rate over time.
	Peak bool
	// FeederPrefix, when set, makes the ids a template saw a CSV feeder,
	// FeederPrefix + "-" + the request's name + ".csv", beside the test.
	FeederPrefix string
	// Skipped is how many lines had no HTTP request line, for a note.
	Skipped int
}

// Result is the test inferred from a log.
type Result struct {
	Options Options
	// Total is the number of logged requests read.
	Total int
	// Start and End are the first and last request's times.
	Start, End time.Time
	// Templates are the requests of the test, busiest first.
	Templates []*Template
	// Dropped are the templates below MinShare with nowhere to fold.
	Dropped []*Template
	// Notes say what the inference did that a reader should know.
	Notes []string
	// Rate is the load over time.
	Rate Rate
	// Feeders are the CSV files to write beside the test, by file name.
	Feeders map[string][]byte
	// FeederOf is each template's feeder, by request name.
	FeederOf map[string]string
}

// Rate is the test's arrival rate, from the log's requests per second.
type Rate struct {
	// Window is the length of each stage: the log's time cut in at most
	// maxStages windows.
	Window time.Duration
	// StartRate and Stages are the ramping-arrival-rate, each stage
	// ramping to the rate the log had in its window (requests per
	// second, scaled).
	StartRate float64
	Stages    []Stage
	// Peak is the busiest minute's rate, scaled; PeakAt its first second
	// and PeakWindow its length (the log's span when under a minute).
	Peak       float64
	PeakAt     time.Time
	PeakWindow time.Duration
	// Span is the log's length in time, whole seconds.
	Span time.Duration
}

// Stage is one window of the log.
type Stage struct {
	Duration time.Duration
	Target   float64 // requests per second, scaled
	Count    int     // requests logged in the window
}

// maxNotes bounds the notes on rare templates, one a template.
const maxNotes = 10

// maxStages bounds the stages written: a day of log makes 24 stages of
// an hour, not 86400 of a second.
const maxStages = 12

// windows are the lengths a stage may have, the shortest that keeps the
// stages at most maxStages.
var windows = []time.Duration{
	time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 15 * time.Second, 30 * time.Second,
	time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 15 * time.Minute, 30 * time.Minute,
	time.Hour, 2 * time.Hour, 3 * time.Hour, 6 * time.Hour, 12 * time.Hour, 24 * time.Hour,
}

// maxWeightSum is the sum of the weights written: the counts themselves
// up to it, else the counts scaled to it, which keeps each share within
// 0.01 points and the weights' cycle within hload's bound (1,048,576).
const maxWeightSum = 10000

// Infer groups entries into templates and derives the test's mix and
// rate. entries must not be empty (Parse never returns none).
func Infer(entries []Entry, opts Options) (*Result, error) {
	if len(entries) == 0 {
		return nil, fmt.Errorf("no logged request")
	}
	if opts.Scale == 0 {
		opts.Scale = 1
	}
	// Several files (a rotated log) are read as one, in time order; the
	// sort is stable so that one file's order holds on ties.
	sorted := make([]Entry, len(entries))
	copy(sorted, entries)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Time.Before(sorted[j].Time) })
	r := &Result{Options: opts, Total: len(sorted), Start: sorted[0].Time, End: sorted[len(sorted)-1].Time}

	byKey := map[string]*Template{}
	var all []*Template
	for i, e := range sorted {
		key, segs, kinds, query := shape(e)
		t := byKey[key]
		if t == nil {
			t = newTemplate(e, key, segs, kinds, query, i)
			byKey[key] = t
			all = append(all, t)
		}
		t.add(e, segs, kinds, query)
	}
	for _, t := range all {
		t.settle()
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].Count > all[j].Count })
	r.fold(all)
	r.name()
	r.Rate = rate(sorted, opts.Scale)
	if opts.Skipped > 0 {
		r.Notes = append(r.Notes, fmt.Sprintf("lines without an HTTP request line (a probe or garbage nginx logged): %d, left out.", opts.Skipped))
	}
	if opts.FeederPrefix != "" {
		r.feeders()
	}
	return r, nil
}

// fold keeps the templates of at least MinShare of the requests. One
// below it is counted in its nearest kept template (same method, same
// number of path segments, one segment apart), or else dropped; either
// way a note says so.
func (r *Result) fold(all []*Template) {
	var notes []string
	rare := 0
	for _, t := range all {
		share := float64(t.Count) / float64(r.Total)
		if share >= r.Options.MinShare || len(r.Templates) == 0 {
			r.Templates = append(r.Templates, t)
			continue
		}
		rare += t.Count
		if near := nearest(t, r.Templates); near != nil {
			near.Count += t.Count
			near.Folded = append(near.Folded, t)
			notes = append(notes, fmt.Sprintf("%s %s (%s, %s) is below --min-share %s: counted in %s %s.",
				t.Method, t.Display, requests(t.Count), Percent(share), Percent(r.Options.MinShare), near.Method, near.Display))
			continue
		}
		r.Dropped = append(r.Dropped, t)
		notes = append(notes, fmt.Sprintf("%s %s (%s, %s) is below --min-share %s and like no other template: left out.",
			t.Method, t.Display, requests(t.Count), Percent(share), Percent(r.Options.MinShare)))
	}
	// A log of many rare paths would make a note of each: the busiest
	// maxNotes show what happened, and one more counts the rest.
	if len(notes) > maxNotes {
		notes = append(notes[:maxNotes], fmt.Sprintf("%d more templates are below --min-share %s (%s below it in all): each counted in its nearest or left out as above.",
			len(notes)-maxNotes, Percent(r.Options.MinShare), requests(rare)))
	}
	r.Notes = append(r.Notes, notes...)
}

// nearest is the kept template t is most like: the same method and
// number of path segments, and only one segment different; the busiest
// of those.
func nearest(t *Template, kept []*Template) *Template {
	for _, k := range kept { // busiest first
		if k.Method != t.Method || len(k.path) != len(t.path) || len(t.path) == 0 {
			continue
		}
		diff := 0
		for i := range t.path {
			a, b := t.path[i], k.path[i]
			same := a.slot < 0 && b.slot < 0 && a.literal == b.literal ||
				a.slot >= 0 && b.slot >= 0 && t.Slots[a.slot].Kind == k.Slots[b.slot].Kind
			if !same {
				diff++
			}
		}
		if diff <= 1 {
			return k
		}
	}
	return nil
}

var nameChars = regexp.MustCompile(`[^A-Za-z0-9]+`)

// name gives each kept template a request name from its method and path:
// GET /products/{id} is products_id, POST /orders is post_orders, GET / is
// root; names that clash get _2, _3.
func (r *Result) name() {
	used := map[string]bool{}
	for _, t := range r.Templates {
		var parts []string
		if t.Method != "GET" {
			parts = append(parts, strings.ToLower(t.Method))
		}
		for _, p := range t.path {
			if p.slot >= 0 {
				parts = append(parts, "id")
				continue
			}
			if s := strings.Trim(nameChars.ReplaceAllString(strings.ToLower(p.literal), "_"), "_"); s != "" {
				parts = append(parts, s)
			}
		}
		if len(t.path) == 0 {
			parts = append(parts, "root")
		}
		name := strings.Join(parts, "_")
		if len(name) > 48 {
			name = strings.TrimRight(name[:48], "_")
		}
		if name == "" || name[0] < 'a' || name[0] > 'z' {
			name = "r_" + name
		}
		base := name
		for i := 2; used[name]; i++ {
			name = fmt.Sprintf("%s_%d", base, i)
		}
		used[name] = true
		t.Name = name
	}
}

// Weights are the kept templates' weights, in order: their counts when
// those sum to at most maxWeightSum, else the counts scaled to that sum
// by largest remainders, each at least 1.
func (r *Result) Weights() []int {
	total := 0
	for _, t := range r.Templates {
		total += t.Count
	}
	w := make([]int, len(r.Templates))
	if total <= maxWeightSum {
		for i, t := range r.Templates {
			w[i] = t.Count
		}
		return w
	}
	type rem struct {
		i int
		f float64
	}
	rems := make([]rem, len(r.Templates))
	sum := 0
	for i, t := range r.Templates {
		exact := float64(t.Count) * maxWeightSum / float64(total)
		w[i] = int(exact)
		rems[i] = rem{i, exact - float64(w[i])}
		sum += w[i]
	}
	sort.SliceStable(rems, func(a, b int) bool { return rems[a].f > rems[b].f })
	for k := 0; sum < maxWeightSum && k < len(rems); k++ {
		w[rems[k].i]++
		sum++
	}
	for i := range w {
		if w[i] < 1 {
			w[i] = 1
		}
	}
	return w
}

// rate counts the requests per second of the log, and from them the
// stages and the busiest minute.
func rate(sorted []Entry, scale float64) Rate {
	start := sorted[0].Time.Truncate(time.Second)
	span := int(sorted[len(sorted)-1].Time.Sub(start)/time.Second) + 1
	perSecond := make([]int, span)
	for _, e := range sorted {
		perSecond[int(e.Time.Sub(start)/time.Second)]++
	}
	var rt Rate
	rt.Span = time.Duration(span) * time.Second
	rt.Window = windows[len(windows)-1]
	for _, w := range windows {
		if (rt.Span+w-1)/w <= maxStages {
			rt.Window = w
			break
		}
	}
	win := int(rt.Window / time.Second)
	for s := 0; s < span; s += win {
		n := 0
		end := min(s+win, span)
		for _, c := range perSecond[s:end] {
			n += c
		}
		rt.Stages = append(rt.Stages, Stage{
			Duration: time.Duration(end-s) * time.Second,
			Target:   round2(float64(n) / float64(end-s) * scale),
			Count:    n,
		})
	}
	rt.StartRate = rt.Stages[0].Target

	// The busiest minute: the most requests in any 60 s in a row.
	width := min(60, span)
	n := 0
	for _, c := range perSecond[:width] {
		n += c
	}
	best, at := n, 0
	for s := width; s < span; s++ {
		n += perSecond[s] - perSecond[s-width]
		if n > best {
			best, at = n, s-width+1
		}
	}
	rt.Peak = round2(float64(best) / float64(width) * scale)
	rt.PeakAt = start.Add(time.Duration(at) * time.Second)
	rt.PeakWindow = time.Duration(width) * time.Second
	return rt
}

func round2(f float64) float64 { return math.Round(f*100) / 100 }

// Percent writes a share (0.1234) as the table shows it: "12.3 %".
func Percent(share float64) string { return fmt.Sprintf("%.1f %%", share*100) }

// P50 is the median of a template's logged response times, and whether
// the log had any.
func (t *Template) P50() (time.Duration, bool) {
	if len(t.Durations) == 0 {
		return 0, false
	}
	d := append([]float64(nil), t.Durations...)
	sort.Float64s(d)
	m := d[(len(d)-1)/2]
	if len(d)%2 == 0 {
		m = (m + d[len(d)/2]) / 2
	}
	return time.Duration(m * float64(time.Second)), true
}

// feeders makes one CSV per template with slots: a header of the slots'
// columns, then each combination of values seen, once.
func (r *Result) feeders() {
	r.Feeders = map[string][]byte{}
	r.FeederOf = map[string]string{}
	for _, t := range r.Templates {
		if len(t.Slots) == 0 {
			continue
		}
		uniqueColumns(t.Slots)
		var b strings.Builder
		for i, s := range t.Slots {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(csvField(s.Column))
		}
		b.WriteByte('\n')
		for _, row := range t.Rows {
			for i, v := range row {
				if i > 0 {
					b.WriteByte(',')
				}
				b.WriteString(csvField(v))
			}
			b.WriteByte('\n')
		}
		file := r.Options.FeederPrefix + "-" + t.Name + ".csv"
		r.Feeders[file] = []byte(b.String())
		r.FeederOf[t.Name] = file
	}
}

// uniqueColumns makes the slots' columns distinct identifiers, which a
// feeder's header and data.<name>.<column> need.
func uniqueColumns(slots []*Slot) {
	used := map[string]bool{}
	for _, s := range slots {
		c := strings.Trim(nameChars.ReplaceAllString(s.Column, "_"), "_")
		if c == "" || c[0] >= '0' && c[0] <= '9' {
			c = "v_" + c
		}
		base := c
		for i := 2; used[c]; i++ {
			c = fmt.Sprintf("%s_%d", base, i)
		}
		used[c] = true
		s.Column = c
	}
}

func csvField(s string) string {
	if strings.ContainsAny(s, ",\"\n\r") {
		return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
	}
	return s
}
