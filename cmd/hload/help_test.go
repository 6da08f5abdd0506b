package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestCommandHelp: every command's -h, --help and `hload help CMD` print
// that command's own help (its usage line, what it does, its flags with
// their defaults) to stdout, nothing to stderr, and exit 0; an unknown
// flag prints the mistake and the same help to stderr and exits 2.
func TestCommandHelp(t *testing.T) {
	cases := []struct {
		command []string
		want    []string // in the help, besides the usage line
	}{
		{[]string{"apply"}, []string{"Run the test", "--summary-export file", "--var name=value", "--quiet", "--segment string", "(default 1/1)", "(default 5s)", "--dashboard host:port", "--dashboard-token token", "--dashboard-linger long"}},
		{[]string{"validate"}, []string{"without sending any load", "--var name=value", "--no-color"}},
		{[]string{"plan"}, []string{"schedule", "--latency duration", "(default 100ms)", "--segment string"}},
		{[]string{"compare"}, []string{"side by side", "--fail-if rule", "--html file"}},
		{[]string{"report"}, []string{"HTML report", "-o file", "(default report.html)"}},
		{[]string{"merge"}, []string{"segments", "--summary-export file", "--html file", "--no-color"}},
		{[]string{"demo"}, []string{"demo shop", "--listen address", "(default 127.0.0.1:8080)", "(default pool)"}},
		{[]string{"version"}, []string{"Print hload's version."}},
		{[]string{"plugin", "list"}, []string{"built-in protocols", "--var name=value"}},
		{[]string{"plugin", "describe"}, []string{"as JSON", "--source path", "--markdown"}},
		{[]string{"import", "har"}, []string{"browser's recording", "-o file", "--include-static"}},
		{[]string{"import", "access-log"}, []string{"access logs", "--format format", "--min-share percent", "(default 1)", "--peak", "--feeder"}},
	}
	for _, tc := range cases {
		name := strings.Join(tc.command, " ")
		usage := "Usage: hload " + name + " "
		if name == "version" {
			usage = "Usage: hload version\n"
		}
		var helps []string
		for _, args := range [][]string{
			append(append([]string{}, tc.command...), "-h"),
			append(append([]string{}, tc.command...), "--help"),
			append([]string{"help"}, tc.command...),
		} {
			t.Run(strings.Join(args, " "), func(t *testing.T) {
				var stdout, stderr bytes.Buffer
				code := run(args, &stdout, &stderr)
				if code != exitOK || stderr.Len() > 0 {
					t.Fatalf("exit %d, stderr %q; want exit 0 and nothing on stderr", code, stderr.String())
				}
				out := stdout.String()
				if !strings.HasPrefix(out, usage) {
					t.Fatalf("help starts %q, want %q:\n%s", firstLine(out), usage, out)
				}
				for _, w := range tc.want {
					if !strings.Contains(out, w) {
						t.Errorf("help lacks %q:\n%s", w, out)
					}
				}
				helps = append(helps, out)
			})
		}
		t.Run(name+" alike", func(t *testing.T) {
			for _, h := range helps[1:] {
				if h != helps[0] {
					t.Errorf("-h, --help and help %s differ:\n%s\n---\n%s", name, helps[0], h)
				}
			}
		})
		t.Run(name+" --bogus", func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(append(append([]string{}, tc.command...), "--bogus"), &stdout, &stderr)
			if code != exitUsage || stdout.Len() > 0 {
				t.Fatalf("exit %d, stdout %q; want exit 2 and nothing on stdout", code, stdout.String())
			}
			for _, w := range []string{"hload " + name + ": flag provided but not defined: -bogus", usage} {
				if !strings.Contains(stderr.String(), w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr.String())
				}
			}
		})
	}
}

// TestUsageLines: a command given the wrong operands names itself in its
// usage line, not another command.
func TestUsageLines(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"apply"}, "usage: hload apply [flags] FILE... (hload apply -h for help)"},
		{[]string{"validate"}, "usage: hload validate [flags] FILE... (hload validate -h for help)"},
		{[]string{"plan"}, "usage: hload plan [flags] FILE... (hload plan -h for help)"},
		{[]string{"validate", "--no-color"}, "usage: hload validate [flags] FILE..."},
		{[]string{"compare", "a.json"}, "usage: hload compare [flags] BASE.json NEW.json"},
		{[]string{"report"}, "usage: hload report [flags] RESULT.json"},
		{[]string{"merge"}, "usage: hload merge [flags] RESULT.json... | -"},
		{[]string{"demo", "x.hcl"}, "usage: hload demo [flags]"},
		{[]string{"version", "x"}, "usage: hload version"},
		{[]string{"plugin", "list", "a.hcl", "b.hcl"}, "usage: hload plugin list [flags] [FILE.hcl]"},
		{[]string{"plugin", "describe"}, "usage: hload plugin describe [flags] NAME [FILE.hcl]"},
		{[]string{"help", "launch"}, `unknown command "launch"`},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(tc.args, &stdout, &stderr)
			if code != exitUsage || !strings.Contains(stderr.String(), tc.want) {
				t.Fatalf("exit %d, stderr:\n%s\nwant exit 2 and %q", code, stderr.String(), tc.want)
			}
		})
	}
}

// TestTopLevelHelp: hload help, -h and --help print the list of commands
// and exit 0; hload alone prints it to stderr and exits 2.
func TestTopLevelHelp(t *testing.T) {
	for _, args := range [][]string{{"help"}, {"-h"}, {"--help"}} {
		var stdout, stderr bytes.Buffer
		if code := run(args, &stdout, &stderr); code != exitOK || !strings.Contains(stdout.String(), "hload help COMMAND") {
			t.Errorf("%v: exit %d, stdout:\n%s", args, code, stdout.String())
		}
	}
	var stdout, stderr bytes.Buffer
	if code := run(nil, &stdout, &stderr); code != exitUsage || !strings.Contains(stderr.String(), "Usage:") {
		t.Errorf("no command: exit %d, stderr:\n%s", code, stderr.String())
	}
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
