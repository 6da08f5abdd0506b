package accesslog

import (
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/zclconf/go-cty/cty"
)

// DefaultBaseURL is base_url's default: a log names no origin.
const DefaultBaseURL = "http://127.0.0.1:8080"

// maxChoices bounds the values a random_choice lists; --feeder keeps all.
const maxChoices = 20

// HCL writes the inferred test, with comments that say where each value
// came from. It is the same bytes for the same log and options.
func (r *Result) HCL() []byte {
	f := hclwrite.NewEmptyFile()
	body := f.Body()

	var files []string
	for _, p := range r.Options.Files {
		files = append(files, filepath.Base(p))
	}
	format := string(r.Options.Format)
	if format == "" {
		format = "detected"
	}
	comment(body,
		fmt.Sprintf("Imported by `hload import access-log` from %s (%s format): %s logged",
			strings.Join(files, ", "), format, requests(r.Total)),
		fmt.Sprintf("from %s to %s (%s).", r.Start.UTC().Format(time.RFC3339), r.End.UTC().Format(time.RFC3339), r.Rate.Span),
		"Each request below is a template of the log's requests: ids in paths and",
		"queries became random draws from the values seen. Its weight is its count in",
		"the log (docs/import.md). This is a test like any other: edit it.")
	if len(r.Notes) > 0 {
		comment(body, "")
		comment(body, "Notes:")
		for _, n := range r.Notes {
			comment(body, "- "+n)
		}
	}
	body.AppendNewline()

	v := body.AppendNewBlock("variable", []string{"base_url"})
	v.Body().SetAttributeValue("description", cty.StringVal("The site to load: a log names no origin, so set it with --var base_url=URL."))
	v.Body().SetAttributeValue("default", cty.StringVal(DefaultBaseURL))
	body.AppendNewline()

	t := body.AppendNewBlock("target", []string{"site"})
	t.Body().SetAttributeRaw("base_url", raw("var.base_url"))
	body.AppendNewline()

	for _, tpl := range r.Templates {
		file, ok := r.FeederOf[tpl.Name]
		if !ok {
			continue
		}
		comment(body, fmt.Sprintf("The values %s %s had in the log, each combination once.", tpl.Method, tpl.Display))
		d := body.AppendNewBlock("data", []string{"csv", tpl.Name})
		d.Body().SetAttributeValue("path", cty.StringVal(file))
		d.Body().SetAttributeValue("mode", cty.StringVal("random"))
		body.AppendNewline()
	}

	sc := body.AppendNewBlock("scenario", []string{"logged"})
	r.writeRate(sc.Body())
	for i, tpl := range r.Templates {
		sc.Body().AppendNewline()
		r.writeRequest(sc.Body(), tpl, r.Weights()[i])
	}
	return hclwrite.Format(f.Bytes())
}

func (r *Result) writeRate(b *hclwrite.Body) {
	rt := r.Rate
	scale := ""
	if s := r.Options.Scale; s != 0 && s != 1 {
		scale = fmt.Sprintf(", times %s (--scale)", decimal(s))
	}
	if r.Options.Peak {
		window := "minute"
		if rt.PeakWindow < time.Minute {
			window = "minute (all " + rt.PeakWindow.String() + " of it)"
		}
		comment(b,
			fmt.Sprintf("The log's busiest %s, from %s:", window, rt.PeakAt.UTC().Format(time.RFC3339)),
			fmt.Sprintf("%s requests/s%s, held for the log's length (--peak).", decimal(round2(rt.Peak/r.scale())), scale))
		b.SetAttributeValue("executor", cty.StringVal("constant-arrival-rate"))
		b.SetAttributeRaw("rate", raw(decimal(rt.Peak)))
		b.SetAttributeValue("duration", cty.StringVal(rt.Span.String()))
		return
	}
	comment(b,
		fmt.Sprintf("The log's requests per second%s, %s at a time: each stage ramps", scale, rt.Window),
		"to the rate its window of the log had.")
	b.SetAttributeValue("executor", cty.StringVal("ramping-arrival-rate"))
	b.SetAttributeRaw("start_rate", raw(decimal(rt.StartRate)))
	var s strings.Builder
	s.WriteString("[\n")
	at := r.Start.Truncate(time.Second)
	for _, st := range rt.Stages {
		fmt.Fprintf(&s, "{ duration = %q, target = %s }, # %s from %s\n",
			st.Duration.String(), decimal(st.Target), requests(st.Count), at.UTC().Format(time.TimeOnly))
		at = at.Add(st.Duration)
	}
	s.WriteString("]")
	b.SetAttributeRaw("stages", raw(s.String()))
}

func (r *Result) scale() float64 {
	if r.Options.Scale == 0 {
		return 1
	}
	return r.Options.Scale
}

// writeRequest writes a template's request block, after comments that
// say how much of the log it stands for.
func (r *Result) writeRequest(b *hclwrite.Body, t *Template, weight int) {
	r.writeShare(b, t)
	rq := b.AppendNewBlock("request", []string{t.Name})
	rb := rq.Body()
	if weight != t.Count {
		comment(rb, fmt.Sprintf("Its share of %d (%d requests of %d).", maxWeightSum, t.Count, r.Total))
	}
	rb.SetAttributeValue("weight", cty.NumberIntVal(int64(weight)))
	rb.SetAttributeValue("method", cty.StringVal(t.Method))
	feeder := ""
	if _, ok := r.FeederOf[t.Name]; ok {
		feeder = t.Name
	}
	writePath(rb, t, feeder)
	writeQuery(rb, t, feeder)
	if t.Method != "GET" && t.Method != "HEAD" && t.Method != "DELETE" && t.Method != "OPTIONS" {
		comment(rb, "A log holds no request bodies: add the one the server expects",
			"(json = {...}, form or body), or its check fails.")
	}
	writeCheck(rb, t)
}

// writeShare comments a template's share of the log and its median, and
// the templates below --min-share folded into it.
func (r *Result) writeShare(b *hclwrite.Body, t *Template) {
	share := float64(t.Count) / float64(r.Total)
	head := fmt.Sprintf("%s %s: %s, %s of the log", t.Method, t.Display, requests(t.Count), Percent(share))
	if p50, ok := t.P50(); ok {
		head += ", p50 " + p50.Round(10*time.Microsecond).String()
	}
	comment(b, head+".")
	for i, f := range t.Folded {
		if i == maxNotes {
			comment(b, fmt.Sprintf("It counts %d more templates below --min-share too.", len(t.Folded)-maxNotes))
			break
		}
		comment(b, fmt.Sprintf("It counts %s of %s %s too, below --min-share.", requests(f.Count), f.Method, f.Display))
	}
}

// writePath writes the path attribute: literal segments as they are,
// each slot as the expression that draws it, after a comment on each slot.
func writePath(rb *hclwrite.Body, t *Template, feeder string) {
	for _, p := range t.path {
		if p.slot >= 0 {
			comment(rb, slotComment(t.Slots[p.slot], feeder))
		}
	}
	var path strings.Builder
	path.WriteString(`"`)
	for _, p := range t.path {
		path.WriteString("/")
		if p.slot < 0 {
			path.WriteString(templateLiteral(p.literal))
			continue
		}
		path.WriteString("${" + slotExpr(t.Slots[p.slot], feeder) + "}")
	}
	if len(t.path) == 0 {
		path.WriteString("/")
	}
	path.WriteString(`"`)
	rb.SetAttributeRaw("path", raw(path.String()))
}

// writeQuery writes the query attribute, if the template has one: a
// literal value as it is, a slot as its expression with a comment.
func writeQuery(rb *hclwrite.Body, t *Template, feeder string) {
	if len(t.query) == 0 {
		return
	}
	var q strings.Builder
	q.WriteString("{\n")
	for _, qp := range t.query {
		key := qp.name
		if !hclsyntax.ValidIdentifier(key) {
			key = strconv.Quote(key)
		}
		if qp.part.slot < 0 {
			fmt.Fprintf(&q, "%s = \"%s\"\n", key, templateLiteral(qp.part.literal))
			continue
		}
		s := t.Slots[qp.part.slot]
		fmt.Fprintf(&q, "%s = \"${%s}\" # %s\n", key, slotExpr(s, feeder), slotComment(s, feeder))
	}
	q.WriteString("}")
	rb.SetAttributeRaw("query", raw(q.String()))
}

// writeCheck writes the check block: the statuses the log had for the
// template, with how often each came in a comment.
func writeCheck(rb *hclwrite.Body, t *Template) {
	statuses := make([]int, 0, len(t.Statuses))
	for s := range t.Statuses {
		statuses = append(statuses, s)
	}
	sort.Ints(statuses)
	var seen, list []string
	for _, s := range statuses {
		seen = append(seen, fmt.Sprintf("%d x%d", s, t.Statuses[s]))
		list = append(list, strconv.Itoa(s))
	}
	ck := rb.AppendNewBlock("check", nil)
	comment(ck.Body(), "The statuses the log had: "+strings.Join(seen, ", ")+".")
	ck.Body().SetAttributeRaw("status", raw("["+strings.Join(list, ", ")+"]"))
}

// slotExpr is the expression that draws a slot's value on each call.
func slotExpr(s *Slot, feeder string) string {
	if feeder != "" {
		return "data." + feeder + "." + s.Column
	}
	if len(s.Values) == 1 && s.Kind != Number {
		for v := range s.Values {
			return hclString(v)
		}
	}
	switch s.Kind {
	case Number:
		lo, hi := s.Range()
		if lo == hi {
			return strconv.FormatInt(lo, 10)
		}
		return fmt.Sprintf("random_int(%d, %d)", lo, hi)
	case UUID:
		return "uuid()"
	}
	vals := s.common()
	q := make([]string, len(vals))
	for i, v := range vals {
		q[i] = hclString(v)
	}
	return "random_choice([" + strings.Join(q, ", ") + "])"
}

// slotComment says what the log had in a slot, and what the test draws.
func slotComment(s *Slot, feeder string) string {
	name := s.Column
	if s.Query == "" {
		name = s.Kind.String()
	}
	seen := fmt.Sprintf("%s: %d distinct values", name, len(s.Values))
	if feeder != "" {
		return seen + " seen, from the feeder."
	}
	if len(s.Values) == 1 {
		return name + ": one value seen; that one."
	}
	switch s.Kind {
	case Number:
		lo, hi := s.Range()
		return fmt.Sprintf("%s from %d to %d; any in that range.", seen, lo, hi)
	case UUID:
		return seen + "; new random UUIDs, which the server may not know (--feeder replays the seen ones)."
	}
	if len(s.Values) > maxChoices {
		return fmt.Sprintf("%s; the %d most frequent (--feeder keeps all).", seen, maxChoices)
	}
	return seen + "; one of them."
}

// common is a slot's most frequent values, at most maxChoices, the most
// frequent first and ties by value.
func (s *Slot) common() []string {
	vals := make([]string, 0, len(s.Values))
	for v := range s.Values {
		vals = append(vals, v)
	}
	sort.Slice(vals, func(i, j int) bool {
		if s.Values[vals[i]] != s.Values[vals[j]] {
			return s.Values[vals[i]] > s.Values[vals[j]]
		}
		return vals[i] < vals[j]
	})
	return vals[:min(len(vals), maxChoices)]
}

// templateLiteral escapes text for the inside of an HCL quoted template.
func templateLiteral(s string) string {
	q := hclString(s)
	return q[1 : len(q)-1]
}

// hclString is s as an HCL quoted string, interpolation markers escaped.
func hclString(s string) string {
	toks := hclwrite.TokensForValue(cty.StringVal(s))
	return string(toks.Bytes())
}

// requests writes "1 request", "2 requests".
func requests(n int) string {
	if n == 1 {
		return "1 request"
	}
	return strconv.Itoa(n) + " requests"
}

// decimal writes a rate without trailing zeros: 12.5, 190.
func decimal(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// comment appends "# line" for each line.
func comment(b *hclwrite.Body, lines ...string) {
	for _, l := range lines {
		text := "#"
		if l != "" {
			text += " " + l
		}
		b.AppendUnstructuredTokens(hclwrite.Tokens{{Type: hclsyntax.TokenComment, Bytes: []byte(text + "\n")}})
	}
}

// raw is the tokens of an expression written as HCL source, comments and
// all, which hclwrite has no builder for (a template with calls in it).
func raw(src string) hclwrite.Tokens {
	f, diags := hclwrite.ParseConfig([]byte("x = "+src+"\n"), "expr", hcl.InitialPos)
	if diags.HasErrors() {
		panic(fmt.Sprintf("accesslog: an expression it wrote does not parse: %s\n%s", diags, src))
	}
	return f.Body().GetAttribute("x").Expr().BuildTokens(nil)
}

// WriteTable prints the mix as a table: each template's count, share,
// weight, p50 (where the log has response times) and statuses, then the
// notes.
func (r *Result) WriteTable(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "request\ttemplate\tcount\tshare\tweight\tp50\tstatuses\t")
	weights := r.Weights()
	for i, t := range r.Templates {
		p50 := "-"
		if d, ok := t.P50(); ok {
			p50 = d.Round(10 * time.Microsecond).String()
		}
		statuses := make([]int, 0, len(t.Statuses))
		for s := range t.Statuses {
			statuses = append(statuses, s)
		}
		sort.Ints(statuses)
		var st []string
		for _, s := range statuses {
			st = append(st, fmt.Sprintf("%d", s))
		}
		fmt.Fprintf(tw, "%s\t%s %s\t%d\t%s\t%d\t%s\t%s\t\n", t.Name, t.Method, t.Display, t.Count,
			Percent(float64(t.Count)/float64(r.Total)), weights[i], p50, strings.Join(st, " "))
	}
	tw.Flush()
	for _, n := range r.Notes {
		fmt.Fprintln(w, "note: "+n)
	}
}
