package compare

import (
	"strings"
	"testing"
)

func TestParseRule(t *testing.T) {
	good := []struct {
		text string
		want Rule
	}{
		{"latency p95 > +10%", Rule{Figure: P95, Op: ">", Kind: Relative, Value: 10}},
		{"latency p99 > +50ms", Rule{Figure: P99, Op: ">", Kind: Delta, Value: 50}},
		{"latency mean >= -1.5s", Rule{Figure: Mean, Op: ">=", Kind: Delta, Value: -1500}},
		{"latency max > 2s", Rule{Figure: Max, Op: ">", Kind: Level, Value: 2000}},
		{"latency p50 > 250us", Rule{Figure: P50, Op: ">", Kind: Level, Value: 0.25}},
		{"latency p90 > 250µs", Rule{Figure: P90, Op: ">", Kind: Level, Value: 0.25}},
		{"errors rate > 1%", Rule{Figure: ErrorRate, Op: ">", Kind: Level, Value: 0.01}},
		{"errors rate > +50%", Rule{Figure: ErrorRate, Op: ">", Kind: Relative, Value: 50}},
		{"rps < -5%", Rule{Figure: RPS, Op: "<", Kind: Relative, Value: -5}},
		{"rps < -20", Rule{Figure: RPS, Op: "<", Kind: Delta, Value: -20}},
		{"rps <= 100", Rule{Figure: RPS, Op: "<=", Kind: Level, Value: 100}},
		{"latency p95>+10%", Rule{Figure: P95, Op: ">", Kind: Relative, Value: 10}},
		{"  latency   p95 >   +10%  ", Rule{Figure: P95, Op: ">", Kind: Relative, Value: 10}},
		{"latency p95 > +10% on shop", Rule{Figure: P95, Op: ">", Kind: Relative, Value: 10, Scenario: "shop"}},
		{"latency p95 > +10% on shop/detail", Rule{Figure: P95, Op: ">", Kind: Relative, Value: 10, Scenario: "shop", Request: "detail"}},
		{"rps < -5% on my-scenario/get_2", Rule{Figure: RPS, Op: "<", Kind: Relative, Value: -5, Scenario: "my-scenario", Request: "get_2"}},
		{`rps < -5% on "a b"/"c/d"`, Rule{Figure: RPS, Op: "<", Kind: Relative, Value: -5, Scenario: "a b", Request: "c/d"}},
	}
	for _, tc := range good {
		t.Run(tc.text, func(t *testing.T) {
			got, err := ParseRule(tc.text)
			if err != nil {
				t.Fatalf("ParseRule(%q): %v", tc.text, err)
			}
			tc.want.Text = tc.text
			if got != tc.want {
				t.Fatalf("ParseRule(%q) = %+v, want %+v", tc.text, got, tc.want)
			}
		})
	}

	bad := []struct {
		text string
		want string // in the error
	}{
		{"", "the rule is empty"},
		{"   ", "the rule is empty"},
		{"latency", `column 8: expected a latency figure (mean, p50, p90, p95, p99 or max) after "latency", found the end of the rule`},
		{"latency p97 > +10%", `column 9: expected a latency figure (mean, p50, p90, p95, p99 or max) after "latency", found "p97"`},
		{"latancy p95 > +10%", `column 1: expected a metric (latency, errors or rps), found "latancy"`},
		{"errors p95 > 1%", `column 8: expected "rate" after "errors", found "p95"`},
		{"latency p95 +10%", `column 13: expected a comparison (>, >=, < or <=) after "latency p95", found "+10%"`},
		{"latency p95 = +10%", `column 13: expected a comparison (>, >=, < or <=) after "latency p95", found "="`},
		{"latency p95 >", `column 14: expected a value after ">", such as +10% (a change from the base run) or 200ms (the new run's own figure), found the end of the rule`},
		{"latency p95 > fast", `expected a value after ">"`},
		{"latency p95 > +", `column 15: expected a value`},
		{"latency p95 > 10%", `column 15: latency p95 is compared with a duration such as 10ms, or a change in percent such as +10%; not "10%"`},
		{"latency p95 > +10", `latency p95 is compared with a duration such as +10ms, or a change in percent such as +10%; not "+10"`},
		{"latency p95 > +10parsecs", `column 18: unknown unit "parsecs" in "+10parsecs"`},
		{"errors rate > 0.01", `errors rate is compared with a percentage: +0.01% (a change from the base run, in percent of its rate) or 0.01% (the new run's rate), not "0.01"`},
		{"errors rate > +1ms", `errors rate is compared with a percentage`},
		{"errors rate > 150%", `an error rate is at most 100%, not 150%`},
		{"rps < 5%", `rps is compared with a number of requests per second, such as 5, or a change in percent such as +5%; not "5%"`},
		{"rps < -5s", `rps is compared with a number`},
		{"latency p95 > +10% shop", `column 20: expected "on SCENARIO/REQUEST" or the end of the rule after "+10%", found "shop"`},
		{"latency p95 > +10% and rps < -5%", `expected "on SCENARIO/REQUEST"`},
		{"latency p95 > +10% on", `column 22: expected SCENARIO or SCENARIO/REQUEST after "on", found the end of the rule`},
		{"latency p95 > +10% on shop/", `column 28: expected a request name after "shop/"`},
		{"latency p95 > +10% on shop/a b", `unexpected "b" after the scope`},
		{"latency p95 > +10% on shop/a/b", `unexpected "/b" after the scope`},
		{`latency p95 > +10% on "shop`, `a quoted name is not closed`},
		{"latency p95 > 1.2.3ms", `column 15: latency p95 is compared with a duration such as 1.2ms`},
		{"rps < 1.2.3", `column 10: expected "on SCENARIO/REQUEST" or the end of the rule after "1.2", found "."`},
		{"rps < 2.", `column 7: expected a value after "<"`},
		{"rps < +.5%", `column 7: expected a value after "<"`},
		{"rps ≥ 5", `column 5: expected a comparison (>, >=, < or <=) after "rps", found "≥"`},
	}
	for _, tc := range bad {
		t.Run(tc.text, func(t *testing.T) {
			got, err := ParseRule(tc.text)
			if err == nil {
				t.Fatalf("ParseRule(%q) = %+v, want an error with %q", tc.text, got, tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("ParseRule(%q): %v\nwant it to say %q", tc.text, err, tc.want)
			}
		})
	}
}

// FuzzParseRule: no rule panics the parser, and whatever it accepts has a
// figure and an operator it can judge.
func FuzzParseRule(f *testing.F) {
	for _, s := range []string{"latency p95 > +10%", "errors rate > 1%", "rps < -5% on a/b", `rps < 1 on "x"/"y"`, "latency max >= -3.5ms"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRule(s)
		if err != nil {
			return
		}
		r.breaks(1, 2) // panics on an operator it cannot judge
		_ = r.Figure.String()
	})
}
