package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/hload/hload/demo"
	"github.com/hload/hload/internal/servicetest"
)

// The demo's five pages, as the quickstart's mix names them.
var shopPages = []string{"main", "login", "list", "detail", "order"}

// shopPage names the demo page a request is for, from its method and
// path alone, or "" for any other.
func shopPage(method, path string) string {
	path, _, _ = strings.Cut(path, "?")
	switch {
	case method == "GET" && path == "/":
		return "main"
	case method == "POST" && path == "/login":
		return "login"
	case method == "GET" && path == "/products":
		return "list"
	case method == "GET" && regexp.MustCompile(`^/products/[0-9]+$`).MatchString(path):
		return "detail"
	case method == "POST" && path == "/orders":
		return "order"
	}
	return ""
}

// pageCounter is the demo shop behind a counter of its own, per page.
type pageCounter struct {
	mu     sync.Mutex
	counts map[string]int
	shop   http.Handler
}

func (c *pageCounter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	c.counts[shopPage(r.Method, r.URL.Path)]++
	c.mu.Unlock()
	c.shop.ServeHTTP(w, r)
}

func (c *pageCounter) snapshot() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]int{}
	for k, v := range c.counts {
		out[k] = v
	}
	return out
}

func newPageCounter(t *testing.T) (*pageCounter, *httptest.Server) {
	c := &pageCounter{counts: map[string]int{}, shop: demo.NewHandler(demo.Options{Seed: 1})}
	srv := httptest.NewServer(c)
	t.Cleanup(srv.Close)
	return c, srv
}

// startNginx starts a real nginx in front of upstream (HOST:PORT) with
// scripts/nginx.sh, and returns its exports; it is stopped at the end.
func startNginx(t *testing.T, upstream string) map[string]string {
	t.Helper()
	servicetest.Nginx.File(t, "/usr/sbin/nginx")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "scripts/nginx.sh", "start", upstream)
	cmd.Dir = "../.."
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("scripts/nginx.sh start: %v\n%s", err, stderr.String())
	}
	env := map[string]string{}
	for _, line := range strings.Split(string(out), "\n") {
		if k, v, ok := strings.Cut(strings.TrimPrefix(line, "export "), "="); ok {
			env[k] = v
		}
	}
	if env["HLOAD_NGINX_DIR"] == "" || env["HLOAD_NGINX_URL"] == "" {
		t.Fatalf("scripts/nginx.sh start printed no exports:\n%s", out)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		stop := exec.CommandContext(ctx, "scripts/nginx.sh", "stop", env["HLOAD_NGINX_DIR"])
		stop.Dir = "../.."
		if out, err := stop.CombinedOutput(); err != nil {
			t.Errorf("scripts/nginx.sh stop: %v\n%s", err, out)
		}
	})
	return env
}

// quickstartAgainst is examples/quickstart.hcl pointed at var.base_url,
// its stages made 20 s of load, and without its CSV sink.
func quickstartAgainst(t *testing.T) string {
	t.Helper()
	src, err := os.ReadFile("../../examples/quickstart.hcl")
	if err != nil {
		t.Fatal(err)
	}
	s := string(src)
	for old, new := range map[string]string{
		"base_url = demo_url()":                                    "base_url = var.base_url",
		`{ duration = "5s", target = var.peak_vus },  # ramp up`:   `{ duration = "1s", target = var.peak_vus },`,
		`{ duration = "15s", target = var.peak_vus }, # hold`:      `{ duration = "19s", target = var.peak_vus },`,
		`{ duration = "5s", target = 0 },             # ramp down`: ``,
	} {
		if !strings.Contains(s, old) {
			t.Fatalf("examples/quickstart.hcl no longer has %q: update this test", old)
		}
		s = strings.Replace(s, old, new, 1)
	}
	s, _, ok := strings.Cut(s, `sink "csv"`)
	if !ok {
		t.Fatal(`examples/quickstart.hcl no longer ends with sink "csv": update this test`)
	}
	return "variable \"base_url\" {}\n" + s
}

// combinedRequest reads a combined log line's method and path; it is the
// test's own reading, independent of importer/accesslog's.
var combinedRequest = regexp.MustCompile(`^\S+ \S+ \S+ \[[^\]]+\] "([A-Z]+) (\S+) HTTP/[0-9.]+" \d{3} `)

// countLog counts the log's requests per demo page, line by line.
func countLog(t *testing.T, path string) (map[string]int, int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	counts := map[string]int{}
	total := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		m := combinedRequest.FindStringSubmatch(sc.Text())
		if m == nil {
			t.Fatalf("%s: a line the test cannot read: %q", path, sc.Text())
		}
		counts[shopPage(m[1], m[2])]++
		total++
	}
	return counts, total
}

// importedRequest is one request of an imported test, as the test reads
// it from the file.
type importedRequest struct {
	name, method, path string // path: the expression's source
	hasQuery           bool
	weight             int
}

// readImported reads the requests of the imported test's scenario with
// HCL's parser, not the importer's code.
func readImported(t *testing.T, path string) []importedRequest {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	file, diags := hclsyntax.ParseConfig(src, path, hcl.InitialPos)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	var reqs []importedRequest
	for _, b := range file.Body.(*hclsyntax.Body).Blocks {
		if b.Type != "scenario" {
			continue
		}
		for _, rb := range b.Body.Blocks {
			if rb.Type != "request" {
				continue
			}
			r := importedRequest{name: rb.Labels[0]}
			for name, a := range rb.Body.Attributes {
				text := string(a.Expr.Range().SliceBytes(src))
				switch name {
				case "weight":
					fmt.Sscan(text, &r.weight)
				case "method":
					r.method = strings.Trim(text, `"`)
				case "path":
					r.path = strings.Trim(text, `"`)
				case "query":
					r.hasQuery = true
				}
			}
			reqs = append(reqs, r)
		}
	}
	return reqs
}

// importedPage names the demo page an imported request stands for.
func importedPage(r importedRequest) string {
	switch {
	case r.method == "GET" && r.path == "/":
		return "main"
	case r.method == "POST" && r.path == "/login":
		return "login"
	case r.method == "GET" && r.path == "/products" && r.hasQuery:
		return "list"
	case r.method == "GET" && strings.HasPrefix(r.path, "/products/${"):
		return "detail"
	case r.method == "POST" && r.path == "/orders":
		return "order"
	}
	return ""
}

// shares turns counts into fractions of their total.
func shares(counts map[string]int) map[string]float64 {
	total := 0
	for _, n := range counts {
		total += n
	}
	out := map[string]float64{}
	for k, n := range counts {
		out[k] = float64(n) / float64(total)
	}
	return out
}

// TestImportAccessLogNginx (issue 26, must show 1): a real nginx in front
// of the demo shop logs 20 s of the quickstart's 60/5/20/10/5 mix in the
// combined format. `hload import access-log` on that log gives each page
// one request, the product ids collapsed into one, weighted within 1
// point of the log's own counts (read by this test, not the importer);
// the imported test, applied to the demo, reproduces the mix within 1
// point by the demo's own counts.
func TestImportAccessLogNginx(t *testing.T) {
	_, shop := newPageCounter(t)
	nginx := startNginx(t, strings.TrimPrefix(shop.URL, "http://"))
	dir := t.TempDir()

	load := writeFile(t, dir, "quickstart.hcl", quickstartAgainst(t))
	var stdout, stderr bytes.Buffer
	if code := run([]string{"apply", "--quiet", "--var", "base_url=" + nginx["HLOAD_NGINX_URL"], load}, &stdout, &stderr); code != 0 {
		t.Fatalf("apply through nginx: exit %d\n%s\n%s", code, stdout.String(), stderr.String())
	}
	logged, total := countLog(t, nginx["HLOAD_NGINX_LOG"])
	t.Logf("nginx logged %d requests: %v", total, logged)
	if logged[""] > 0 || total < 1000 {
		t.Fatalf("the log holds %d requests, %d of them for no demo page: want the quickstart's mix, over 1000", total, logged[""])
	}

	imported := filepath.Join(dir, "imported.hcl")
	stdout.Reset()
	stderr.Reset()
	if code := run([]string{"import", "access-log", "--format", "combined", "-o", imported, nginx["HLOAD_NGINX_LOG"]}, &stdout, &stderr); code != 0 {
		t.Fatalf("import: exit %d\n%s\n%s", code, stdout.String(), stderr.String())
	}
	t.Logf("import printed:\n%s", stdout.String())
	reqs := readImported(t, imported)
	weights := map[string]int{}
	for _, r := range reqs {
		page := importedPage(r)
		if page == "" || weights[page] != 0 {
			t.Errorf("request %q (%s %s) is not one of the demo's pages, or a second request for one", r.name, r.method, r.path)
		}
		weights[page] = r.weight
	}
	if len(reqs) != len(shopPages) {
		t.Fatalf("the imported test has %d requests, want %d, one per page (the product ids in one):\n%+v", len(reqs), len(shopPages), reqs)
	}
	logShare, weightShare := shares(logged), shares(weights)
	for _, p := range shopPages {
		if d := math.Abs(weightShare[p] - logShare[p]); d > 0.01 {
			t.Errorf("%s: weight %d is %.2f %% of the weights, the log has %.2f %% (%d of %d): %.2f points apart, want at most 1",
				p, weights[p], 100*weightShare[p], 100*logShare[p], logged[p], total, 100*d)
		}
	}

	// The imported test against the demo itself, counted by the demo.
	counter, direct := newPageCounter(t)
	stdout.Reset()
	stderr.Reset()
	if code := run([]string{"apply", "--quiet", "--var", "base_url=" + direct.URL, imported}, &stdout, &stderr); code != 0 {
		t.Fatalf("apply the imported test: exit %d\n%s\n%s", code, stdout.String(), stderr.String())
	}
	served := counter.snapshot()
	t.Logf("the demo served the imported test: %v", served)
	if served[""] > 0 {
		t.Errorf("the demo served %d requests for none of its pages", served[""])
	}
	servedShare := shares(served)
	for _, p := range shopPages {
		if d := math.Abs(servedShare[p] - logShare[p]); d > 0.01 {
			t.Errorf("%s: the demo served %.2f %% (%d), the log has %.2f %%: %.2f points apart, want at most 1",
				p, 100*servedShare[p], served[p], 100*logShare[p], 100*d)
		}
	}

	// The same traffic's JSON log (nginx's $request_time): the same mix,
	// and a p50 per template.
	stdout.Reset()
	stderr.Reset()
	importedJSON := filepath.Join(dir, "imported-json.hcl")
	if code := run([]string{"import", "access-log", "-o", importedJSON, nginx["HLOAD_NGINX_JSON_LOG"]}, &stdout, &stderr); code != 0 {
		t.Fatalf("import the JSON log: exit %d\n%s\n%s", code, stdout.String(), stderr.String())
	}
	for _, r := range readImported(t, importedJSON) {
		if w := weights[importedPage(r)]; w != r.weight {
			t.Errorf("the JSON log weighs %s %d, the combined log %d", r.name, r.weight, w)
		}
	}
	for _, line := range strings.Split(stdout.String(), "\n")[1:6] {
		if !regexp.MustCompile(`[0-9.]+[µm]?s\s`).MatchString(line) {
			t.Errorf("the JSON log's table has no p50 on %q", line)
		}
	}
}

// TestImportAccessLogBadInput (issue 26, must show 3): a line of an
// unknown format, an empty file, a missing file and a bad flag are each
// exit 2, naming the file and line (or the flag), and nothing is written.
func TestImportAccessLogBadInput(t *testing.T) {
	good := `127.0.0.1 - - [07/Dec/2026:00:12:26 +0000] "GET /products/5 HTTP/1.1" 200 160 "-" "hload"` + "\n"
	cases := []struct {
		name  string
		files map[string]string // written in the test's folder
		args  []string          // before -o OUT; file names are relative to the folder
		want  []string          // in stderr
	}{
		{"unknown format", map[string]string{"bad.log": good + good + "this is not a log line\n"},
			[]string{"bad.log"}, []string{"bad.log:3: not a combined log line", `"this is not a log line"`}},
		{"json among combined", map[string]string{"mixed.log": good + `{"time":"2026-12-07T00:12:26Z","status":200}` + "\n"},
			[]string{"mixed.log"}, []string{"mixed.log:2: not a combined log line"}},
		{"json without a path", map[string]string{"lines.json": `{"time":"2026-12-07T00:12:26Z","method":"GET","uri":"/","status":200}` + "\n" + `{"time":"2026-12-07T00:12:27Z","status":200}` + "\n"},
			[]string{"lines.json"}, []string{"lines.json:2: no method and path fields"}},
		{"empty file", map[string]string{"empty.log": ""},
			[]string{"empty.log"}, []string{"empty.log: empty: no logged request in it"}},
		{"blank lines only", map[string]string{"blank.log": "\n\n  \n"},
			[]string{"blank.log"}, []string{"blank.log: empty"}},
		{"a good file, then a bad one", map[string]string{"good.log": good, "empty.log": ""},
			[]string{"good.log", "empty.log"}, []string{"empty.log: empty"}},
		{"missing file", nil,
			[]string{"nowhere.log"}, []string{"nowhere.log: no such file"}},
		{"bad format flag", map[string]string{"good.log": good},
			[]string{"--format", "apache", "good.log"}, []string{"--format must be combined or json", "usage: hload import access-log"}},
		{"bad min-share", map[string]string{"good.log": good},
			[]string{"--min-share", "100", "good.log"}, []string{"--min-share is a percent"}},
		{"json format asked, combined given", map[string]string{"good.log": good},
			[]string{"--format", "json", "good.log"}, []string{"good.log:1: not a JSON object"}},
		{"no file", nil, nil, []string{"which log?"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, content := range tc.files {
				writeFile(t, dir, name, content)
			}
			out := filepath.Join(dir, "out.hcl")
			args := []string{"import", "access-log", "-o", out}
			for _, a := range tc.args {
				if strings.Contains(a, ".") {
					a = filepath.Join(dir, a)
				}
				args = append(args, a)
			}
			var stdout, stderr bytes.Buffer
			code := run(args, &stdout, &stderr)
			if code != exitUsage {
				t.Errorf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, exitUsage, stdout.String(), stderr.String())
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr.String(), w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr.String())
				}
			}
			if _, err := os.Stat(out); !os.IsNotExist(err) {
				t.Errorf("%s was written (stat: %v)", out, err)
			}
			if stdout.Len() > 0 {
				t.Errorf("stdout has %q, want nothing", stdout.String())
			}
		})
	}
}

// TestImportAccessLogExample: examples/imported-access-log.hcl is what the
// command makes of examples/data/access.log (a real nginx's log of the
// quickstart), byte for byte, and it validates. Regenerate it with
//
//	go run ./cmd/hload import access-log examples/data/access.log -o examples/imported-access-log.hcl
func TestImportAccessLogExample(t *testing.T) {
	want, err := os.ReadFile("../../examples/imported-access-log.hcl")
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "imported-access-log.hcl")
	var stdout, stderr bytes.Buffer
	if code := run([]string{"import", "access-log", "../../examples/data/access.log", "-o", out}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr.String())
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("examples/imported-access-log.hcl is not what the command makes of examples/data/access.log now; regenerate it:\n%s", got)
	}
	// The table on stdout: one line per template and the file written.
	for _, w := range []string{"products_id  GET /products/{id}  56", "wrote " + out + ": 5 requests from 561 logged"} {
		if !strings.Contains(stdout.String(), w) {
			t.Errorf("stdout lacks %q:\n%s", w, stdout.String())
		}
	}
	stdout.Reset()
	if code := run([]string{"validate", "../../examples/imported-access-log.hcl"}, &stdout, &stderr); code != 0 {
		t.Errorf("validate: exit %d\n%s", code, stderr.String())
	}
}

// TestImportAccessLogStdout: without -o the test goes to stdout, whole,
// and the table to stderr; --feeder needs -o; -h prints the help.
func TestImportAccessLogStdout(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"import", "access-log", "../../examples/data/access.log"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr.String())
	}
	want, _ := os.ReadFile("../../examples/imported-access-log.hcl")
	if stdout.String() != string(want) || !strings.Contains(stderr.String(), "root         GET /") {
		t.Errorf("stdout is not the test, or stderr not the table:\nstdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	}
	stdout.Reset()
	stderr.Reset()
	if code := run([]string{"import", "access-log", "--feeder", "../../examples/data/access.log"}, &stdout, &stderr); code != exitUsage || !strings.Contains(stderr.String(), "--feeder writes CSV files beside the test: give -o FILE") {
		t.Errorf("--feeder without -o: exit %d\n%s", code, stderr.String())
	}
	stdout.Reset()
	stderr.Reset()
	if code := run([]string{"help", "import", "access-log"}, &stdout, &stderr); code != 0 || !strings.HasPrefix(stdout.String(), "Usage: hload import access-log [flags] FILE...") ||
		!strings.Contains(stdout.String(), "--min-share percent") || !strings.Contains(stdout.String(), "(default 1)") {
		t.Errorf("help: exit %d\n%s%s", code, stdout.String(), stderr.String())
	}
}

// TestImportAccessLogFeeder: --feeder writes a CSV of the ids seen beside
// the test, which reads it; the test validates.
func TestImportAccessLogFeeder(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "shop.hcl")
	var stdout, stderr bytes.Buffer
	if code := run([]string{"import", "access-log", "--feeder", "-o", out, "../../examples/data/access.log"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr.String())
	}
	csv, err := os.ReadFile(filepath.Join(dir, "shop-products_id.csv"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(csv)), "\n")
	if lines[0] != "products_id" || len(lines) != 1+52 {
		t.Errorf("shop-products_id.csv: header %q and %d rows, want products_id and the 52 ids seen", lines[0], len(lines)-1)
	}
	src, _ := os.ReadFile(out)
	if !strings.Contains(string(src), `path = "/products/${data.products_id.products_id}"`) {
		t.Errorf("the test does not read the feeder:\n%s", src)
	}
	if code := run([]string{"validate", out}, &stdout, &stderr); code != 0 {
		t.Errorf("validate: exit %d\n%s", code, stderr.String())
	}
}
