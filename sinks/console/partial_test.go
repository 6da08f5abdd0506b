package console_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hload/hload/config"
	"github.com/hload/hload/core"
	"github.com/hload/hload/protocols"
	hloadhttp "github.com/hload/hload/protocols/http"
	"github.com/hload/hload/sinks/console"
)

// TestLastPartialIntervalOnScreen runs a test whose load ends half-way
// through its second interval, while its one VU thinks: the last
// interval is partial and nothing ends in it. The console prints one
// progress line per full interval and no trailing line that repeats the
// last one's second and rate with a p95 of 0.
func TestLastPartialIntervalOnScreen(t *testing.T) {
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		io.WriteString(w, "ok")
	}))
	defer srv.Close()
	// One call at the start, then a think time that outlasts the load:
	// the interval from 1 s to the end at 1.5 s has no call.
	hcl := fmt.Sprintf(`
target "web" {
  protocol = "http"
  base_url = %q
}
scenario "s" {
  executor   = "constant-vus"
  vus        = 1
  duration   = "1.5s"
  think_time = "5s"
  request "home" { path = "/" }
}
`, srv.URL)
	reg := protocols.NewRegistry(hloadhttp.New())
	test, diags := config.Parse(map[string][]byte{"test.hcl": []byte(hcl)}, t.TempDir(), config.Options{Protocols: reg})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sum, err := core.Run(ctx, test, core.Options{Protocols: reg, Sinks: []core.Sink{console.New(&out, console.Options{NoColor: true})}})
	if err != nil {
		t.Fatal(err)
	}
	screen := out.String()
	t.Logf("the server counted %d calls; the console:\n%s", calls.Load(), screen)
	if n := sum.Scenarios["s"].Requests["home"].Count; n != 1 || calls.Load() != 1 {
		t.Fatalf("summary %d calls, the server %d; want 1", n, calls.Load())
	}
	progress := regexp.MustCompile(`(?m)^\[ *\d+s\] vus .*$`).FindAllString(screen, -1)
	if len(progress) != 1 || !regexp.MustCompile(`^\[   1s\] vus 1  rps 1  err 0%  p95 \S+ms`).MatchString(progress[0]) {
		t.Errorf("progress lines %q, want the one of the first second only", progress)
	}
}
