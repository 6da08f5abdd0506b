package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/hashicorp/hcl/v2"

	"github.com/hload/hload/config"
	"github.com/hload/hload/plugins/host"
	"github.com/hload/hload/protocols"
)

// resolvedPlugin is a test file's plugin block as apply resolves it: the
// binary found from its source, and how that binary compares with its pin.
type resolvedPlugin struct {
	decl *config.Plugin
	path string
	err  error  // why no binary was found
	sum  string // the binary's sha256, when it could be read
}

// checksum says how the binary compares with the block's sha256.
func (r resolvedPlugin) checksum() string {
	switch {
	case r.err != nil || r.sum == "":
		return "-"
	case r.decl.SHA256 == "":
		return "not pinned (sha256 " + r.sum + ")"
	case strings.EqualFold(r.decl.SHA256, r.sum):
		return "ok (pinned)"
	}
	return fmt.Sprintf("MISMATCH: pinned %s, actual %s", r.decl.SHA256, r.sum)
}

// loadPlugins loads a test file as validate does, noting each plugin block
// as apply resolves it (findDeclared) before the plugins are started. The
// plugins stay started in h for the caller. The notes are returned even
// when the file has errors, with the error loadTest returned.
func loadPlugins(file string, common *commonFlags, h *pluginHost, stderr io.Writer) ([]resolvedPlugin, error) {
	var found []resolvedPlugin
	note := func(o *config.Options) {
		start := o.Plugins
		o.Plugins = func(decls []*config.Plugin) (*protocols.Registry, hcl.Diagnostics) {
			for _, d := range decls {
				r := resolvedPlugin{decl: d}
				if r.path, r.err = findDeclared(d); r.err == nil {
					r.sum, _ = host.FileSum(r.path)
				}
				found = append(found, r)
			}
			return start(decls)
		}
	}
	_, err := loadTest([]string{file}, common, validateOnly, h, stderr, runsNothing, note)
	return found, err
}

// cmdPluginListFile lists a test file's plugin blocks with the binaries
// they resolve to and their checksum status.
func cmdPluginListFile(file string, common *commonFlags, stdout, stderr io.Writer) error {
	h := newPluginHost(context.Background())
	defer h.killAll()
	found, err := loadPlugins(file, common, h, stderr)
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tDECLARED\tPATH\tCHECKSUM")
	for _, r := range found {
		path := r.path
		if r.err != nil {
			path = "not found: " + r.err.Error()
		}
		rng := r.decl.DeclRange
		fmt.Fprintf(tw, "%s\t%s:%d\t%s\t%s\n", r.decl.Name, rng.Filename, rng.Start.Line, path, r.checksum())
	}
	tw.Flush()
	if len(found) == 0 && err == nil {
		fmt.Fprintf(stderr, "%s declares no plugin blocks\n", file)
	}
	return err
}

// describeFromFile resolves plugin name as the test file's plugin block
// declares it, its sha256 pin checked, as apply would start it.
func describeFromFile(name, file string, common *commonFlags, stderr io.Writer) (host.LaunchSpec, error) {
	h := newPluginHost(context.Background())
	defer h.killAll()
	found, err := loadPlugins(file, common, h, stderr)
	for _, r := range found {
		if r.decl.Name != name {
			continue
		}
		if r.err != nil {
			return host.LaunchSpec{}, r.err
		}
		if err != nil {
			return host.LaunchSpec{}, err
		}
		return host.LaunchSpec{Name: name, Path: r.path, SHA256: r.decl.SHA256}, nil
	}
	if err != nil {
		return host.LaunchSpec{}, err
	}
	var names []string
	for _, r := range found {
		names = append(names, r.decl.Name)
	}
	return host.LaunchSpec{}, &exitError{code: exitUsage, err: fmt.Errorf("%s declares no plugin %q; it declares %v", file, name, names)}
}
