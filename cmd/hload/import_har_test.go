package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclwrite"

	"github.com/hload/hload/demo"
	"github.com/hload/hload/sinks/html/browsertest"
)

// harRecord re-records examples/data/journey.har, against a demo shop on
// 127.0.0.1:8080 (the address `hload demo --listen 127.0.0.1:8080`
// serves), and regenerates examples/imported-journey.hcl from it.
var harRecord = flag.Bool("har-record", false, "re-record examples/data/journey.har and regenerate examples/imported-journey.hcl")

// harJourney is the demo shop's journey as a page runs it: log in, list
// the products, open the second one listed, order it with the token, with
// a user's pauses between. It resolves to the order's status.
const harJourney = `(async () => {
  const pause = ms => new Promise(r => setTimeout(r, ms));
  const login = await fetch("/api/login", {method: "POST",
    headers: {"Content-Type": "application/json", "Accept": "application/json"},
    body: JSON.stringify({user: "alice"})});
  const token = (await login.json()).token;
  await pause(300);
  const auth = {"Accept": "application/json", "Authorization": "Bearer " + token};
  const list = await (await fetch("/api/products", {headers: auth})).json();
  await pause(400);
  const id = list.items[1].id;
  await (await fetch("/api/products/" + id, {headers: auth})).json();
  await pause(500);
  const order = await fetch("/api/orders", {method: "POST",
    headers: {...auth, "Content-Type": "application/json", "X-User": "alice"},
    body: JSON.stringify({product_id: id, quantity: 1})});
  await order.json();
  return order.status;
})()`

// recordJourney drives the journey through headless Chromium against the
// demo at base and returns the HAR its Network events make, and the token
// the demo gave the browser.
func recordJourney(t *testing.T, base string) ([]byte, string) {
	t.Helper()
	browser := browsertest.NewBrowser(t)
	tab, cancel := chromedp.NewContext(browser)
	defer cancel()
	tab, cancelTimeout := context.WithTimeout(tab, time.Minute)
	defer cancelTimeout()
	rec, err := browsertest.Record(tab)
	if err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(tab, chromedp.Navigate(base+"/")); err != nil {
		t.Fatalf("opening %s: %v", base, err)
	}
	status, err := chromedp.Run(tab, chromedp.Evaluate[int](harJourney, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("the journey in the page: %v", err)
	}
	if status != 201 {
		t.Fatalf("the browser's order got %d, want 201", status)
	}
	if err := rec.Wait(tab); err != nil {
		t.Fatal(err)
	}
	data, err := rec.HAR(tab)
	if err != nil {
		t.Fatal(err)
	}
	token := regexp.MustCompile(`"Bearer ([A-Z0-9]+)"`).FindSubmatch(data)
	if token == nil {
		t.Fatalf("the HAR holds no bearer token:\n%s", data)
	}
	return data, string(token[1])
}

// TestImportHARFromChromium: a journey recorded by Chromium becomes a test
// whose setup captures the login's token and whose order carries it and an
// id the list showed; applied with 10 VUs to another demo, that demo counts
// no order with a wrong or missing token and none for an id never listed,
// and the orders it created are the ones hload counts.
func TestImportHARFromChromium(t *testing.T) {
	addr := ""
	if *harRecord {
		addr = "127.0.0.1:8080"
	}
	recorded, err := demo.Start(t.Context(), addr, demo.Options{ListOmitEvery: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer recorded.Close()
	data, token := recordJourney(t, recorded.URL())
	browsertest.SaveArtifact(t, "journey.har", data)
	dir := t.TempDir()
	writeFile(t, dir, "journey.har", string(data))

	r := hload(t, dir, "import", "har", "journey.har", "-o", "imported.hcl")
	if r.code != 0 {
		t.Fatalf("import: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	t.Logf("import:\n%s", r.stdout)
	src, err := os.ReadFile(filepath.Join(dir, "imported.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("imported.hcl:\n%s", src)
	if bytes.Contains(src, []byte(token)) {
		t.Errorf("the imported test holds the recorded token %s; it must capture it", token)
	}
	checkJourneyShape(t, src)

	if *harRecord {
		if err := os.WriteFile("../../examples/data/journey.har", data, 0o644); err != nil {
			t.Fatal(err)
		}
		r := hload(t, ".", "import", "har", "../../examples/data/journey.har", "-o", "../../examples/imported-journey.hcl")
		if r.code != 0 {
			t.Fatalf("import of the example: exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
	}

	target, err := demo.Start(t.Context(), "", demo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer target.Close()
	r = hload(t, dir, "apply", "imported.hcl", "--var", "base_url="+target.URL(), "--var", "vus=10", "--var", "duration=3s",
		"--summary-export", "summary.json", "--quiet")
	if r.code != 0 {
		t.Fatalf("apply: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	st := target.JourneyStats()
	t.Logf("demo: %d logins, %d lists (%d without items), %d details, %d orders: %d created, %d with a bad token, %d not listed; %d unauthorized",
		st.Logins, st.Lists, st.ListsWithoutItems, st.Details, st.Orders, st.OrdersCreated, st.OrdersBadToken, st.OrdersNotListed, st.Unauthorized)
	if st.OrdersBadToken != 0 || st.Unauthorized != 0 {
		t.Errorf("the demo counts %d orders with a wrong or missing token and %d unauthorized requests; want 0", st.OrdersBadToken, st.Unauthorized)
	}
	if st.OrdersNotListed != 0 || st.DetailsNotListed != 0 {
		t.Errorf("the demo counts %d orders and %d details for ids never listed to the token; want 0", st.OrdersNotListed, st.DetailsNotListed)
	}
	if st.OrdersCreated == 0 {
		t.Errorf("the demo created no order")
	}
	if st.Logins != 10 {
		t.Errorf("the demo counts %d logins; want 10, the setup of each VU once", st.Logins)
	}
	var sum struct {
		Scenarios map[string]struct {
			Requests map[string]struct {
				Count  int64            `json:"count"`
				Status map[string]int64 `json:"status"`
			} `json:"requests"`
		} `json:"scenarios"`
	}
	raw, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &sum); err != nil {
		t.Fatal(err)
	}
	if got := sum.Scenarios["recorded"].Requests["post_orders"].Status["201"]; got != st.OrdersCreated {
		t.Errorf("hload counts %d orders answered 201, the demo created %d", got, st.OrdersCreated)
	}
}

// checkJourneyShape reads the imported test as HCL: a setup whose login
// captures the token, and a flow whose order sends it as a bearer token
// with the id the list showed.
func checkJourneyShape(t *testing.T, src []byte) {
	t.Helper()
	f, diags := hclwrite.ParseConfig(src, "imported.hcl", hcl.InitialPos)
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	sc := f.Body().FirstMatchingBlock("scenario", []string{"recorded"})
	if sc == nil {
		t.Fatal(`no scenario "recorded"`)
	}
	expr := func(b *hclwrite.Body, name string) string {
		if a := b.GetAttribute(name); a != nil {
			return strings.Join(strings.Fields(string(a.Expr().BuildTokens(nil).Bytes())), " ")
		}
		return ""
	}
	setup := sc.Body().FirstMatchingBlock("setup", nil)
	if setup == nil {
		t.Fatal("the imported test has no setup")
	}
	login := setup.Body().FirstMatchingBlock("request", []string{"login"})
	if login == nil || login.Body().FirstMatchingBlock("capture", nil) == nil {
		t.Fatal("the setup has no login that captures")
	}
	if got := expr(login.Body().FirstMatchingBlock("capture", nil).Body(), "token"); got != `json("token")` {
		t.Errorf("the login captures token = %q; want json(\"token\")", got)
	}
	flow := sc.Body().FirstMatchingBlock("flow", []string{"journey"})
	if flow == nil {
		t.Fatal(`no flow "journey"`)
	}
	order := flow.Body().FirstMatchingBlock("request", []string{"post_orders"})
	if order == nil {
		t.Fatal("the flow has no order (post_orders)")
	}
	headers := expr(order.Body(), "headers")
	if !strings.Contains(headers, `Authorization = "Bearer ${vu.vars.token}"`) {
		t.Errorf("the order sends headers %s; want the captured token as its Authorization", headers)
	}
	if body := expr(order.Body(), "json"); !strings.Contains(body, "product_id = vu.vars.product_id") {
		t.Errorf("the order sends %s; want the product id captured from the list", body)
	}
}

// TestImportHARBadInput: a file that is not a whole HAR is exit 2, with
// the file, line and column, and nothing is written.
func TestImportHARBadInput(t *testing.T) {
	whole, err := os.ReadFile("../../examples/data/journey.har")
	if err != nil {
		t.Fatal(err)
	}
	at := bytes.Index(whole, []byte(`/api/products"`))
	if at < 0 {
		t.Fatal("examples/data/journey.har has no request to /api/products")
	}
	cut := whole[:at]
	cutLine := bytes.Count(cut, []byte("\n")) + 1
	cutCol := len(cut) - bytes.LastIndexByte(cut, '\n')
	cases := []struct {
		name, content, at, says string
	}{
		{"truncated", string(cut), "journey.har:" + itoaHAR(cutLine) + ":" + itoaHAR(cutCol) + ":", "cut short"},
		{"empty", "", "journey.har:1:1:", "the file is empty"},
		{"only white space", "\n  \n", "journey.har:1:1:", "the file is empty"},
		{"a syntax error", "{\n  \"log\": {\n    \"entries\": [\n      {\"request\": }\n", "journey.har:4:19:", "not valid JSON"},
		{"not a HAR", `{"name": "x"}`, "journey.har:1:1:", `no "log"`},
		{"a wrong type", "{\"log\": {\"entries\": [\n {\"startedDateTime\": \"2026-01-01T00:00:00Z\", \"time\": \"slow\"}]}}", "journey.har:2:", "a HAR has a number there"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, dir, "journey.har", c.content)
			r := hload(t, dir, "import", "har", "journey.har", "-o", "out.hcl")
			if r.code != 2 {
				t.Errorf("exit %d, want 2\n%s%s", r.code, r.stdout, r.stderr)
			}
			if !strings.Contains(r.stderr, c.at) || !strings.Contains(r.stderr, c.says) {
				t.Errorf("stderr does not say %q at %s:\n%s", c.says, c.at, r.stderr)
			}
			if _, err := os.Stat(filepath.Join(dir, "out.hcl")); !os.IsNotExist(err) {
				t.Errorf("out.hcl was written (stat: %v); nothing must be", err)
			}
		})
	}
}

// TestImportHARExample: examples/imported-journey.hcl is what the command
// makes of examples/data/journey.har, byte for byte (go test -run
// TestImportHARFromChromium -har-record re-records both).
func TestImportHARExample(t *testing.T) {
	r := hload(t, ".", "import", "har", "../../examples/data/journey.har")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	want, err := os.ReadFile("../../examples/imported-journey.hcl")
	if err != nil {
		t.Fatal(err)
	}
	if r.stdout != string(want) {
		t.Errorf("hload import har examples/data/journey.har differs from examples/imported-journey.hcl:\n%s", r.stdout)
	}
}

func itoaHAR(n int) string { return strconv.Itoa(n) }
