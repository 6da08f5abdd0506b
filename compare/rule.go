package compare

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/hload/hload/metrics"
)

// A Rule is one --fail-if: a condition on a figure of each request that,
// when it holds, breaks the rule. docs/compare.md gives its grammar:
//
//	rule   = metric op value [ "on" scope ]
//	metric = "latency" ("mean" | "p50" | "p90" | "p95" | "p99" | "max")
//	       | "errors" "rate" | "rps"
//	op     = ">" | ">=" | "<" | "<="
//	value  = sign number [ "%" | unit ]   a change from the base run
//	       | number [ "%" | unit ]        the new run's own figure
//	scope  = scenario [ "/" request ]
type Rule struct {
	// Text is the rule as written.
	Text   string
	Figure Figure
	Op     string // >, >=, < or <=
	Kind   ValueKind
	// Value is in the figure's units: percent for a Relative rule,
	// milliseconds for a latency, a fraction for the error rate, requests
	// per second for rps.
	Value float64
	// Scenario and Request are the scope; "" is every one.
	Scenario, Request string
}

// ValueKind is what a rule's value compares.
type ValueKind int

// The kinds of value.
const (
	// Relative is a signed percentage, "+10%": the change from the base
	// run in percent of the base's figure.
	Relative ValueKind = iota
	// Delta is a signed amount, "+50ms" or "-20" (requests/s): the new
	// figure minus the base's.
	Delta
	// Level is an unsigned value, "1%" or "200ms": the new run's own
	// figure, whatever the base's.
	Level
)

// latencyFigures are the words after "latency" and the figures they name.
var latencyFigures = map[string]Figure{"mean": Mean, "p50": P50, "p90": P90, "p95": P95, "p99": P99, "max": Max}

// ParseRule parses one rule. An error says at which column of the rule
// what was expected.
func ParseRule(text string) (Rule, error) {
	p := &ruleParser{text: text}
	r, err := p.rule()
	if err != nil {
		return Rule{}, err
	}
	r.Text = text
	return r, nil
}

// ruleParser reads a rule left to right, one token at a time.
type ruleParser struct {
	text string
	pos  int // byte offset of the next unread byte
}

// token is one lexical item of a rule.
type token struct {
	kind tokenKind
	text string
	pos  int // byte offset where it starts
	// for a number: its sign ("+", "-" or ""), digits and unit
	sign, digits, unit string
}

type tokenKind int

const (
	tokEnd tokenKind = iota
	tokWord
	tokOp
	tokNumber
	tokOther
)

// errorAt reports a mistake at a byte offset, as a 1-based column in
// characters.
func (p *ruleParser) errorAt(pos int, format string, args ...any) error {
	col := utf8.RuneCountInString(p.text[:pos]) + 1
	return fmt.Errorf("column %d: %s", col, fmt.Sprintf(format, args...))
}

func (p *ruleParser) skipSpace() {
	for p.pos < len(p.text) {
		r, n := utf8.DecodeRuneInString(p.text[p.pos:])
		if !unicode.IsSpace(r) {
			return
		}
		p.pos += n
	}
}

// next reads the next token.
func (p *ruleParser) next() token {
	p.skipSpace()
	start := p.pos
	if p.pos >= len(p.text) {
		return token{kind: tokEnd, pos: start}
	}
	c := p.text[p.pos]
	switch {
	case c == '<' || c == '>':
		p.pos++
		if p.pos < len(p.text) && p.text[p.pos] == '=' {
			p.pos++
		}
		return token{kind: tokOp, text: p.text[start:p.pos], pos: start}
	case c == '+' || c == '-' || isDigit(c):
		t := token{kind: tokNumber, pos: start}
		if c == '+' || c == '-' {
			t.sign = string(c)
			p.pos++
		}
		d := p.pos
		for p.pos < len(p.text) && isDigit(p.text[p.pos]) {
			p.pos++
		}
		if p.pos < len(p.text) && p.text[p.pos] == '.' {
			p.pos++
			for p.pos < len(p.text) && isDigit(p.text[p.pos]) {
				p.pos++
			}
		}
		t.digits = p.text[d:p.pos]
		u := p.pos
		for p.pos < len(p.text) {
			r, n := utf8.DecodeRuneInString(p.text[p.pos:])
			if r != '%' && !unicode.IsLetter(r) {
				break
			}
			p.pos += n
		}
		t.unit = p.text[u:p.pos]
		t.text = p.text[start:p.pos]
		return t
	case isLetter(c):
		for p.pos < len(p.text) && (isLetter(p.text[p.pos]) || isDigit(p.text[p.pos]) || p.text[p.pos] == '.') {
			p.pos++
		}
		return token{kind: tokWord, text: p.text[start:p.pos], pos: start}
	}
	_, n := utf8.DecodeRuneInString(p.text[p.pos:])
	p.pos += n
	return token{kind: tokOther, text: p.text[start:p.pos], pos: start}
}

func isDigit(c byte) bool  { return '0' <= c && c <= '9' }
func isLetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '_' }

// describe names a token for an error message.
func describe(t token) string {
	if t.kind == tokEnd {
		return "the end of the rule"
	}
	return strconv.Quote(t.text)
}

// rule = metric op value [ "on" scope ]
func (p *ruleParser) rule() (Rule, error) {
	var r Rule
	if strings.TrimSpace(p.text) == "" {
		return r, fmt.Errorf("the rule is empty; write one such as \"latency p95 > +10%%\"")
	}
	metric, err := p.metric(&r)
	if err != nil {
		return r, err
	}
	op := p.next()
	if op.kind != tokOp {
		return r, p.errorAt(op.pos, "expected a comparison (>, >=, < or <=) after %q, found %s", metric, describe(op))
	}
	r.Op = op.text
	value := p.next()
	if err := p.value(&r, metric, value); err != nil {
		return r, err
	}
	on := p.next()
	switch {
	case on.kind == tokEnd:
		return r, nil
	case on.kind != tokWord || on.text != "on":
		return r, p.errorAt(on.pos, "expected \"on SCENARIO/REQUEST\" or the end of the rule after %q, found %s", value.text, describe(on))
	}
	return r, p.scope(&r, on)
}

// metric reads "latency FIGURE", "errors rate" or "rps" and returns the
// metric's words, for messages.
func (p *ruleParser) metric(r *Rule) (string, error) {
	t := p.next()
	switch {
	case t.kind == tokWord && t.text == metrics.MetricRPS:
		r.Figure = RPS
		return metrics.MetricRPS, nil
	case t.kind == tokWord && t.text == metrics.MetricErrors:
		f := p.next()
		if f.kind != tokWord || f.text != "rate" {
			return "", p.errorAt(f.pos, "expected \"rate\" after \"errors\", found %s", describe(f))
		}
		r.Figure = ErrorRate
		return "errors rate", nil
	case t.kind == tokWord && t.text == metrics.MetricLatency:
		f := p.next()
		fig, ok := latencyFigures[f.text]
		if f.kind != tokWord || !ok {
			return "", p.errorAt(f.pos, "expected a latency figure (mean, p50, p90, p95, p99 or max) after \"latency\", found %s", describe(f))
		}
		r.Figure = fig
		return "latency " + f.text, nil
	}
	return "", p.errorAt(t.pos, "expected a metric (latency, errors or rps), found %s", describe(t))
}

// value reads a number with its sign and unit, and checks that it fits
// the metric: a latency is a duration, the error rate a percentage, rps a
// plain number, and any of them may change by a signed percentage.
func (p *ruleParser) value(r *Rule, metric string, t token) error {
	if t.kind != tokNumber || !wellFormed(t.digits) {
		return p.errorAt(t.pos, "expected a value after %q, such as +10%% (a change from the base run) or %s (the new run's own figure), found %s", r.Op, levelExample(r.Figure), describe(t))
	}
	n, err := strconv.ParseFloat(t.digits, 64)
	if err != nil || math.IsInf(n, 0) {
		return p.errorAt(t.pos, "%q is not a number", t.digits)
	}
	if t.sign == "-" {
		n = -n
	}
	r.Kind = Level
	if t.sign != "" {
		r.Kind = Delta
	}
	switch {
	case t.unit == "%" && r.Kind == Delta:
		r.Kind, r.Value = Relative, n
		return nil
	case r.Figure == ErrorRate:
		if t.unit != "%" {
			return p.errorAt(t.pos, "errors rate is compared with a percentage: %s%% (a change from the base run, in percent of its rate) or %s%% (the new run's rate), not %s", signed(t), t.digits, strconv.Quote(t.text))
		}
		if n > 100 {
			return p.errorAt(t.pos, "an error rate is at most 100%%, not %s", t.text)
		}
		r.Value = n / 100
		return nil
	case r.Figure == RPS:
		if t.unit != "" {
			return p.errorAt(t.pos, "rps is compared with a number of requests per second, such as %s, or a change in percent such as %s%%; not %s", t.sign+t.digits, signed(t), strconv.Quote(t.text))
		}
		r.Value = n
		return nil
	}
	// A latency figure.
	if t.unit == "" || t.unit == "%" {
		return p.errorAt(t.pos, "%s is compared with a duration such as %sms, or a change in percent such as %s%%; not %s", metric, t.sign+t.digits, signed(t), strconv.Quote(t.text))
	}
	d, err := time.ParseDuration(t.digits + t.unit)
	if err != nil {
		return p.errorAt(t.pos+len(t.sign)+len(t.digits), "unknown unit %q in %q; use ns, us, ms, s, m or h", t.unit, t.text)
	}
	r.Value = float64(d) / float64(time.Millisecond)
	if t.sign == "-" {
		r.Value = -r.Value
	}
	return nil
}

// wellFormed reports whether digits is digits [ "." digits ], as the
// grammar has it: "2." and ".5" are not numbers a rule writes.
func wellFormed(digits string) bool {
	whole, frac, dot := strings.Cut(digits, ".")
	return whole != "" && (!dot || frac != "")
}

// signed writes the number with a sign, "+" when it has none, for the
// examples in messages.
func signed(t token) string {
	if t.sign != "" {
		return t.sign + t.digits
	}
	return "+" + t.digits
}

func levelExample(f Figure) string {
	switch f {
	case ErrorRate:
		return "1%"
	case RPS:
		return "100"
	}
	return "200ms"
}

// scope = scenario [ "/" request ], up to the end of the rule. A name in
// double quotes may hold spaces or a slash.
func (p *ruleParser) scope(r *Rule, on token) error {
	p.skipSpace()
	start := p.pos
	name, err := p.name()
	if err != nil {
		return err
	}
	if name == "" {
		return p.errorAt(start, "expected SCENARIO or SCENARIO/REQUEST after \"on\", found the end of the rule")
	}
	r.Scenario = name
	if p.pos < len(p.text) && p.text[p.pos] == '/' {
		p.pos++
		at := p.pos
		if r.Request, err = p.name(); err != nil {
			return err
		}
		if r.Request == "" {
			return p.errorAt(at, "expected a request name after %q", r.Scenario+"/")
		}
	}
	p.skipSpace()
	if p.pos < len(p.text) {
		return p.errorAt(p.pos, "unexpected %q after the scope; write one scope, SCENARIO or SCENARIO/REQUEST", p.text[p.pos:])
	}
	return nil
}

// name reads a bare name (up to a space or a slash) or a quoted one.
func (p *ruleParser) name() (string, error) {
	start := p.pos
	if p.pos < len(p.text) && p.text[p.pos] == '"' {
		prefix, err := strconv.QuotedPrefix(p.text[p.pos:])
		if err != nil {
			return "", p.errorAt(start, "a quoted name is not closed")
		}
		p.pos += len(prefix)
		s, _ := strconv.Unquote(prefix)
		return s, nil
	}
	for p.pos < len(p.text) {
		r, n := utf8.DecodeRuneInString(p.text[p.pos:])
		if r == '/' || unicode.IsSpace(r) {
			break
		}
		p.pos += n
	}
	return p.text[start:p.pos], nil
}
