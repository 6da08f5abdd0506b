package config

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
)

// loadFiles writes files into a new folder and loads its test.hcl.
func loadFiles(t testing.TB, files map[string]string) (*Test, hcl.Diagnostics) {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return Load([]string{filepath.Join(dir, "test.hcl")}, testOptions())
}

// mustLoadFiles is loadFiles that fails the test on any error.
func mustLoadFiles(t testing.TB, files map[string]string) *Test {
	t.Helper()
	test, diags := loadFiles(t, files)
	if diags.HasErrors() {
		var buf strings.Builder
		hcl.NewDiagnosticTextWriter(&buf, test.Files, 0, false).WriteDiagnostics(diags)
		t.Fatalf("unexpected errors:\n%s", buf.String())
	}
	return test
}

// feederTest is a test with one data block and one request using it.
func feederTest(block, request string) string {
	return block + oneRequest(request)
}

// numberedCSV returns a CSV file of n rows whose id column is the row.
func numberedCSV(n int) string {
	var b strings.Builder
	b.WriteString("id,name\n")
	for i := range n {
		fmt.Fprintf(&b, "%d,user%d\n", i, i)
	}
	return b.String()
}

// loadFeeder loads a data block of the given mode over a file of n rows.
func loadFeeder(t *testing.T, mode string, n int) *Feeder {
	t.Helper()
	test := mustLoadFiles(t, map[string]string{
		"rows.csv": numberedCSV(n),
		"test.hcl": feederTest(fmt.Sprintf(`data "csv" "rows" {
  path = "rows.csv"
  mode = %q
}`, mode), `path = "/${data.rows.id}"`),
	})
	f := test.Feeders[0]
	if f.Len() != n || f.Mode != mode {
		t.Fatalf("feeder has %d rows, mode %q; want %d, %q", f.Len(), f.Mode, n, mode)
	}
	return f
}

// rowID returns the id column of row i, checking that it is i.
func rowID(t *testing.T, f *Feeder, i int) {
	t.Helper()
	if got, want := f.Row(i).GetAttr("id").AsString(), fmt.Sprint(i); got != want {
		t.Fatalf("row %d has id %s", i, got)
	}
}

func TestFeederSequential(t *testing.T) {
	const rows = 10
	f := loadFeeder(t, modeSequential, rows)
	c := f.NewCursor()
	for i := range 25 {
		row, ok := c.Next()
		if !ok || row != i%rows {
			t.Fatalf("call %d: Next() = %d, %v; want %d, true", i, row, ok, i%rows)
		}
		rowID(t, f, row)
	}
	// Each scenario has its own cursor, starting at the first row.
	if row, _ := f.NewCursor().Next(); row != 0 {
		t.Errorf("a new cursor starts at row %d", row)
	}

	// Shared by concurrent VUs, the cursor still hands out each row in
	// turn: every row equally often.
	const goroutines, calls = 4, 250
	c = f.NewCursor()
	counts := make([][rows]int, goroutines)
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for range calls {
				row, ok := c.Next()
				if !ok {
					t.Error("sequential cursor ran out")
					return
				}
				counts[g][row]++
			}
		})
	}
	wg.Wait()
	for row := range rows {
		total := 0
		for g := range goroutines {
			total += counts[g][row]
		}
		if want := goroutines * calls / rows; total != want {
			t.Errorf("row %d handed out %d times, want %d", row, total, want)
		}
	}
}

func TestFeederRandom(t *testing.T) {
	const rows = 20
	f := loadFeeder(t, modeRandom, rows)
	c := f.NewCursor()
	seen := map[int]int{}
	for range 2000 {
		row, ok := c.Next()
		if !ok || row < 0 || row >= rows {
			t.Fatalf("Next() = %d, %v", row, ok)
		}
		seen[row]++
	}
	if len(seen) != rows {
		t.Errorf("2000 draws covered %d of %d rows: %v", len(seen), rows, seen)
	}
}

func TestFeederUnique(t *testing.T) {
	const rows, goroutines = 1000, 8
	f := loadFeeder(t, modeUnique, rows)
	// Two scenarios share the rows of a unique feeder.
	cursors := []*Cursor{f.NewCursor(), f.NewCursor()}
	var (
		mu   sync.Mutex
		seen = make(map[int]int, rows)
		wg   sync.WaitGroup
	)
	for g := range goroutines {
		c := cursors[g%len(cursors)]
		wg.Go(func() {
			var mine []int
			for {
				row, ok := c.Next()
				if !ok {
					break
				}
				mine = append(mine, row)
			}
			mu.Lock()
			for _, row := range mine {
				seen[row]++
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	if len(seen) != rows {
		t.Errorf("%d distinct rows handed out, want %d", len(seen), rows)
	}
	for row, n := range seen {
		if n != 1 {
			t.Errorf("row %d handed out %d times", row, n)
		}
	}
	for _, c := range append(cursors, f.NewCursor()) {
		for range 3 {
			if row, ok := c.Next(); ok {
				t.Fatalf("Next() = %d, true after the rows ran out", row)
			}
		}
	}
}

func TestFeederCSV(t *testing.T) {
	tests := []struct {
		name, block, file string
		columns           []string
		rows              [][]string
	}{
		{
			name:    "quoted fields",
			block:   `path = "f.csv"`,
			file:    "email,note\n\"a@x.io\",\"one, two\"\nb@x.io,\"line 1\nline 2\"\nc@x.io,\"say \"\"hi\"\"\"\n",
			columns: []string{"email", "note"},
			rows:    [][]string{{"a@x.io", "one, two"}, {"b@x.io", "line 1\nline 2"}, {"c@x.io", `say "hi"`}},
		},
		{
			name: "semicolons",
			block: `path      = "f.csv"
  delimiter = ";"`,
			file:    "a;b;c\n1,5;x;\n;;z\n",
			columns: []string{"a", "b", "c"},
			rows:    [][]string{{"1,5", "x", ""}, {"", "", "z"}},
		},
		{
			name: "tabs",
			block: `path      = "f.csv"
  delimiter = "\t"`,
			file:    "sku\tname\nA-1\tRed shoes, size 9\n",
			columns: []string{"sku", "name"},
			rows:    [][]string{{"A-1", "Red shoes, size 9"}},
		},
		{
			name:    "byte order mark, CRLF and blank lines",
			block:   `path = "f.csv"`,
			file:    "\uFEFFid,city\r\n1,Zürich\r\n\r\n2,Kraków\r\n",
			columns: []string{"id", "city"},
			rows:    [][]string{{"1", "Zürich"}, {"2", "Kraków"}},
		},
		{
			name: "null mode and delimiter are the defaults",
			block: `path      = "f.csv"
  mode      = null
  delimiter = null`,
			file:    "a,b\n1,2\n",
			columns: []string{"a", "b"},
			rows:    [][]string{{"1", "2"}},
		},
		{
			name:    "no final line break",
			block:   `path = "f.csv"`,
			file:    "x\n1\n2",
			columns: []string{"x"},
			rows:    [][]string{{"1"}, {"2"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			test := mustLoadFiles(t, map[string]string{
				"f.csv":    tt.file,
				"test.hcl": feederTest("data \"csv\" \"f\" {\n  "+tt.block+"\n}\n", `path = "/"`),
			})
			f := test.Feeders[0]
			if got := f.Columns(); strings.Join(got, "|") != strings.Join(tt.columns, "|") {
				t.Errorf("columns = %q, want %q", got, tt.columns)
			}
			if f.Len() != len(tt.rows) {
				t.Fatalf("Len() = %d, want %d", f.Len(), len(tt.rows))
			}
			for i, want := range tt.rows {
				row := f.Row(i)
				for c, name := range tt.columns {
					if got := row.GetAttr(name).AsString(); got != want[c] {
						t.Errorf("row %d %s = %q, want %q", i, name, got, want[c])
					}
				}
				if n := len(row.Type().AttributeTypes()); n != len(tt.columns) {
					t.Errorf("row %d has %d attributes", i, n)
				}
			}
		})
	}
}

func TestRequestValueWithData(t *testing.T) {
	test := mustLoadFiles(t, map[string]string{
		"users.csv": "email,password\nada@x.io,s1\nbob@x.io,s2\n",
		"hosts.csv": "host\na.example\n",
		"test.hcl": `data "csv" "hosts" { path = "hosts.csv" }
data "csv" "users" {
  path = "users.csv"
  mode = "random"
}
` + oneRequest(`
    method  = "POST"
    path    = "/login/${vu.id}"
    json    = { email = data.users.email, password = data.users["password"], row = data.users }
    headers = { Host = data.hosts.host, Email = upper(data.users.email) }
`) + `
scenario "plain" {
  executor = "constant-vus"
  vus      = 1
  duration = "1s"
  request "p" { path = "/${vu.id}" }
}`,
	})
	r := test.Scenarios[0].Requests[0]
	if !r.Dynamic() {
		t.Fatal("a request using data is static, want dynamic")
	}
	hosts, users := test.Feeders[0], test.Feeders[1]
	if got := r.Feeders(); len(got) != 2 || got[0] != hosts || got[1] != users {
		t.Fatalf("Feeders() = %v, want hosts then users", feederNames(got))
	}
	if got := test.Scenarios[1].Requests[0].Feeders(); len(got) != 0 {
		t.Errorf("a request without data has feeders %v", feederNames(got))
	}
	for i := range users.Len() {
		v, diags := r.Value(Iteration{VU: 7, Data: map[string]cty.Value{"users": users.Row(i), "hosts": hosts.Row(0)}})
		if diags.HasErrors() {
			t.Fatal(diags)
		}
		email := users.Row(i).GetAttr("email").AsString()
		j := v.GetAttr("json")
		if j.GetAttr("email").AsString() != email || j.GetAttr("password").AsString() != fmt.Sprintf("s%d", i+1) ||
			j.GetAttr("row").GetAttr("email").AsString() != email {
			t.Errorf("row %d: json = %#v", i, j)
		}
		h := v.GetAttr("headers")
		if h.Index(cty.StringVal("Host")).AsString() != "a.example" || h.Index(cty.StringVal("Email")).AsString() != strings.ToUpper(email) {
			t.Errorf("row %d: headers = %#v", i, h)
		}
		if v.GetAttr("path").AsString() != "/login/7" {
			t.Errorf("path = %#v", v.GetAttr("path"))
		}
	}
	// A runner that forgets a row gets a diagnostic, not a panic.
	_, diags := r.Value(Iteration{VU: 1, Data: map[string]cty.Value{"hosts": hosts.Row(0)}})
	if !diags.HasErrors() || !strings.Contains(diags.Error(), "data.users") {
		t.Errorf("Value without the users row: %v", diags)
	}
}

func TestDataInvalid(t *testing.T) {
	request := oneRequest(`path = "/${data.users.email}"`)
	block := func(attrs string) string { return "data \"csv\" \"users\" {\n" + attrs + "\n}\n" }
	tests := []struct {
		name  string
		files map[string]string
		want  string
	}{
		{"empty column name", map[string]string{"u.csv": "email,,name\na,b,c\n",
			"test.hcl": block(`path = "u.csv"`) + request}, `Column 2 of the header of "u.csv" (line 1) has no name`},
		{"duplicate column", map[string]string{"u.csv": "email,name,email\na,b,c\n",
			"test.hcl": block(`path = "u.csv"`) + request}, `names column "email" twice, as columns 1 and 3`},
		{"header without rows", map[string]string{"u.csv": "email,name\n",
			"test.hcl": block(`path = "u.csv"`) + request}, `"u.csv" has a header ("email" and "name") but no rows`},
		{"bare quote", map[string]string{"u.csv": "email\nok\nb\"ad\n",
			"test.hcl": block(`path = "u.csv"`) + request}, `Line 3 of "u.csv": bare " in non-quoted-field`},
		{"too many fields", map[string]string{"u.csv": "email\na\nb\nc,d\n",
			"test.hcl": block(`path = "u.csv"`) + request}, `Line 4 of "u.csv" has 2 fields, but the header names 1 column (`},
		{"not UTF-8", map[string]string{"u.csv": "email\nok\n\xff\xfe\n",
			"test.hcl": block(`path = "u.csv"`) + request}, `Line 3 of "u.csv" is not valid UTF-8 text`},
		{"absolute path", map[string]string{"test.hcl": block(`path = "/etc/passwd"`) + request}, `Absolute path "/etc/passwd" is not allowed`},
		{"empty path", map[string]string{"test.hcl": block(`path = ""`) + request}, "Empty path"},
		{"null path", map[string]string{"test.hcl": block(`path = null`) + request}, "Empty path"},
		{"missing path", map[string]string{"test.hcl": block(`mode = "random"`) + request}, `"path" is required`},
		{"folder as path", map[string]string{"test.hcl": block(`path = "."`) + request}, "Cannot read"},
		{"long delimiter", map[string]string{"u.csv": "email\na\n",
			"test.hcl": block("path = \"u.csv\"\ndelimiter = \"::\"") + request}, "Invalid delimiter"},
		{"quote delimiter", map[string]string{"u.csv": "email\na\n",
			"test.hcl": block("path = \"u.csv\"\ndelimiter = \"\\\"\"") + request}, "Invalid delimiter"},
		{"unknown attribute", map[string]string{"u.csv": "email\na\n",
			"test.hcl": block("path = \"u.csv\"\nheader = true") + request}, `An argument named "header" is not expected here`},
		{"invalid name", map[string]string{"u.csv": "email\na\n",
			"test.hcl": "data \"csv\" \"1users\" { path = \"u.csv\" }\n" + oneRequest(`path = "/"`)}, "Invalid data block name"},
		{"whole data object", map[string]string{"u.csv": "email\na\n",
			"test.hcl": block(`path = "u.csv"`) + oneRequest(`json = data`)}, "Incomplete data reference"},
		{"data in locals", map[string]string{"u.csv": "email\na\n",
			"test.hcl": block(`path = "u.csv"`) + "locals { e = data.users.email }\n" + oneRequest(`path = "/"`)},
			"data.users.email changes with every iteration, so only request attributes can use it. A local value"},
		{"data in a variable", map[string]string{"u.csv": "email\na\n",
			"test.hcl": block(`path = "u.csv"`) + "variable \"e\" { default = data.users.email }\n" + oneRequest(`path = "/"`)},
			"A variable's default is evaluated once"},
		{"data in a threshold", map[string]string{"u.csv": "email\na\n",
			"test.hcl": block(`path = "u.csv"`) + oneRequest(`path = "/"`) + `threshold {
  metric    = "latency"
  request   = data.users.email
  condition = "p95 < 1s"
}`}, "A threshold block is evaluated once"},
		{"data in a scenario", map[string]string{"u.csv": "email\na\n",
			"test.hcl": block(`path = "u.csv"`) + strings.Replace(oneRequest(`path = "/"`), `vus      = 1`, `vus = length(data.users.email)`, 1)},
			"A scenario block is evaluated once"},
		{"data in a data block", map[string]string{"u.csv": "email\na\n",
			"test.hcl": block(`path = "u.csv"`) + "data \"csv\" \"more\" { path = data.users.email }\n" + oneRequest(`path = "/"`)},
			"A data block is evaluated once"},
		{"wrong type from a row", map[string]string{"u.csv": "email\na\n",
			"test.hcl": block(`path = "u.csv"`) + oneRequest(`query = data.users.email`)}, "Incorrect attribute value type"},
		{"column by index", map[string]string{"u.csv": "email\na\n",
			"test.hcl": block(`path = "u.csv"`) + oneRequest(`path = data.users["mail"]`)}, `Unknown column "mail"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			test, diags := loadFiles(t, tt.files)
			if !diags.HasErrors() {
				t.Fatalf("no error, want one mentioning %q", tt.want)
			}
			text := render(t, test, diags)
			if !strings.Contains(text, tt.want) {
				t.Fatalf("errors do not mention %q:\n%s", tt.want, text)
			}
			// Each mistake is reported once, not again at every use.
			if n := strings.Count(text, "Error: "); n != 1 {
				t.Errorf("%d errors, want 1:\n%s", n, text)
			}
		})
	}
}

func TestDataSymlinkEscapes(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "secret.csv")
	if err := os.WriteFile(outside, []byte("email\na\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(dir, "link.csv")); err != nil {
		t.Skip("no symbolic links here:", err)
	}
	src := "data \"csv\" \"users\" { path = \"link.csv\" }\n" + oneRequest(`path = data.users.email`)
	if err := os.WriteFile(filepath.Join(dir, "test.hcl"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	test, diags := Load([]string{filepath.Join(dir, "test.hcl")}, testOptions())
	if text := render(t, test, diags); !strings.Contains(text, "symbolic link that leads out of the config folder") {
		t.Fatalf("errors do not mention the link:\n%s", text)
	}
}

// TestFeederMillionRows checks that a large file costs about its own size
// once, not a copy per VU and not a string header per field.
func TestFeederMillionRows(t *testing.T) {
	if testing.Short() {
		t.Skip("writes and loads a 1,000,000-row file; skipped in -short mode")
	}
	const rows = 1_000_000
	dir := t.TempDir()
	path := filepath.Join(dir, "users.csv")
	file, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(file)
	fmt.Fprintln(w, "id,email,name")
	for i := range rows {
		fmt.Fprintf(w, "%d,user%d@example.com,User %d\n", i, i, i)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := file.Close(); err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	src := `data "csv" "users" { path = "users.csv" }` + oneRequest(`path = "/users/${data.users.id}"`)
	if err := os.WriteFile(filepath.Join(dir, "test.hcl"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}

	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	before := heap()
	test, diags := Load([]string{filepath.Join(dir, "test.hcl")}, testOptions())
	after := heap()
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	f := test.Feeders[0]
	if f.Len() != rows {
		t.Fatalf("Len() = %d, want %d", f.Len(), rows)
	}
	if got := f.Row(rows - 1).GetAttr("email").AsString(); got != fmt.Sprintf("user%d@example.com", rows-1) {
		t.Errorf("last row email = %q", got)
	}
	growth := int64(after) - int64(before)
	size := info.Size()
	t.Logf("file %.1f MB, %d rows x 3 columns: heap grew %.1f MB (%.2fx the file)",
		float64(size)/1e6, rows, float64(growth)/1e6, float64(growth)/float64(size))
	if growth > 3*size {
		t.Errorf("heap grew %d bytes, more than 3x the file's %d", growth, size)
	}
	// Many cursors, as many scenarios would make, share the rows.
	before = heap()
	cursors := make([]*Cursor, 1000)
	for i := range cursors {
		cursors[i] = f.NewCursor()
	}
	if grew := int64(heap()) - int64(before); grew > 1<<20 {
		t.Errorf("1000 cursors cost %d bytes", grew)
	}
	runtime.KeepAlive(test)
	runtime.KeepAlive(cursors)
}

func BenchmarkFeederRow(b *testing.B) {
	test := mustLoadFiles(b, map[string]string{
		"users.csv": numberedCSV(1000),
		"test.hcl":  feederTest(`data "csv" "users" { path = "users.csv" }`, `path = "/${data.users.id}"`),
	})
	f := test.Feeders[0]
	b.Run("Row", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			f.Row(i % 1000)
			i++
		}
	})
	b.Run("Cursor+Row+Value", func(b *testing.B) {
		r := test.Scenarios[0].Requests[0]
		c := f.NewCursor()
		b.ReportAllocs()
		for b.Loop() {
			row, _ := c.Next()
			if _, diags := r.Value(Iteration{VU: 1, Data: map[string]cty.Value{"users": f.Row(row)}}); diags.HasErrors() {
				b.Fatal(diags)
			}
		}
	})
}
