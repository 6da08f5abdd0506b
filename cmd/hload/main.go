// Command hload runs declarative load tests written in HCL.
//
// This package only parses flags, loads the config, wires the parts and
// maps the outcome to an exit code; everything else lives in importable
// packages.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/pprof"

	"github.com/hload/hload/metrics"
	"github.com/hload/hload/sinks"
)

// Exit codes, as README.md lists them under "Commands and exit codes".
const (
	exitOK          = 0
	exitRuntime     = 1
	exitUsage       = 2
	exitThreshold   = 99
	exitInterrupted = 130
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "0.1.0-dev"

func main() {
	servePprof(os.Stderr)
	// HLOAD_CPUPROFILE=prefix writes a CPU profile per process, including
	// isolated plugins (they inherit the environment), to prefix.PID, so
	// the cost of a boundary can be profiled on both of its sides.
	if prefix := os.Getenv("HLOAD_CPUPROFILE"); prefix != "" {
		if f, err := os.Create(fmt.Sprintf("%s.%d", prefix, os.Getpid())); err == nil {
			pprof.StartCPUProfile(f)
			code := run(os.Args[1:], os.Stdout, os.Stderr)
			pprof.StopCPUProfile()
			f.Close()
			os.Exit(code)
		}
	}
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// exitError carries an exit code with an error already reported.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

const usage = `hload runs declarative load tests written in HCL.

Usage:
  hload apply [flags] FILE...     run a test
  hload validate [flags] FILE...  check a test without running it (exit 0 or 2)
  hload plan [flags] FILE...      print each scenario's schedule before running
  hload compare [flags] BASE NEW  compare two runs' summary exports (--fail-if RULE)
  hload report RESULT.json        render the HTML report of a summary export (-o FILE)
  hload merge RESULT.json... | -  merge the summary exports of a run's segments
  hload plugin list|describe      list protocols and plugins, or describe one as JSON
  hload import har|access-log     write a test from a browser's HAR or a server's access log
  hload demo [--listen ADDR]      serve the embedded demo shop
  hload version                   print the version

Run 'hload COMMAND -h' or 'hload help COMMAND' for a command's help and flags.
`

func cmdVersion(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet(versionHelp, stdout, stderr)
	if err := fs.parseFlags(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fs.usageError("version takes no argument, got %q", fs.Arg(0))
	}
	fmt.Fprintf(stdout, "hload %s\n", version)
	return nil
}

// run executes one command and returns the process exit code.
func run(args []string, stdout, stderr io.Writer) int {
	return runWith(sinkTypes(), args, stdout, stderr)
}

// runWith is run with the sink types the blocks of a test may name: the
// built-in ones (sinkTypes), or more in a test.
func runWith(types *sinks.Registry, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	var err error
	switch args[0] {
	case "apply":
		err = cmdApply(args[1:], types, stdout, stderr)
	case "validate":
		err = cmdValidate(args[1:], types, stdout, stderr)
	case "plan":
		err = cmdPlan(args[1:], types, stdout, stderr)
	case "compare":
		err = cmdCompare(args[1:], stdout, stderr)
	case "report":
		err = cmdReport(args[1:], stdout, stderr)
	case "merge":
		err = cmdMerge(args[1:], os.Stdin, stdout, stderr)
	case "demo":
		err = cmdDemo(args[1:], stdout, stderr)
	case "plugin":
		err = cmdPlugin(args[1:], stdout, stderr)
	case "import":
		err = cmdImport(args[1:], stdout, stderr)
	case servePluginCommand:
		err = cmdServePlugin(args[1:], stderr)
	case "version":
		err = cmdVersion(args[1:], stdout, stderr)
	case "--version", "-v":
		fmt.Fprintf(stdout, "hload %s\n", version)
	case "help", "-h", "--help":
		if len(args) > 1 && args[0] == "help" {
			// hload help CMD [SUBCMD] is hload CMD [SUBCMD] -h.
			return runWith(types, append(args[1:], "-h"), stdout, stderr)
		}
		fmt.Fprint(stdout, usage)
	default:
		fmt.Fprintf(stderr, "hload: unknown command %q\n\n%s", args[0], usage)
		return exitUsage
	}
	if err == nil {
		return exitOK
	}
	// An error may quote a server (a sink's database) or a plugin.
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			fmt.Fprintf(stderr, "hload: %s\n", metrics.Printable(ee.err.Error()))
		}
		return ee.code
	}
	fmt.Fprintf(stderr, "hload: %s\n", metrics.Printable(err.Error()))
	return exitRuntime
}
