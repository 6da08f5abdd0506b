package har

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/zclconf/go-cty/cty"
)

// write renders the test as HCL, formatted as `hclwrite.Format` does.
func (im *importer) write() []byte {
	f := hclwrite.NewEmptyFile()
	b := f.Body()
	im.writeHeader(b)
	for _, o := range im.sortedOrigins() {
		v := b.AppendNewBlock("variable", []string{o.varName}).Body()
		v.SetAttributeValue("description", cty.StringVal("The origin recorded; --var "+o.varName+"=URL sends the test elsewhere"))
		v.SetAttributeValue("default", cty.StringVal(o.url))
		b.AppendNewline()
	}
	v := b.AppendNewBlock("variable", []string{"vus"}).Body()
	v.SetAttributeValue("description", cty.StringVal("Virtual users, each a user who walks the recording; the recording is one"))
	v.SetAttributeValue("default", cty.NumberIntVal(1))
	b.AppendNewline()
	v = b.AppendNewBlock("variable", []string{"duration"}).Body()
	v.SetAttributeValue("description", cty.StringVal("How long the test runs; the recording took "+im.duration()))
	v.SetAttributeValue("default", cty.StringVal(im.duration()))
	b.AppendNewline()
	for _, s := range im.secretList {
		v := b.AppendNewBlock("variable", []string{s.name}).Body()
		v.SetAttributeValue("description", cty.StringVal(fmt.Sprintf("Typed into the recording (%s); pass it with --var %s=... or HLOAD_VAR_%s", s.from, s.name, s.name)))
		v.SetAttributeValue("sensitive", cty.True)
		b.AppendNewline()
	}
	common := im.commonHeaders()
	for _, o := range im.sortedOrigins() {
		t := b.AppendNewBlock("target", []string{o.target}).Body()
		t.SetAttributeValue("protocol", cty.StringVal("http"))
		t.SetAttributeTraversal("base_url", traversal("var", o.varName))
		if h := common[o]; len(h) > 0 {
			t.SetAttributeRaw("headers", headerTokens(h))
		}
		if im.redirects(o) {
			comment(t, "Each redirect the browser followed is a request of its own below.")
			t.SetAttributeValue("follow_redirects", cty.False)
		}
		b.AppendNewline()
	}
	sc := b.AppendNewBlock("scenario", []string{"recorded"}).Body()
	sc.SetAttributeValue("executor", cty.StringVal("constant-vus"))
	sc.SetAttributeTraversal("vus", traversal("var", "vus"))
	sc.SetAttributeTraversal("duration", traversal("var", "duration"))
	if len(im.origins) > 1 {
		sc.SetAttributeValue("target", cty.StringVal(im.sortedOrigins()[0].target))
	}
	var setup, flow []*step
	for _, s := range im.steps {
		if s.setup {
			setup = append(setup, s)
		} else {
			flow = append(flow, s)
		}
	}
	flowThink := thinkTime(flow)
	if flowThink != nil {
		comment(sc, "After each walk through the flow, as long as the user paused between two of its requests.")
		sc.SetAttributeRaw("think_time", flowThink)
	}
	if len(setup) > 0 {
		sc.AppendNewline()
		comment(sc, "The login: once per virtual user, before its first walk through the flow.")
		st := sc.AppendNewBlock("setup", nil).Body()
		if t := thinkTime(setup); t != nil {
			st.SetAttributeRaw("think_time", t)
		}
		im.writeSteps(st, setup, common)
	}
	sc.AppendNewline()
	fl := sc.AppendNewBlock("flow", []string{"journey"}).Body()
	if flowThink != nil {
		comment(fl, "Between two requests: the pauses recorded, from the shortest to the longest.")
		fl.SetAttributeRaw("think_time", flowThink)
	}
	im.writeSteps(fl, flow, common)
	return hclwrite.Format(f.Bytes())
}

func (im *importer) writeHeader(b *hclwrite.Body) {
	by := strings.TrimSpace(im.har.Creator.Name + " " + im.har.Creator.Version)
	if b := strings.TrimSpace(im.har.Browser.Name + " " + im.har.Browser.Version); b != "" && b != by {
		by = b + " (" + by + ")"
	}
	if by == "" {
		by = "a browser"
	}
	var setup int
	for _, s := range im.steps {
		if s.setup {
			setup++
		}
	}
	lines := []string{
		fmt.Sprintf("Imported by `hload import har` from %s, recorded by %s.", filepath.Base(im.har.File), by),
		fmt.Sprintf("%d of its %d requests, in the order they were recorded; the HAR entry of each is named above it.", len(im.steps), len(im.har.Entries)),
	}
	if setup > 0 {
		lines = append(lines, "The login is the setup, which each virtual user runs once; the other requests are the flow.")
	}
	lines = append(lines,
		"Values a response gave and a later request sent are captures (vu.vars.NAME); cookies are",
		"left to each virtual user's cookie jar, and the browser's own headers are left out.",
		"",
		"  hload apply FILE --var base_url=https://staging.example.com --var vus=10 --var duration=1m",
	)
	for _, line := range lines {
		comment(b, line)
	}
	b.AppendNewline()
}

// commonHeaders are the headers every step to an origin sends with the
// same value, which its target sends instead.
func (im *importer) commonHeaders() map[*origin][]sentHeader {
	out := map[*origin][]sentHeader{}
	for _, o := range im.origins {
		var first *step
		for _, s := range im.steps {
			if s.origin != o {
				continue
			}
			if first == nil {
				first = s
				for _, h := range s.headers {
					if h.value.literal() {
						out[o] = append(out[o], h)
					}
				}
				continue
			}
			var keep []sentHeader
			for _, h := range out[o] {
				if v, ok := s.header(h.name); ok && v.literal() && v.String() == h.value.String() {
					keep = append(keep, h)
				}
			}
			out[o] = keep
		}
	}
	return out
}

func (s *step) header(name string) (parts, bool) {
	for _, h := range s.headers {
		if strings.EqualFold(h.name, name) {
			return h.value, true
		}
	}
	return nil, false
}

func (im *importer) redirects(o *origin) bool {
	for _, s := range im.steps {
		if s.origin == o && s.e.Response.Status >= 300 && s.e.Response.Status < 400 && s.e.Response.Status != 304 {
			return true
		}
	}
	return false
}

// thinkTime is the think_time between the steps: the recorded pause
// before each but the first, fixed when they are within 10 % of each
// other, else uniform between the shortest and the longest.
func thinkTime(steps []*step) hclwrite.Tokens {
	if len(steps) < 2 {
		return nil
	}
	lo, hi := time.Duration(1<<62), time.Duration(0)
	var sum time.Duration
	for _, s := range steps[1:] {
		lo, hi = min(lo, s.gap), max(hi, s.gap)
		sum += s.gap
	}
	lo, hi = lo.Round(time.Millisecond), hi.Round(time.Millisecond)
	if hi == 0 {
		return nil
	}
	if hi-lo <= hi/10 {
		mean := (sum / time.Duration(len(steps)-1)).Round(time.Millisecond)
		return hclwrite.TokensForValue(cty.StringVal(mean.String()))
	}
	return hclwrite.TokensForFunctionCall("uniform", hclwrite.TokensForValue(cty.StringVal(lo.String())), hclwrite.TokensForValue(cty.StringVal(hi.String())))
}

func (im *importer) writeSteps(b *hclwrite.Body, steps []*step, common map[*origin][]sentHeader) {
	for i, s := range steps {
		if i > 0 {
			b.AppendNewline()
		}
		r := s.e.Response
		about := fmt.Sprintf("HAR entry %d, line %d: %s %s%s, %d in %s", s.entry, s.e.Line, s.method, s.origin.url, s.shownPath(), r.Status,
			(time.Duration(s.e.Time * float64(time.Millisecond))).Round(time.Millisecond))
		if s.entry != im.steps[0].entry {
			about += fmt.Sprintf(", %s after the previous request", s.gap.Round(time.Millisecond))
		}
		comment(b, about)
		rb := b.AppendNewBlock("request", []string{s.name}).Body()
		if len(im.origins) > 1 && s.origin != im.sortedOrigins()[0] {
			rb.SetAttributeValue("target", cty.StringVal(s.origin.target))
		}
		if s.method != "GET" {
			rb.SetAttributeValue("method", cty.StringVal(s.method))
		}
		rb.SetAttributeRaw("path", templateTokens(s.pathParts(), false))
		var headers []sentHeader
		for _, h := range s.headers {
			if !isCommon(common[s.origin], h) {
				headers = append(headers, h)
			}
		}
		if len(headers) > 0 {
			rb.SetAttributeRaw("headers", headerTokens(headers))
		}
		switch {
		case s.json != nil:
			rb.SetAttributeRaw("json", jsonTokens(s.json))
		case s.form != nil:
			var attrs []hclwrite.ObjectAttrTokens
			for _, f := range s.form {
				attrs = append(attrs, hclwrite.ObjectAttrTokens{Name: keyTokens(f.name), Value: templateTokens(f.value, true)})
			}
			rb.SetAttributeRaw("form", objectTokens(attrs))
		case s.body != nil:
			rb.SetAttributeRaw("body", templateTokens(s.body, true))
		}
		if r.Status >= 400 {
			comment(rb, fmt.Sprintf("The recording got %d: a call that gets it again succeeds.", r.Status))
			rb.SetAttributeValue("expected_status", cty.TupleVal([]cty.Value{cty.NumberIntVal(int64(r.Status))}))
		}
		ck := rb.AppendNewBlock("check", nil).Body()
		if r.Status == 304 {
			// A browser revalidates its cache; a VU, which sends no
			// If-None-Match, gets the page.
			ck.SetAttributeValue("status", cty.TupleVal([]cty.Value{cty.NumberIntVal(200), cty.NumberIntVal(304)}))
		} else {
			ck.SetAttributeValue("status", cty.NumberIntVal(int64(r.Status)))
		}
		var used []*capture
		for _, c := range s.captures {
			if len(c.users) > 0 {
				used = append(used, c)
			}
		}
		if len(used) > 0 {
			cb := rb.AppendNewBlock("capture", nil).Body()
			for _, c := range used {
				cb.SetAttributeRaw(c.name, hclwrite.TokensForFunctionCall(c.fn, hclwrite.TokensForValue(cty.StringVal(c.arg))))
			}
		}
	}
}

func isCommon(common []sentHeader, h sentHeader) bool {
	for _, c := range common {
		if strings.EqualFold(c.name, h.name) && h.value.literal() && c.value.String() == h.value.String() {
			return true
		}
	}
	return false
}

// pathParts is the path and its query as one value.
func (s *step) pathParts() parts {
	if s.wholePath != nil {
		return parts{{capture: s.wholePath}}
	}
	var out parts
	for _, seg := range s.path {
		out = append(out, part{lit: "/"})
		out = append(out, seg...)
	}
	for i, q := range s.query {
		sep := "&"
		if i == 0 {
			sep = "?"
		}
		out = append(out, part{lit: sep + q.name + "="})
		out = append(out, q.value...)
	}
	return out
}

// comment appends a line comment to b.
func comment(b *hclwrite.Body, text string) {
	line := "#"
	if text != "" {
		line += " " + text
	}
	b.AppendUnstructuredTokens(hclwrite.Tokens{{Type: hclsyntax.TokenComment, Bytes: []byte(line + "\n")}})
}

func traversal(names ...string) hcl.Traversal {
	t := hcl.Traversal{hcl.TraverseRoot{Name: names[0]}}
	for _, n := range names[1:] {
		t = append(t, hcl.TraverseAttr{Name: n})
	}
	return t
}

// ref is a capture's or a variable's reference.
func (p part) ref() hcl.Traversal {
	if p.capture != nil {
		return traversal("vu", "vars", p.capture.name)
	}
	return traversal("var", p.variable.name)
}

// templateTokens writes a value: a string with ${...} where captures and
// variables replace what was recorded, or a bare reference when one
// replaces all of it. keepString writes a captured number as a string.
func templateTokens(p parts, keepString bool) hclwrite.Tokens {
	if len(p) == 1 && p[0].lit == "" && (p[0].capture != nil || p[0].variable != nil) {
		if !keepString || (p[0].capture != nil && !p[0].capture.number) || p[0].variable != nil {
			return hclwrite.TokensForTraversal(p[0].ref())
		}
	}
	toks := hclwrite.Tokens{{Type: hclsyntax.TokenOQuote, Bytes: []byte(`"`)}}
	for _, x := range p {
		if x.capture == nil && x.variable == nil {
			if x.lit == "" {
				continue
			}
			quoted := hclwrite.TokensForValue(cty.StringVal(x.lit))
			toks = append(toks, quoted[1:len(quoted)-1]...)
			continue
		}
		toks = append(toks, &hclwrite.Token{Type: hclsyntax.TokenTemplateInterp, Bytes: []byte("${")})
		toks = append(toks, hclwrite.TokensForTraversal(x.ref())...)
		toks = append(toks, &hclwrite.Token{Type: hclsyntax.TokenTemplateSeqEnd, Bytes: []byte("}")})
	}
	return append(toks, &hclwrite.Token{Type: hclsyntax.TokenCQuote, Bytes: []byte(`"`)})
}

var bareKey = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]*$`)

// keyTokens writes an object's key: bare when HCL reads it as a name,
// else quoted.
func keyTokens(k string) hclwrite.Tokens {
	if bareKey.MatchString(k) && k != "null" && k != "true" && k != "false" {
		return hclwrite.TokensForIdentifier(k)
	}
	return hclwrite.TokensForValue(cty.StringVal(k))
}

func headerTokens(h []sentHeader) hclwrite.Tokens {
	var attrs []hclwrite.ObjectAttrTokens
	for _, x := range h {
		attrs = append(attrs, hclwrite.ObjectAttrTokens{Name: keyTokens(canonical(x.name)), Value: templateTokens(x.value, true)})
	}
	return objectTokens(attrs)
}

// objectTokens writes an object on one line when it is short, else an
// attribute a line.
func objectTokens(attrs []hclwrite.ObjectAttrTokens) hclwrite.Tokens {
	width := 0
	for _, a := range attrs {
		width += len(a.Name.Bytes()) + len(a.Value.Bytes()) + 5
		for _, t := range a.Value {
			if t.Type == hclsyntax.TokenOBrace || t.Type == hclsyntax.TokenOBrack || t.Type == hclsyntax.TokenNewline {
				width += 1000 // a nested object or list: one attribute a line
			}
		}
	}
	if len(attrs) == 0 || len(attrs) > 3 || width > 70 {
		return hclwrite.TokensForObject(attrs)
	}
	toks := hclwrite.Tokens{{Type: hclsyntax.TokenOBrace, Bytes: []byte("{")}}
	for i, a := range attrs {
		if i > 0 {
			toks = append(toks, &hclwrite.Token{Type: hclsyntax.TokenComma, Bytes: []byte(",")})
		}
		toks = append(toks, a.Name...)
		toks = append(toks, &hclwrite.Token{Type: hclsyntax.TokenEqual, Bytes: []byte("=")})
		toks = append(toks, a.Value...)
	}
	return append(toks, &hclwrite.Token{Type: hclsyntax.TokenCBrace, Bytes: []byte("}")})
}

// jsonTokens writes a JSON body as an HCL value, with its captures and
// variables in place.
func jsonTokens(n *jnode) hclwrite.Tokens {
	switch n.kind {
	case 'o':
		var attrs []hclwrite.ObjectAttrTokens
		for i, k := range n.keys {
			attrs = append(attrs, hclwrite.ObjectAttrTokens{Name: keyTokens(k), Value: jsonTokens(n.vals[i])})
		}
		return objectTokens(attrs)
	case 'a':
		var elems []hclwrite.Tokens
		for _, v := range n.vals {
			elems = append(elems, jsonTokens(v))
		}
		return hclwrite.TokensForTuple(elems)
	case 's':
		if n.sent != nil {
			return templateTokens(n.sent, true)
		}
		return hclwrite.TokensForValue(cty.StringVal(n.text))
	case 'n':
		if n.sent != nil && !n.sent.literal() {
			return templateTokens(n.sent, false)
		}
		if v, err := cty.ParseNumberVal(n.text); err == nil {
			return hclwrite.TokensForValue(v)
		}
		return hclwrite.TokensForValue(cty.StringVal(n.text))
	case 'b':
		return hclwrite.TokensForValue(cty.BoolVal(n.text == "true"))
	}
	return hclwrite.TokensForValue(cty.NullVal(cty.DynamicPseudoType))
}
