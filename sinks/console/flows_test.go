package console_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hload/hload/config"
	"github.com/hload/hload/core"
	"github.com/hload/hload/protocols"
	hloadhttp "github.com/hload/hload/protocols/http"
	"github.com/hload/hload/sinks/console"
)

const flowTest = `
target "web" {
  protocol = "http"
  base_url = %q
}
scenario "shop" {
  executor   = "constant-vus"
  vus        = 3
  duration   = "3s"
  think_time = "5ms"
  setup {
    request "login" { path = "/login" }
  }
  flow "order" {
    weight = 2
    request "cart" { path = "/cart" }
    request "pay" { path = "/flaky" }
  }
  request "home" { path = "/" }
}
`

// TestFlowsOnScreen runs a test with a setup and a flow into the console
// sink: each progress line shows the flows, and the summary's flows table
// says what the target counted on its side: a login per VU for the setup,
// a /flaky call per order that ended, a failed order per 500 it answered.
func TestFlowsOnScreen(t *testing.T) {
	var logins, flaky, failed atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/login":
			logins.Add(1)
		case "/flaky":
			if flaky.Add(1)%3 == 0 {
				failed.Add(1)
				http.Error(w, "flaky", http.StatusInternalServerError)
				return
			}
		}
		io.WriteString(w, "ok")
	}))
	defer srv.Close()

	reg := protocols.NewRegistry(hloadhttp.New())
	test, diags := config.Parse(map[string][]byte{"test.hcl": fmt.Appendf(nil, flowTest, srv.URL)}, t.TempDir(), config.Options{Protocols: reg})
	if diags.HasErrors() {
		t.Fatalf("config: %s", diags.Error())
	}
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := core.Run(ctx, test, core.Options{Protocols: reg, Sinks: []core.Sink{console.New(&out, console.Options{NoColor: true})}}); err != nil {
		t.Fatalf("run: %v", err)
	}
	screen := out.String()
	t.Logf("server: %d logins, %d /flaky calls, %d answered 500; the console:\n%s", logins.Load(), flaky.Load(), failed.Load(), screen)

	progress := regexp.MustCompile(`(?m)^\[ *\d+s\] vus .*$`).FindAllString(screen, -1)
	if len(progress) < 3 {
		t.Fatalf("%d progress lines, want one a second", len(progress))
	}
	for _, l := range progress {
		if !regexp.MustCompile(`  flows/s \d+  flows failed \d+`).MatchString(l) {
			t.Errorf("progress line without flows: %q", l)
		}
	}
	rows := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^ +(setup|order) +(\d+ +\d+ +\d+) .*$`).FindAllStringSubmatch(screen, -1) {
		rows[m[1]] = strings.Join(strings.Fields(m[2]), " ")
	}
	if want := fmt.Sprintf("%d %d 0", logins.Load(), logins.Load()); rows["setup"] != want || logins.Load() != 3 {
		t.Errorf("setup row: ended completed failed = %q, want %q (3 VUs)", rows["setup"], want)
	}
	if want := fmt.Sprintf("%d %d %d", flaky.Load(), flaky.Load()-failed.Load(), failed.Load()); rows["order"] != want || failed.Load() == 0 {
		t.Errorf("order row: ended completed failed = %q, want %q", rows["order"], want)
	}
	if want := fmt.Sprintf("http_5xx %d", failed.Load()); !strings.Contains(screen, "  "+want+"\n") {
		t.Errorf("the order row does not end with the failures by kind %q", want)
	}
}
