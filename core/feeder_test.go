package core

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/hload/hload/config"
	"github.com/hload/hload/metrics"
	"github.com/hload/hload/protocols"
	hloadhttp "github.com/hload/hload/protocols/http"
)

// userServer records the user query parameter of every request.
type userServer struct {
	mu    sync.Mutex
	users map[string]int
	order []string
}

func newUserServer(t *testing.T) (*userServer, string) {
	us := &userServer{users: map[string]int{}}
	srv := newCountingServer(t, func(w http.ResponseWriter, r *http.Request) {
		u := r.URL.Query().Get("user")
		us.mu.Lock()
		us.users[u]++
		us.order = append(us.order, u)
		us.mu.Unlock()
	})
	return us, srv.URL
}

// loadFeederTest writes rows users to users.csv beside the test and loads
// a scenario whose request sends data.users.name.
func loadFeederTest(t *testing.T, url, mode string, rows int, scenario string) *config.Test {
	t.Helper()
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("name,email\n")
	for i := range rows {
		fmt.Fprintf(&b, "user%d,user%d@example.com\n", i, i)
	}
	if err := os.WriteFile(filepath.Join(dir, "users.csv"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	src := fmt.Sprintf(`
variable "base_url" {}
data "csv" "users" {
  path = "users.csv"
  mode = %q
}
target "t" {
  base_url = var.base_url
}
%s
`, mode, scenario)
	test, diags := config.Load([]string{writeHCL(t, dir, src)}, config.Options{
		Protocols: protocols.NewRegistry(hloadhttp.New()),
		Vars:      map[string]string{"base_url": url},
	})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	return test
}

func writeHCL(t *testing.T, dir, src string) string {
	p := filepath.Join(dir, "test.hcl")
	if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestFeederModes runs one scenario over users.csv in each mode and
// checks the rows the server saw:
//   - unique: 8 VUs share 1,000 rows; the server sees each row exactly
//     once, and the scenario ends when they run out, long before its
//     iterations would;
//   - sequential: 25 iterations over 10 rows walk the rows in order and
//     wrap around;
//   - random: 2,000 draws (4 VUs x 500) over 20 rows reach every row.
func TestFeederModes(t *testing.T) {
	tests := []struct {
		mode       string
		rows       int
		vus        int
		iterations int
		check      func(t *testing.T, us *userServer, sum *metrics.Summary)
	}{
		{"unique", 1000, 8, 100000, func(t *testing.T, us *userServer, sum *metrics.Summary) {
			if got := sum.Scenarios["feed"].Iterations; got != 1000 {
				t.Errorf("%d iterations, want 1000 (one per row)", got)
			}
			if len(us.users) != 1000 {
				t.Fatalf("server saw %d distinct users, want 1000", len(us.users))
			}
			for u, n := range us.users {
				if n != 1 {
					t.Errorf("%s sent %d times", u, n)
				}
			}
		}},
		{"sequential", 10, 1, 25, func(t *testing.T, us *userServer, _ *metrics.Summary) {
			for i, u := range us.order {
				if want := fmt.Sprintf("user%d", i%10); u != want {
					t.Fatalf("iteration %d sent %s, want %s (order %v)", i, u, want, us.order)
				}
			}
			if len(us.order) != 25 {
				t.Fatalf("%d requests, want 25", len(us.order))
			}
		}},
		{"random", 20, 4, 500, func(t *testing.T, us *userServer, _ *metrics.Summary) {
			if len(us.users) != 20 {
				t.Fatalf("random covered %d of 20 rows: %v", len(us.users), us.users)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.mode, func(t *testing.T) {
			us, url := newUserServer(t)
			test := loadFeederTest(t, url, tt.mode, tt.rows, fmt.Sprintf(`
scenario "feed" {
  executor   = "iterations"
  vus        = %d
  iterations = %d
  request "r" {
    path  = "/%s"
    query = { user = data.users.name }
  }
}`, tt.vus, tt.iterations, tt.mode))
			sum := runTest(t, test, Options{})
			tt.check(t, us, sum)
		})
	}
}

// TestMillionRowFeeder runs 500 VUs over a 1,000,000-row file and reports
// the heap: the rows are held once, not copied per VU or per scenario.
func TestMillionRowFeeder(t *testing.T) {
	if testing.Short() {
		t.Skip("writes and loads a 40 MB file; scripts/test.sh runs it without -short")
	}
	_, url := newUserServer(t)
	heap := func() uint64 {
		var m runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	before := heap()
	test := loadFeederTest(t, url, "sequential", 1_000_000, `
scenario "a" {
  executor   = "iterations"
  vus        = 250
  iterations = 4
  request "r" {
    path  = "/a"
    query = { user = data.users.name }
  }
}
scenario "b" {
  executor   = "iterations"
  vus        = 250
  iterations = 4
  request "r" {
    path  = "/b"
    query = { user = data.users.email }
  }
}`)
	loaded := heap()
	sum := runTest(t, test, Options{})
	after := heap()
	runtime.KeepAlive(test)
	size, _ := os.Stat(filepath.Join(test.Dir, "users.csv"))
	t.Logf("file %.1f MB; heap %.1f MB before load, %.1f MB loaded, %.1f MB after 500 VUs ran %d iterations",
		mb(uint64(size.Size())), mb(before), mb(loaded), mb(after), sum.Scenarios["a"].Iterations+sum.Scenarios["b"].Iterations)
	// One copy of the rows, per scenario or per VU, would add at least the
	// file's size; the VUs' connections and histograms take far less.
	if grown := float64(after) - float64(loaded); grown > float64(size.Size()) {
		t.Errorf("the run grew the heap by %.1f MB: rows copied per VU or scenario?", grown/1e6)
	}
	if loadCost := float64(loaded) - float64(before); loadCost > 3*float64(size.Size()) {
		t.Errorf("loading cost %.1f MB for a %.1f MB file", loadCost/1e6, mb(uint64(size.Size())))
	}
}

func mb(b uint64) float64 { return float64(b) / 1e6 }
