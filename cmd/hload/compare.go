package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/hload/hload/compare"
	"github.com/hload/hload/sinks/html"
)

// ruleFlags collects the repeatable --fail-if, parsed as they come so that
// a malformed rule is a usage error before any file is read.
type ruleFlags []compare.Rule

func (r *ruleFlags) String() string { return "" }

func (r *ruleFlags) Set(text string) error {
	rule, err := compare.ParseRule(text)
	if err != nil {
		return fmt.Errorf("%w (see docs/compare.md for the rules)", err)
	}
	*r = append(*r, rule)
	return nil
}

func cmdCompare(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet(compareHelp, stdout, stderr)
	var rules ruleFlags
	fs.Var(&rules, "fail-if", "exit 99 when this `rule` breaks on a request, such as \"latency p95 > +10%\" (repeatable)")
	var htmlOut string
	fs.StringVar(&htmlOut, "html", "", "also write the comparison as one self-contained HTML page to this `file`")
	files, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(files) != 2 {
		return fs.usageError("compare takes two summary exports, BASE.json and NEW.json, not %d file(s)", len(files))
	}
	var runs [2]compare.Run
	for i, path := range files {
		if runs[i], err = compare.Load(path); err != nil {
			return &exitError{code: exitUsage, err: err}
		}
	}
	c := compare.Compare(runs[0], runs[1])
	if err := c.WriteText(stdout); err != nil {
		return err
	}
	var breaches []compare.Breach
	if len(rules) > 0 {
		if breaches, err = c.Check(rules); err != nil {
			return &exitError{code: exitUsage, err: fmt.Errorf("--fail-if %w", err)}
		}
	}
	// The page is written whatever the rules say, with their verdicts: a
	// failed gate is when it is read.
	if htmlOut != "" {
		var buf bytes.Buffer
		if err := html.RenderComparison(&buf, c, rules, breaches); err != nil {
			return err
		}
		if err := os.WriteFile(htmlOut, buf.Bytes(), 0o644); err != nil {
			return fmt.Errorf("--html: %w", err)
		}
		fmt.Fprintf(stderr, "%s: comparison page written\n", htmlOut)
	}
	if len(rules) == 0 {
		return nil
	}
	broken := map[string]bool{}
	fmt.Fprintln(stdout, "\nrules")
	for _, b := range breaches {
		broken[b.Rule.Text] = true
		fmt.Fprintf(stdout, "  FAIL  %s\n", b)
	}
	for _, r := range rules {
		if !broken[r.Text] {
			fmt.Fprintf(stdout, "  PASS  %q held on every request it judged\n", r.Text)
		}
	}
	if len(breaches) == 0 {
		fmt.Fprintln(stdout, "\nPASS: every --fail-if rule held")
		return nil
	}
	fmt.Fprintf(stdout, "\nFAIL: %d of %d --fail-if rules broke\n", len(broken), len(rules))
	return &exitError{code: exitThreshold, err: fmt.Errorf("--fail-if: %s", strings.Join(brokenRules(breaches), "; "))}
}

// brokenRules names each broken rule once, in order: Check returns a
// rule's breaches together.
func brokenRules(breaches []compare.Breach) []string {
	var out []string
	for i, b := range breaches {
		if i == 0 || breaches[i-1].Rule.Text != b.Rule.Text {
			out = append(out, fmt.Sprintf("%q broke", b.Rule.Text))
		}
	}
	return out
}
