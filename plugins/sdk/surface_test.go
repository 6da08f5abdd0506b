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
// plugin's author needs, and nothing of the host or the wire.
var authorNames = []string{
	"Attr", "AttrError", "AttrErrorf", "AttrName", "BoolAttr", "DurationAttr",
	"IntAttr", "NumberAttr", "Pair", "Serve", "StringAttr", "StringListAttr",
	"StringMapAttr", "Version",
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
