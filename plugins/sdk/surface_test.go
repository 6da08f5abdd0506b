package sdk

import (
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hload/hload/plugins/internal/wire"
)

// authorNames is everything `go doc ./plugins/sdk` may list: what a
// plugin's author needs, and nothing of the host or the wire: not
// protocols.Registry, WithEnding, Preparer or Templater.
var authorNames = []string{
	"Attr", "AttrDoc", "AttrError", "AttrErrorf", "AttrName", "BodyScan",
	"BodySearcher", "BoolAttr", "Call", "Client", "DurationAttr", "Ending",
	"ErrConnectionRefused", "ErrDNS", "ErrIdleClosed", "ErrInterrupted",
	"ErrNone", "ErrProtocol", "ErrReset", "ErrTLS", "ErrTimeout", "ErrorKind",
	"Gauger", "Info", "IntAttr", "Ledger", "LedgerFrom", "MetricConnect",
	"MetricRequest", "MetricTTFB", "NetErrorKind", "NumberAttr", "Pair",
	"Protocol", "Receipt", "ReceiptDuplicate", "ReceiptEarly", "ReceiptFirst",
	"ReceiptLate", "ReceiptUnknown", "RequestValidator", "Sample", "Serve",
	"StringAttr", "StringListAttr", "StringMapAttr", "TargetValidator",
	"Version", "Watch",
}

// TestAuthorSurface: the package exports exactly authorNames, as go doc
// reads it (the non-test files), and neither it nor hload's binary pulls
// in the host or a test-only gRPC package.
func TestAuthorSurface(t *testing.T) {
	fset := token.NewFileSet()
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	p, err := doc.NewFromFiles(fset, files, "github.com/hload/hload/plugins/sdk")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range append(p.Consts, p.Vars...) {
		got = append(got, c.Names...)
	}
	for _, f := range p.Funcs {
		got = append(got, f.Name)
	}
	for _, ty := range p.Types {
		got = append(got, ty.Name)
		for _, c := range append(ty.Consts, ty.Vars...) {
			got = append(got, c.Names...)
		}
		for _, f := range append(ty.Funcs, ty.Methods...) {
			got = append(got, f.Name)
		}
	}
	slices.Sort(got)
	if !slices.Equal(got, authorNames) {
		t.Errorf("plugins/sdk exports %q\nwant only %q", got, authorNames)
	}

	// One version, whichever end reports it.
	if Version != wire.SDKVersion {
		t.Errorf("sdk.Version %q, the wire reports %q", Version, wire.SDKVersion)
	}

	out, err := exec.Command("go", "list", "-deps", ".", "../../cmd/hload").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		if strings.Contains(dep, "/test/") || strings.HasSuffix(dep, "/bufconn") {
			t.Errorf("plugins/sdk or cmd/hload depends on the test-only package %s", dep)
		}
	}
	out, err = exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	if deps := strings.Fields(string(out)); slices.Contains(deps, "github.com/hload/hload/plugins/host") {
		t.Errorf("plugins/sdk depends on plugins/host")
	}
}

// TestExamplesImportTheSDKAlone: the example plugins, and their tests,
// reach hload through plugins/sdk (and sdktest) only, as a plugin outside
// hload's module must.
func TestExamplesImportTheSDKAlone(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{.Imports}} {{.TestImports}} {{.XTestImports}}",
		"../../examples/plugins/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	const module = "github.com/hload/hload/"
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	for _, line := range lines {
		fields := strings.Fields(strings.NewReplacer("[", " ", "]", " ").Replace(line))
		for _, dep := range fields[1:] {
			switch {
			case !strings.HasPrefix(dep, module),
				strings.HasPrefix(dep, fields[0]), // the example's own packages
				dep == module+"plugins/sdk", dep == module+"plugins/sdk/sdktest":
			default:
				t.Errorf("%s imports %s; a plugin imports plugins/sdk alone", fields[0], dep)
			}
		}
	}
	if len(lines) < 3 {
		t.Errorf("go list found %d example packages, want echo, lines and redis at least:\n%s", len(lines), out)
	}
}
