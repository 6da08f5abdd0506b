package accesslog

import (
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// Kind is what a varying part of a request is: a path segment or a query
// value that names a resource rather than a page.
type Kind int

// The kinds of slot.
const (
	// Literal is a part that is the same on every request of a template.
	Literal Kind = iota
	// Number is a whole number: /products/1234.
	Number
	// UUID is a UUID: /orders/0b6f2c1e-8a55-4d5e-9d5b-6a4f0c1e2d3f.
	UUID
	// Hex is a run of at least 8 hexadecimal digits with a digit and a
	// letter in it: an object id, a hash.
	Hex
	// Text is a query value that varies but names no id: ?q=shoes.
	Text
)

// String is the kind's placeholder in a template's display: /products/{id}.
func (k Kind) String() string {
	switch k {
	case Number:
		return "{id}"
	case UUID:
		return "{uuid}"
	case Hex:
		return "{hex}"
	case Text:
		return "{text}"
	}
	return ""
}

var (
	uuidRe = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)
	hexRe  = regexp.MustCompile(`^[0-9a-fA-F]{8,}$`)
)

// classify says whether a path segment or query value is an id, and which.
func classify(s string) Kind {
	switch {
	case isNumber(s):
		return Number
	case uuidRe.MatchString(s):
		return UUID
	case hexRe.MatchString(s) && strings.ContainsAny(s, "0123456789") && strings.ContainsAny(strings.ToLower(s), "abcdef"):
		return Hex
	}
	return Literal
}

// isNumber: a whole number that random_int can draw (18 digits at most).
func isNumber(s string) bool {
	if s == "" || len(s) > 18 {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// Slot is one varying part of a template, with what the log held there.
type Slot struct {
	Kind Kind
	// Query is the query parameter's name, or "" for a path segment.
	Query string
	// Column is its column in a feeder, and its name in comments.
	Column string
	// Values counts each value seen.
	Values map[string]int
}

// part is one path segment or query parameter of a template: a literal or
// a slot.
type part struct {
	literal string
	slot    int // index in Template.Slots, or -1
}

// shape is a request's template key: its method, its path with ids as
// placeholders, and its query's parameter names.
func shape(e Entry) (key string, segs []string, kinds []Kind, query url.Values) {
	segs = strings.Split(strings.TrimPrefix(e.Path, "/"), "/")
	if e.Path == "/" || e.Path == "" {
		segs = nil
	}
	kinds = make([]Kind, len(segs))
	var b strings.Builder
	b.WriteString(e.Method)
	b.WriteString(" /")
	for i, s := range segs {
		if i > 0 {
			b.WriteByte('/')
		}
		kinds[i] = classify(s)
		if kinds[i] == Literal {
			b.WriteString(s)
		} else {
			b.WriteString(kinds[i].String())
		}
	}
	query, err := url.ParseQuery(e.Query)
	if err != nil {
		query = url.Values{}
	}
	if len(query) > 0 {
		keys := make([]string, 0, len(query))
		for k := range query {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b.WriteString("?")
		for i, k := range keys {
			if i > 0 {
				b.WriteString("&")
			}
			b.WriteString(k)
		}
	}
	return b.String(), segs, kinds, query
}

// Template is a group of logged requests that one request of the test
// stands for: same method, same path once ids are placeholders, same
// query parameter names.
type Template struct {
	// Name is the request's name in the test.
	Name   string
	Method string
	// Display is the template as the table shows it: /products/{id}?page.
	Display string
	// Count is how many logged requests it stands for, with those folded
	// into it.
	Count int
	// Folded are the templates below --min-share counted in this one.
	Folded []*Template
	// Statuses counts each status seen.
	Statuses map[int]int
	// Durations are the response times logged, when the format has them.
	Durations []float64 // seconds
	// Slots are its varying parts, in path order then query order.
	Slots []*Slot
	// Rows are the distinct combinations of slot values seen, for a
	// feeder, in the order first seen.
	Rows [][]string

	path   []part
	query  []queryPart
	rowSet map[string]bool
	first  int // the index of its first entry, to keep the log's order on ties
}

type queryPart struct {
	name string
	part part
}

// add counts e, whose key is t's, into t.
func (t *Template) add(e Entry, segs []string, kinds []Kind, query url.Values) {
	t.Count++
	t.Statuses[e.Status]++
	if e.HasDuration {
		t.Durations = append(t.Durations, e.Duration.Seconds())
	}
	var row []string
	for i, p := range t.path {
		if p.slot < 0 {
			continue
		}
		t.Slots[p.slot].note(segs[i])
		row = append(row, segs[i])
	}
	for _, q := range t.query {
		v := query.Get(q.name)
		if q.part.slot < 0 {
			continue
		}
		t.Slots[q.part.slot].note(v)
		row = append(row, v)
	}
	if len(row) > 0 {
		k := strings.Join(row, "\x00")
		if !t.rowSet[k] {
			t.rowSet[k] = true
			t.Rows = append(t.Rows, row)
		}
	}
}

func (s *Slot) note(v string) { s.Values[v]++ }

// Range is the smallest and largest value of a Number slot.
func (s *Slot) Range() (lo, hi int64) {
	first := true
	for v := range s.Values {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			continue
		}
		if first || n < lo {
			lo = n
		}
		if first || n > hi {
			hi = n
		}
		first = false
	}
	return lo, hi
}

// newTemplate makes the template of e's key, its slots from e's shape.
func newTemplate(e Entry, key string, segs []string, kinds []Kind, query url.Values, first int) *Template {
	t := &Template{Method: e.Method, Display: strings.TrimPrefix(key, e.Method+" "), Statuses: map[int]int{}, rowSet: map[string]bool{}, first: first}
	prev := ""
	for i, s := range segs {
		if kinds[i] == Literal {
			t.path = append(t.path, part{literal: s, slot: -1})
			prev = s
			continue
		}
		col := "id"
		if prev != "" {
			col = prev + "_id"
		}
		t.path = append(t.path, part{slot: len(t.Slots)})
		t.Slots = append(t.Slots, &Slot{Kind: kinds[i], Column: col, Values: map[string]int{}})
	}
	keys := make([]string, 0, len(query))
	for k := range query {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		// Every query value is a slot at first; those that never vary
		// become literals once the log is read (settle).
		t.query = append(t.query, queryPart{name: k, part: part{slot: len(t.Slots)}})
		t.Slots = append(t.Slots, &Slot{Kind: Number, Query: k, Column: k, Values: map[string]int{}})
	}
	return t
}

// settle fixes each query slot's kind from every value it saw: Number when
// all were numbers, then UUID, Hex, else Text; a query value that never
// varied becomes a literal.
func (t *Template) settle() {
	for i := range t.query {
		q := &t.query[i]
		s := t.Slots[q.part.slot]
		if len(s.Values) == 1 {
			for v := range s.Values {
				q.part.literal = v
			}
			q.part.slot = -1
			continue
		}
		kind := Literal
		for v := range s.Values {
			k := classify(v)
			if kind == Literal {
				kind = k
			}
			if k != kind || k == Literal {
				kind = Text
				break
			}
		}
		s.Kind = kind
	}
	// Renumber the slots that are left, and the feeder's rows with them.
	var keep []int
	for i, p := range t.path {
		if p.slot >= 0 {
			keep = append(keep, p.slot)
			t.path[i].slot = len(keep) - 1
		}
	}
	for i := range t.query {
		if s := t.query[i].part.slot; s >= 0 {
			keep = append(keep, s)
			t.query[i].part.slot = len(keep) - 1
		}
	}
	if len(keep) == len(t.Slots) {
		return
	}
	slots := make([]*Slot, len(keep))
	for i, k := range keep {
		slots[i] = t.Slots[k]
	}
	seen := map[string]bool{}
	var rows [][]string
	for _, r := range t.Rows {
		nr := make([]string, len(keep))
		for i, k := range keep {
			nr[i] = r[k]
		}
		if k := strings.Join(nr, "\x00"); !seen[k] {
			seen[k] = true
			rows = append(rows, nr)
		}
	}
	t.Slots, t.Rows = slots, rows
}
