package config

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"

	"github.com/hload/hload/protocols"
)

// The top-level block types.
const (
	blockVariable  = "variable"
	blockLocals    = "locals"
	blockTarget    = "target"
	blockScenario  = "scenario"
	blockThreshold = "threshold"
	blockSink      = "sink"
	blockData      = "data"
	blockPlugin    = "plugin"
)

// rootSchema is the schema of a config file.
var rootSchema = &hcl.BodySchema{
	Blocks: []hcl.BlockHeaderSchema{
		{Type: blockVariable, LabelNames: []string{"name"}},
		{Type: blockLocals},
		{Type: blockTarget, LabelNames: []string{"name"}},
		{Type: blockScenario, LabelNames: []string{"name"}},
		{Type: blockThreshold},
		{Type: blockSink, LabelNames: []string{"type"}},
		{Type: blockData, LabelNames: []string{"type", "name"}},
		{Type: blockPlugin, LabelNames: []string{"name"}},
	},
}

// The roots of the per-iteration values.
const (
	rootVU       = "vu"
	rootScenario = "scenario"
	rootData     = "data"
)

// Load reads the HCL files at paths and returns the test they describe.
// Several files merge into one test; file() is confined to the folder of
// the first one. Load returns a non-nil Test whenever every file could be
// read, so that the caller can render diagnostics with Test.Files; when the
// diagnostics have errors, the rest of the Test is incomplete and must not
// be run.
func Load(paths []string, opts Options) (*Test, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	if len(paths) == 0 {
		return nil, hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "No configuration file",
			Detail:   "Give at least one .hcl file that describes the test.",
		}}
	}
	files := make(map[string][]byte, len(paths))
	order := make([]string, 0, len(paths))
	for _, p := range paths {
		if _, seen := files[p]; seen {
			continue
		}
		src, err := os.ReadFile(p)
		if err != nil {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Cannot read configuration file",
				Detail:   err.Error(),
			})
			continue
		}
		files[p] = src
		order = append(order, p)
	}
	if diags.HasErrors() {
		return nil, diags
	}
	t, more := parse(order, files, filepath.Dir(paths[0]), opts)
	return t, append(diags, more...)
}

// Parse is Load for files already in memory, keyed by file name; dir is the
// folder file() is confined to. Files are read in name order. Like Load, it
// returns a non-nil Test whose Files can render the diagnostics.
func Parse(files map[string][]byte, dir string, opts Options) (*Test, hcl.Diagnostics) {
	order := make([]string, 0, len(files))
	for name := range files {
		order = append(order, name)
	}
	sort.Strings(order)
	return parse(order, files, dir, opts)
}

// loader holds the state shared by the decoding phases.
type loader struct {
	opts  Options
	test  *Test
	funcs map[string]function.Function
	// draws are what funcs' random functions draw from, for the compiled
	// forms of the requests' expressions (see compile.go).
	draws draws
	// vuIDs are the values of vu.id the compiled forms share.
	vuIDs *vuIDs
	// secrets collects the sensitive strings (see sensitive.go);
	// constantsMarked is set when var or local holds a sensitive value.
	secrets         *secrets
	constantsMarked bool

	// varCtx has only functions: variable defaults cannot use var or local.
	varCtx *hcl.EvalContext
	// base has var, local and the functions; requests keep it for Value.
	base *hcl.EvalContext
	// static is base plus unknown placeholders for the per-iteration roots.
	// Each use of them in a static place is reported by checkStatic, and the
	// placeholders keep hcl from reporting the same mistake a second time.
	static *hcl.EvalContext

	variables   map[string]cty.Value
	targets     map[string]*targetEntry
	targetNames []string // declaration order, for messages
	scenarios   map[string]*Scenario
	feeders     map[string]*feederEntry
	feederNames []string        // declaration order, for messages
	plugins     map[string]bool // names declared by plugin blocks
}

// blocks groups the top-level blocks of all files by type, in file order.
type blocks map[string][]*hcl.Block

func parse(order []string, files map[string][]byte, dir string, opts Options) (*Test, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	if opts.Protocols == nil {
		opts.Protocols = protocols.NewRegistry()
	}
	test := &Test{Dir: dir, Files: make(map[string]*hcl.File, len(order))}

	parser := hclparse.NewParser()
	var parsed []*hcl.File
	for _, name := range order {
		if d := checkText(name, files[name]); d != nil {
			// hcl would report each bad line, echoing the binary.
			diags = append(diags, d)
			continue
		}
		f, d := parser.ParseHCL(files[name], name)
		diags = append(diags, d...)
		if f != nil {
			test.Files[name] = f
			parsed = append(parsed, f)
		}
	}
	// A syntax error leaves the body partial; decoding it would only add
	// confusing follow-up errors such as a missing scenario.
	if diags.HasErrors() {
		return test, diags
	}

	all := blocks{}
	for _, f := range parsed {
		content, d := f.Body.Content(rootSchema)
		diags = append(diags, withBlockTypeHint(d)...)
		for _, b := range content.Blocks {
			all[b.Type] = append(all[b.Type], b)
		}
	}
	sec := &secrets{}
	l := &loader{
		opts:      opts,
		test:      test,
		secrets:   sec,
		funcs:     functions(dir, opts, sec),
		targets:   map[string]*targetEntry{},
		scenarios: map[string]*Scenario{},
		feeders:   map[string]*feederEntry{},
		plugins:   map[string]bool{},
	}
	l.draws = runDraws{}
	if opts.FixedDraws {
		l.draws = loadDraws()
		maps.Copy(l.funcs, randomFunctions(l.draws))
	}
	l.varCtx = &hcl.EvalContext{Functions: l.funcs}

	// The phases run in dependency order: each one may use what the
	// previous ones produced.
	diags = append(diags, l.decodeVariables(all[blockVariable])...)
	diags = append(diags, l.decodeLocals(all[blockLocals])...)
	diags = append(diags, l.decodeData(all[blockData])...)
	diags = append(diags, l.decodePlugins(all[blockPlugin])...)
	diags = append(diags, l.decodeTargets(all[blockTarget])...)
	diags = append(diags, l.decodeScenarios(all[blockScenario])...)
	diags = append(diags, l.decodeThresholds(all[blockThreshold])...)
	diags = append(diags, l.decodeSinks(all[blockSink])...)

	if len(all[blockScenario]) == 0 {
		d := &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "No scenario",
			Detail:   `A test needs at least one scenario block, such as scenario "smoke" { executor = "constant-vus" ... }.`,
		}
		if len(parsed) > 0 {
			start := hcl.Pos{Line: 1, Column: 1, Byte: 0}
			d.Subject = &hcl.Range{Filename: order[0], Start: start, End: start}
		}
		diags = append(diags, d)
	}
	test.secrets = sec.list()
	return test, withAttributeHints(diags)
}

// checkText returns a diagnostic when src, the content of the file name,
// is not UTF-8 text, or nil. Its subject is the first byte at fault; the
// file is left out of Test.Files, so no snippet echoes it.
func checkText(name string, src []byte) *hcl.Diagnostic {
	at, why := -1, ""
	if i := bytes.IndexByte(src, 0); i >= 0 {
		at, why = i, "a NUL byte"
	}
	for i := 0; i < len(src) && (at < 0 || i < at); {
		r, size := utf8.DecodeRune(src[i:])
		if r == utf8.RuneError && size <= 1 {
			at, why = i, fmt.Sprintf("the byte 0x%02x, which is not UTF-8", src[i])
			break
		}
		i += size
	}
	if at < 0 {
		return nil
	}
	pos := hcl.Pos{Line: 1 + bytes.Count(src[:at], []byte{'\n'}), Byte: at}
	pos.Column = 1 + utf8.RuneCount(src[bytes.LastIndexByte(src[:at], '\n')+1:at])
	end := pos
	end.Column, end.Byte = pos.Column+1, at+1
	return &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  "Not a text file",
		Detail: fmt.Sprintf("%s is not a UTF-8 text file: at line %d, column %d, it holds %s. It looks binary; give the .hcl file that describes the test.",
			name, pos.Line, pos.Column, why),
		Subject: &hcl.Range{Filename: name, Start: pos, End: end},
	}
}

// makeContexts builds the evaluation contexts once var and local are known.
func (l *loader) makeContexts(locals cty.Value) {
	l.constantsMarked = cty.ObjectVal(l.variables).ContainsMarked() || locals.ContainsMarked()
	l.base = &hcl.EvalContext{
		Variables: map[string]cty.Value{
			"var":   cty.ObjectVal(l.variables),
			"local": locals,
		},
		Functions: l.funcs,
	}
	l.static = l.base.NewChild()
	l.static.Variables = map[string]cty.Value{
		rootVU:       cty.DynamicVal,
		rootScenario: cty.DynamicVal,
		rootData:     cty.DynamicVal,
	}
}

// rootBlockTypes lists the supported top-level blocks for messages.
var rootBlockTypes = []string{blockVariable, blockLocals, blockPlugin, blockData, blockTarget, blockScenario, blockThreshold, blockSink}

// withBlockTypeHint adds the list of block types to hcl's "Unsupported
// block type" errors that have no suggestion, so the user sees what is
// expected instead.
func withBlockTypeHint(diags hcl.Diagnostics) hcl.Diagnostics {
	for _, d := range diags {
		if d.Summary == "Unsupported block type" && !strings.Contains(d.Detail, "Did you mean") {
			d.Detail += fmt.Sprintf(" The top-level blocks are %s.", quoteList(rootBlockTypes))
		}
	}
	return diags
}
