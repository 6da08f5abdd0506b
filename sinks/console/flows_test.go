package console_test

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/hload/hload/config"
	"github.com/hload/hload/core"
	"github.com/hload/hload/sinks/console"
	"github.com/hload/hload/sinks/sinktest"
)

// TestFlowsOnScreen runs a test with a setup and a flow into the console
// sink: each progress line shows the flows, and the summary's flows table
// says what the target counted on its side: a login per VU for the setup,
// a /flaky call per order that ended, a failed order per 500 it answered.
func TestFlowsOnScreen(t *testing.T) {
	var out bytes.Buffer
	_, shop := sinktest.RunFlows(t, "", config.Options{}, func(*config.Test, string) []core.Sink {
		return []core.Sink{console.New(&out, console.Options{NoColor: true})}
	})
	screen := out.String()
	t.Logf("server: %d logins, %d /flaky calls, %d answered 500; the console:\n%s", shop.Logins, shop.Flaky, shop.Failed, screen)

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
	if want := fmt.Sprintf("%d %d 0", shop.Logins, shop.Logins); rows["setup"] != want || shop.Logins != 3 {
		t.Errorf("setup row: ended completed failed = %q, want %q (3 VUs)", rows["setup"], want)
	}
	if want := fmt.Sprintf("%d %d %d", shop.Flaky, shop.Flaky-shop.Failed, shop.Failed); rows["order"] != want || shop.Failed == 0 {
		t.Errorf("order row: ended completed failed = %q, want %q", rows["order"], want)
	}
	if want := fmt.Sprintf("http_5xx %d", shop.Failed); !strings.Contains(screen, "  "+want+"\n") {
		t.Errorf("the order row does not end with the failures by kind %q", want)
	}
}
