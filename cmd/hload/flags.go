package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// commandHelp is what a command's -h prints besides its flags.
type commandHelp struct {
	name  string // as typed after hload: "apply", "plugin list"
	usage string // the usage line: "hload apply [flags] FILE..."
	about string // what the command does, in a few lines
}

// flagSet is a command's flags with its help. Every command builds its
// flags with newFlagSet and parses them with parseInterleaved or
// parseFlags, so that -h, --help and a mistaken flag behave alike in all
// of them.
type flagSet struct {
	*flag.FlagSet
	help           commandHelp
	stdout, stderr io.Writer
}

// newFlagSet returns the flag set of a command.
func newFlagSet(help commandHelp, stdout, stderr io.Writer) *flagSet {
	fs := &flagSet{FlagSet: flag.NewFlagSet(help.name, flag.ContinueOnError), help: help, stdout: stdout, stderr: stderr}
	// flag prints its message and calls Usage both for -h and for a
	// mistake, and cannot say which; parseFlags prints instead, the help
	// to stdout when asked for, else the mistake and the help to stderr.
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// parseFlags parses args, which must all be flags or come after them.
// -h and --help print the help to stdout and end the command with exit 0;
// any other mistake prints flag's message and the help to stderr and
// exits 2.
func (fs *flagSet) parseFlags(args []string) error {
	err := fs.Parse(args)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, flag.ErrHelp):
		fs.printHelp(fs.stdout)
		return &exitError{code: exitOK}
	}
	fmt.Fprintf(fs.stderr, "hload %s: %v\n\n", fs.help.name, err)
	fs.printHelp(fs.stderr)
	return &exitError{code: exitUsage}
}

// usageError is a mistake in a command's operands: exit 2, with the
// command's usage line and where its help is.
func (fs *flagSet) usageError(format string, args ...any) error {
	return &exitError{code: exitUsage, err: fmt.Errorf("%s\nusage: %s (hload %s -h for help)",
		fmt.Sprintf(format, args...), fs.help.usage, fs.help.name)}
}

// printHelp writes the usage line, what the command does, and its flags
// with their defaults, as `hload CMD -h` shows them.
func (fs *flagSet) printHelp(w io.Writer) {
	var b strings.Builder
	fmt.Fprintf(&b, "Usage: %s\n\n%s\n", fs.help.usage, strings.TrimSpace(fs.help.about))
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	if n > 0 {
		b.WriteString("\nFlags:\n")
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		fs.VisitAll(func(f *flag.Flag) {
			value, usage := flag.UnquoteUsage(f)
			dash := "--"
			if len(f.Name) == 1 {
				dash = "-"
			}
			name := dash + f.Name
			if value != "" {
				name += " " + value
			}
			if !zeroDefault(f.DefValue) {
				usage += " (default " + f.DefValue + ")"
			}
			fmt.Fprintf(tw, "  %s\t%s\n", name, usage)
		})
		tw.Flush()
	}
	io.WriteString(w, b.String())
}

// zeroDefault reports whether a flag's default is not worth printing.
func zeroDefault(v string) bool {
	switch v {
	case "", "0", "false", "0s", "[]":
		return true
	}
	return false
}

// colours reports whether what is written to w may be coloured: only on a
// terminal, and neither --no-color (noColor) nor NO_COLOR asks otherwise.
// NO_COLOR counts when it is set and not empty, as https://no-color.org
// says. Every place that colours its output asks here.
func colours(w io.Writer, noColor bool, getenv func(string) string) bool {
	return !noColor && getenv("NO_COLOR") == "" && isTerminal(w)
}
