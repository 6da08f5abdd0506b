package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"sync"
	"text/tabwriter"

	"github.com/hashicorp/hcl/v2"

	"github.com/hload/hload/config"
	"github.com/hload/hload/plugins/host"
	"github.com/hload/hload/plugins/sdk"
	"github.com/hload/hload/protocols"
)

// servePluginCommand is the hidden command with which hload runs one of its
// built-in protocols as a plugin of itself, as Packer does: isolate = true
// and `hload plugin describe http` start it.
const servePluginCommand = "__plugin"

// cmdServePlugin serves the named built-in protocol over go-plugin. Run by
// hand it only prints go-plugin's "This binary is a plugin" message.
func cmdServePlugin(args []string, stderr io.Writer) error {
	if len(args) != 1 {
		return &exitError{code: exitUsage, err: fmt.Errorf("usage: hload %s PROTOCOL", servePluginCommand)}
	}
	p, ok := registry().Lookup(args[0])
	if !ok {
		return &exitError{code: exitUsage, err: fmt.Errorf("no built-in protocol %q; built-ins: %v", args[0], registry().Names())}
	}
	sdk.Serve(p)
	return nil
}

// pluginHost starts the plugins of one command and kills them all at its
// end. It is config's Options.Plugins and core's Options.Isolated.
type pluginHost struct {
	ctx context.Context

	mu      sync.Mutex
	plugins []*host.Plugin
	reg     *protocols.Registry // the built-ins and the declared plugins
	// startErrs are the plugins that could not be found or started: a
	// runtime failure (exit 1), not a mistake in the config.
	startErrs []error
}

func newPluginHost(ctx context.Context) *pluginHost { return &pluginHost{ctx: ctx} }

func (h *pluginHost) launch(spec host.LaunchSpec) (*host.Plugin, error) {
	p, err := host.Launch(h.ctx, spec)
	if err != nil {
		return nil, err
	}
	h.mu.Lock()
	h.plugins = append(h.plugins, p)
	h.mu.Unlock()
	return p, nil
}

// declared implements config.Options.Plugins: it finds and starts each
// declared plugin, so its schemas check the config before any load.
func (h *pluginHost) declared(decls []*config.Plugin) (*protocols.Registry, hcl.Diagnostics) {
	var (
		diags hcl.Diagnostics
		ps    []protocols.Protocol
	)
	for _, d := range decls {
		path, err := findDeclared(d)
		if err == nil {
			var p *host.Plugin
			if p, err = h.launch(host.LaunchSpec{Name: d.Name, Path: path, SHA256: d.SHA256}); err == nil {
				ps = append(ps, p)
				continue
			}
		}
		h.mu.Lock()
		h.startErrs = append(h.startErrs, err)
		h.mu.Unlock()
		// The error, with the plugin's stderr lines, is printed as is
		// after the diagnostics; wrapped into one it would be mangled.
		diags = append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  fmt.Sprintf("Plugin %q could not be started", d.Name),
			Detail:   "The reason follows the diagnostics.",
			Subject:  d.DeclRange.Ptr(),
		})
	}
	reg := registry().With(ps...)
	h.mu.Lock()
	h.reg = reg
	h.mu.Unlock()
	return reg, diags
}

// findDeclared finds the binary of a plugin block: its source, relative to
// the file that declares it, or hload-plugin-NAME on the search path. apply
// and `plugin list test.hcl` resolve blocks with it alike.
func findDeclared(d *config.Plugin) (string, error) {
	return host.Find(d.Name, d.Source, d.Dir(), os.LookupEnv)
}

// protocols returns the built-in protocols plus the plugins the config
// declared, for the run.
func (h *pluginHost) protocols() *protocols.Registry {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.reg == nil {
		return registry()
	}
	return h.reg
}

// isolated implements core.Options.Isolated: one hload process per
// isolated target serves the built-in protocol.
func (h *pluginHost) isolated(t *config.Target) (protocols.Protocol, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("finding the hload binary to run it isolated: %w", err)
	}
	return h.launch(host.LaunchSpec{
		Name: fmt.Sprintf("%s (isolated, target %s)", t.Protocol, t.Name),
		Path: self,
		Args: []string{servePluginCommand, t.Protocol},
		Env:  isolatedEnv(),
	})
}

// isolatedEnv is the environment of an isolated built-in's process. Its
// GOMAXPROCS leaves one processor to hload, which drives it: with both
// processes as wide as the machine, their idle processors spin and
// futex-wake each other on every batch, which cost about a quarter of the
// isolated path's CPU per request on two cores. Its GOGC lets the heap
// grow to 5x the live data before a collection: a plugin's live heap is a
// few MB, so at the default it collected many times a second, and 400
// gave 1-6 % more requests per second pinned to one core. A GOMAXPROCS or
// GOGC the user set still wins.
func isolatedEnv() []string {
	return []string{fmt.Sprintf("GOMAXPROCS=%d", max(1, runtime.GOMAXPROCS(0)-1)), "GOGC=400"}
}

// startError returns why plugins could not be started, or nil.
func (h *pluginHost) startError() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return errors.Join(h.startErrs...)
}

// killAll stops every plugin started so far and waits for them to exit.
func (h *pluginHost) killAll() {
	h.mu.Lock()
	ps := h.plugins
	h.plugins = nil
	h.mu.Unlock()
	for _, p := range ps {
		p.Kill()
	}
}

const pluginUsage = `Usage:
  hload plugin list                            list the built-in protocols and the plugin binaries found
  hload plugin list FILE.hcl [--var k=v]       list the file's plugin blocks: resolved paths, checksum status
  hload plugin describe NAME [--source PATH]   print a protocol's versions and schemas as JSON
  hload plugin describe NAME FILE.hcl          describe the plugin as the file's plugin block resolves it
  hload plugin describe NAME --markdown        its attributes as Markdown tables, for a README

Plugin binaries are named hload-plugin-NAME and are searched in the folders
of HLOAD_PLUGIN_PATH, then in ./plugins/.
`

func cmdPlugin(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, pluginUsage)
		return &exitError{code: exitUsage}
	}
	switch args[0] {
	case "list":
		return cmdPluginList(args[1:], stdout, stderr)
	case "describe":
		return cmdPluginDescribe(args[1:], stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, pluginUsage)
		return nil
	}
	fmt.Fprintf(stderr, "hload: unknown plugin command %q\n\n%s", args[0], pluginUsage)
	return &exitError{code: exitUsage}
}

func cmdPluginList(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet(pluginListHelp, stdout, stderr)
	var common commonFlags
	common.register(fs)
	files, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(files) > 1 {
		return fs.usageError("plugin list takes one test file at most, not %d", len(files))
	}
	if len(files) == 1 {
		return cmdPluginListFile(files[0], &common, stdout, stderr)
	}
	found, err := host.List(os.LookupEnv)
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSOURCE")
	for _, name := range registry().Names() {
		fmt.Fprintf(tw, "%s\tbuilt-in\n", name)
	}
	for _, f := range found {
		note := ""
		if f.Shadowed {
			note = "\t(shadowed by the one above)"
		}
		fmt.Fprintf(tw, "%s\t%s%s\n", f.Name, f.Path, note)
	}
	tw.Flush()
	if err != nil {
		return fmt.Errorf("searching for plugins: %w", err)
	}
	return nil
}

func cmdPluginDescribe(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet(pluginDescribeHelp, stdout, stderr)
	source := fs.String("source", "", "the plugin binary's `path`; by default it is searched for as hload-plugin-NAME")
	markdown := fs.Bool("markdown", false, "print the attributes as Markdown tables, for a plugin's README, instead of JSON")
	var common commonFlags
	common.register(fs)
	names, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(names) != 1 && (len(names) != 2 || *source != "") {
		return fs.usageError("plugin describe takes a protocol's NAME, and a test file or --source at most")
	}
	name := names[0]
	h := newPluginHost(context.Background())
	defer h.killAll()

	spec := host.LaunchSpec{Name: name}
	if len(names) == 2 {
		if spec, err = describeFromFile(name, names[1], &common, stderr); err != nil {
			return err
		}
	} else if _, builtin := registry().Lookup(name); builtin && *source == "" {
		// A built-in is described through the isolated path, which shows
		// that it crosses the plugin boundary as a plugin does.
		self, err := os.Executable()
		if err != nil {
			return err
		}
		spec.Path, spec.Args = self, []string{servePluginCommand, name}
	} else {
		wd, err := os.Getwd()
		if err != nil {
			return err
		}
		if spec.Path, err = host.Find(name, *source, wd, os.LookupEnv); err != nil {
			return err
		}
	}
	p, err := h.launch(spec)
	if err != nil {
		return err
	}
	if *markdown {
		_, err = fmt.Fprint(stdout, host.Describe(p).Markdown())
		return err
	}
	data, err := json.MarshalIndent(host.Describe(p), "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "%s\n", data)
	return err
}
