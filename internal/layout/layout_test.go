package layout

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/hload/hload/"

// floors are the packages by floor, lowest first. A package imports only
// packages on its own floor or below; its tests (package x_test) may
// import any, as they run the whole. A package that is on no floor fails
// TestFloors: a new package says where it sits. Prefixes end in "/".
var floors = [][]string{
	// What every part shares and depends on nothing of hload's.
	{"protocols/delivery", "protocols/http/h1", "plugins/proto", "plugins/internal/sched",
		"internal/", "scripts/freeport", "bench/benchreq", "bench/loadavg", "demo", "importer/"},
	// The run's data model: samples, metric names, figures.
	{"metrics"},
	// The protocol interface and the built-in protocols: they know the
	// samples they emit, never the scheduler that calls them.
	{"protocols", "protocols/http", "protocols/sse", "protocols/amqp"},
	// The test plan, and the plugin wire, the SDK authors import, the
	// host, and the test support that runs a protocol both in-process
	// and over the wire.
	{"config", "plugins/internal/wire", "plugins/sdk", "plugins/sdk/", "plugins/host", "plugins/protocoltest"},
	{"core"},
	// What reads a run: the sinks, compare and merge.
	{"sinks", "sinks/", "compare", "merge", "deploy/"},
	// Programs.
	{"cmd/", "bench", "bench/", "examples/"},
}

// floorOf returns the floor of a package path relative to the module, or
// -1. The longest matching entry wins, so "protocols/http" is not
// "protocols".
func floorOf(pkg string) int {
	best, floor := -1, -1
	for i, f := range floors {
		for _, p := range f {
			if (pkg == p || (strings.HasSuffix(p, "/") && strings.HasPrefix(pkg, p))) && len(p) > best {
				best, floor = len(p), i
			}
		}
	}
	return floor
}

type listed struct {
	ImportPath string
	Dir        string
	Imports    []string
	GoFiles    []string
}

// packages lists the module's packages with go list, as `go list ./...`
// prints them.
func packages(t *testing.T) []listed {
	t.Helper()
	cmd := exec.Command("go", "list", "-json", "./...")
	cmd.Dir = root(t)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var pkgs []listed
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listed
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("go list's output: %v", err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

// root is the module's directory.
func root(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	return filepath.Dir(strings.TrimSpace(string(out)))
}

// TestFloors: no package imports one on a floor above its own, and
// config imports nothing of core. The arrows that climb are what make a
// tree hard to enter: a reader who starts at the bottom meets code that
// needs what is above.
func TestFloors(t *testing.T) {
	pkgs := packages(t)
	if len(pkgs) < 20 {
		t.Fatalf("go list found %d packages; want the module's", len(pkgs))
	}
	up := 0
	for _, p := range pkgs {
		name := strings.TrimPrefix(p.ImportPath, module)
		from := floorOf(name)
		if from < 0 {
			t.Errorf("%s is on no floor: add it to floors in this file", name)
			continue
		}
		for _, imp := range p.Imports {
			if !strings.HasPrefix(imp, module) {
				continue
			}
			dep := strings.TrimPrefix(imp, module)
			if name == "config" && (dep == "core" || strings.HasPrefix(dep, "core/")) {
				t.Errorf("config imports %s: config must import nothing of core", dep)
			}
			if to := floorOf(dep); to > from {
				up++
				t.Errorf("%s (floor %d) imports %s (floor %d), a floor above", name, from, dep, to)
			}
		}
	}
	t.Logf("%d packages, %d imports climbing a floor", len(pkgs), up)
}

// metricNames reads the constants of metrics/names.go: the metrics hload
// makes itself.
func metricNames(t *testing.T, dir string) map[string]string {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, filepath.Join(dir, "metrics", "names.go"), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]string{}
	for _, c := range stringConsts(f) {
		names[c.value] = c.name
	}
	if len(names) < 8 {
		t.Fatalf("metrics/names.go defines %d names; want hload's own metrics", len(names))
	}
	return names
}

type constant struct{ name, value string }

// stringConsts returns f's constants whose value is a string literal.
func stringConsts(f *ast.File) []constant {
	var out []constant
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			vs := s.(*ast.ValueSpec)
			for i, v := range vs.Values {
				if lit, ok := v.(*ast.BasicLit); ok && lit.Kind == token.STRING && i < len(vs.Names) {
					if s, err := strconv.Unquote(lit.Value); err == nil {
						out = append(out, constant{vs.Names[i].Name, s})
					}
				}
			}
		}
	}
	return out
}

// sourceFiles parses every non-test Go file of the module, testdata left
// out, and calls fn with each.
func sourceFiles(t *testing.T, dir string, fn func(rel string, fset *token.FileSet, f *ast.File)) {
	t.Helper()
	fset := token.NewFileSet()
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); n == "testdata" || strings.HasPrefix(n, ".") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		fn(filepath.ToSlash(rel), fset, f)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// literalUses are the places a string equal to a metric name is not that
// metric: the word in another role.
var literalUses = map[string]string{
	"config/flow.go setup":            "the HCL block named setup",
	"importer/har/write.go setup":     "the HCL block named setup, written",
	"importer/har/summary.go setup":   "where a journey's request sits, in words",
	"sinks/csv/csv.go errors":         "a column of the CSV format",
	"sinks/csv/csv.go rps":            "a column of the CSV format",
	"sinks/influxdb/sink.go errors":   "a field of the Influx line protocol",
	"sinks/influxdb/sink.go rps":      "a field of the Influx line protocol",
	"cmd/hload/plan.go latency":       "the name of a flag",
	"sinks/console/capacity.go rps":   "a column of the terminal's table",
	"sinks/console/summary.go rps":    "a column of the terminal's table",
	"sinks/console/summary.go checks": "a row of the terminal's table",
}

// commonWords are metric names that are also the words of other things
// all over the code: "request" is the HCL block, the series' key and a
// column of every sink. Only the constants named Metric... count as
// their definitions.
var commonWords = map[string]bool{"request": true}

// TestMetricNamesDefinedOnce: every metric name, hload's own and each
// protocol's, is one constant in non-test code, and no other non-test
// code writes hload's own names as strings of its own.
func TestMetricNamesDefinedOnce(t *testing.T) {
	dir := root(t)
	own := metricNames(t, dir)
	defined := map[string][]string{}
	var stray []string
	used := map[string]bool{}
	other := func(rel, s string) bool {
		_, ok := literalUses[rel+" "+s]
		used[rel+" "+s] = used[rel+" "+s] || ok
		return ok
	}
	sourceFiles(t, dir, func(rel string, fset *token.FileSet, f *ast.File) {
		for _, c := range stringConsts(f) {
			_, ok := own[c.value]
			if (ok && !commonWords[c.value] && !other(rel, c.value)) || strings.HasPrefix(c.name, "Metric") {
				defined[c.value] = append(defined[c.value], rel+" "+c.name)
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.ImportSpec:
				return false // "errors" the package
			case *ast.GenDecl:
				if n.Tok == token.CONST {
					return false // counted above
				}
			case *ast.BasicLit:
				s, err := strconv.Unquote(n.Value)
				if n.Kind != token.STRING || err != nil {
					return true
				}
				if _, ok := own[s]; ok && !commonWords[s] {
					if !other(rel, s) {
						stray = append(stray, fmt.Sprintf("%s: %q", fset.Position(n.Pos()), s))
					}
				}
			}
			return true
		})
	})
	for name, where := range defined {
		if len(where) != 1 {
			t.Errorf("metric %q is defined %d times: %s", name, len(where), strings.Join(where, ", "))
		}
	}
	for name, c := range own {
		if len(defined[name]) == 0 {
			t.Errorf("metric %q (%s) is not found as a constant", name, c)
		}
	}
	for _, s := range stray {
		t.Errorf("%s: a metric name written as a string; use its constant in metrics", s)
	}
	for use, why := range literalUses {
		if !used[use] {
			t.Errorf("literalUses lists %q (%s), which the code no longer has: remove it", use, why)
		}
	}
	t.Logf("%d metric names, each defined once", len(defined))
}

// requestPath are the folders a request's way runs through, from the HCL
// to the sinks, the CLI that drives it, and the importers that write the
// HCL from a HAR or an access log.
var requestPath = []string{"config/", "core/", "metrics/", "protocols/", "plugins/", "sinks/", "cmd/hload/", "importer/"}

// maxLines is the longest a function on the request path may be, from
// its func line to its closing brace: one screen, read without scrolling.
const maxLines = 80

// TestFunctionLengths: no function on the request path is longer than
// maxLines. It logs the ten longest.
func TestFunctionLengths(t *testing.T) {
	type fn struct {
		where string
		lines int
	}
	var all []fn
	sourceFiles(t, root(t), func(rel string, fset *token.FileSet, f *ast.File) {
		on := false
		for _, p := range requestPath {
			on = on || strings.HasPrefix(rel, p)
		}
		if !on {
			return
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			start := fset.Position(fd.Pos())
			all = append(all, fn{
				where: fmt.Sprintf("%s:%d %s", rel, start.Line, funcName(fd)),
				lines: fset.Position(fd.End()).Line - start.Line + 1,
			})
		}
	})
	if len(all) < 500 {
		t.Fatalf("found %d functions on the request path; want the module's", len(all))
	}
	slices.SortFunc(all, func(a, b fn) int { return cmp.Compare(b.lines, a.lines) })
	for i, f := range all {
		if i < 10 {
			t.Logf("%4d lines  %s", f.lines, f.where)
		}
		if f.lines > maxLines {
			t.Errorf("%s is %d lines; split it where its parts have names of their own (at most %d)", f.where, f.lines, maxLines)
		}
	}
}

// funcName is a function's name, with its receiver's type for a method.
func funcName(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return fd.Name.Name
	}
	t := fd.Recv.List[0].Type
	if s, ok := t.(*ast.StarExpr); ok {
		t = s.X
	}
	switch r := t.(type) {
	case *ast.Ident:
		return r.Name + "." + fd.Name.Name
	case *ast.IndexExpr: // a generic type
		if id, ok := r.X.(*ast.Ident); ok {
			return id.Name + "." + fd.Name.Name
		}
	}
	return fd.Name.Name
}
