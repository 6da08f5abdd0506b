// Package browsertest opens hload's HTML reports in headless Chromium for
// tests: from file://, with the network off, reading what each chart drew
// and what the tables show. It is imported by tests only.
package browsertest

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/hload/hload/internal/servicetest"
)

// DefaultChromium is where Debian's chromium is; scripts/chromium.sh
// installs it. HLOAD_CHROMIUM names another.
const DefaultChromium = "/usr/bin/chromium"

// chromiumPath is the browser the tests start.
func chromiumPath() string {
	if p := os.Getenv("HLOAD_CHROMIUM"); p != "" {
		return p
	}
	return DefaultChromium
}

// RequireChromium ends a test that finds no Chromium, by the rule every
// service follows (servicetest): a failure under scripts/test.sh, which
// installs it, and a skip that says how to install it in a test run alone.
func RequireChromium(t *testing.T) {
	t.Helper()
	servicetest.Chromium.File(t, chromiumPath())
}

// versionKey keys the browser's version in NewBrowser's context.
type versionKey struct{}

// Version returns the version of the browser NewBrowser started, as the
// browser reports it ("HeadlessChrome/148.0.7778.167").
func Version(browserCtx context.Context) string {
	if v, ok := browserCtx.Value(versionKey{}).(string); ok {
		return v
	}
	return "an unknown browser"
}

// NewBrowser starts headless Chromium with a new empty profile, and with
// every background fetch of its own turned off. It logs the browser's
// version, which every failure of a DevTools call names too.
func NewBrowser(t *testing.T) context.Context {
	t.Helper()
	RequireChromium(t)
	path := chromiumPath()
	profile, err := os.MkdirTemp("", "hload-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(profile) })
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.WindowSize(1280, 1000),
		chromedp.UserDataDir(profile),
	)
	ctx, cancel := chromedp.NewContext(alloc)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	// The first Run starts the browser; it lives as long as ctx.
	if err := chromedp.Do(ctx); err != nil {
		out, _ := exec.Command(path, "--version").CombinedOutput()
		t.Fatalf("starting %s (%s): %v", path, strings.TrimSpace(string(out)), err)
	}
	v, err := chromedp.CallBrowser(ctx, browser.GetVersion, cdp.Empty{})
	if err != nil {
		t.Fatalf("DevTools %s failed in %s: %v", browser.GetVersion.Method, path, err)
	}
	t.Logf("browser: %s, DevTools protocol %s", v.Product, v.ProtocolVersion)
	return context.WithValue(ctx, versionKey{}, v.Product)
}

// Page is what the browser read of a report.
type Page struct {
	Charts []struct {
		Title    string `json:"title"`
		Coloured int    `json:"coloured"`
		// GeneratorMark counts the pixels of the red (#d00) mark drawn
		// where hload said it was saturated.
		GeneratorMark int `json:"generator_mark"`
		// SaturationMark counts the pixels of the purple (#7b3294) mark
		// of a capacity search's saturation point.
		SaturationMark int `json:"saturation_mark"`
		// SaturationColumns counts the pixel columns that hold some of
		// that mark: 2 for one vertical line, 4 for two apart.
		SaturationColumns int `json:"saturation_columns"`
		Width             int `json:"width"`
		Height            int `json:"height"`
		// Points is how many x values the chart has (its data-points).
		Points int `json:"points"`
		// Pixels is a hash of its canvas's pixels: it changes when the
		// chart draws anything new.
		Pixels string `json:"pixels"`
	} `json:"charts"`
	Rows []struct {
		Scenario string            `json:"scenario"`
		Request  string            `json:"request"`
		Cells    map[string]string `json:"cells"`
	} `json:"rows"`
	// Tables are the rows of every table that has a data-table
	// attribute (the capacity steps, the comparison), by that name.
	Tables   map[string][]TableRow `json:"tables"`
	Metadata string                `json:"metadata"`
	// Generator is the text of the generator self-check's section, or "".
	Generator  string `json:"generator"`
	Screenshot []byte `json:"-"`
	// Drawn is the time from the navigation to the charts drawn.
	Drawn time.Duration `json:"-"`
}

// TableRow is a row of a table with a data-table attribute: its
// data-key, its table's data-scenario and its data-field cells.
type TableRow struct {
	Scenario string            `json:"scenario"`
	Key      string            `json:"key"`
	Cells    map[string]string `json:"cells"`
}

// readPage counts each chart's coloured pixels (the lines; axes, grid
// and stage marks are grey) and reads the request tables.
const readPage = `(() => {
  const out = {charts: [], rows: [], metadata: document.getElementById("metadata").innerText,
    generator: (document.getElementById("generator") || {innerText: ""}).innerText};
  document.querySelectorAll("div.chart").forEach(d => {
    const c = d.querySelector("canvas");
    const px = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
    let coloured = 0, mark = 0, sat = 0, hash = 2166136261;
    const satColumns = new Set();
    for (let i = 0; i < px.length; i += 4) {
      const r = px[i], g = px[i+1], b = px[i+2];
      if (px[i+3] > 0 && Math.max(r, g, b) - Math.min(r, g, b) > 60) coloured++;
      hash = Math.imul(hash ^ (r | g << 8 | b << 16 | px[i+3] << 24), 16777619);
      if (r === 221 && g === 0 && b === 0 && px[i+3] === 255) mark++;
      if (r === 123 && g === 50 && b === 148 && px[i+3] === 255) { sat++; satColumns.add((i / 4) % c.width); }
    }
    out.charts.push({title: d.dataset.title, coloured: coloured, generator_mark: mark, saturation_mark: sat, saturation_columns: satColumns.size, width: c.width, height: c.height,
      points: Number(d.dataset.points || 0), pixels: (hash >>> 0).toString(16)});
  });
  document.querySelectorAll("table.requests").forEach(t => t.querySelectorAll("tr[data-request]").forEach(tr => {
    const row = {scenario: t.dataset.scenario, request: tr.dataset.request, cells: {}};
    tr.querySelectorAll("td[data-field]").forEach(td => { row.cells[td.dataset.field] = td.textContent; });
    out.rows.push(row);
  }));
  out.tables = {};
  document.querySelectorAll("table[data-table]").forEach(t => t.querySelectorAll("tr[data-key]").forEach(tr => {
    const row = {scenario: t.dataset.scenario || "", key: tr.dataset.key, cells: {}};
    tr.querySelectorAll("td[data-field]").forEach(td => { row.cells[td.dataset.field] = td.textContent; });
    (out.tables[t.dataset.table] = out.tables[t.dataset.table] || []).push(row);
  }));
  return out;
})()`

// Open opens path from file:// and fails the test if the page asked for
// anything but itself. A step that fails names its DevTools method and
// the browser's version.
func Open(t *testing.T, browserCtx context.Context, path string) *Page {
	t.Helper()
	page, asked, err := load(browserCtx, path)
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range asked {
		t.Errorf("the report asked for %s: it must need no network", u)
	}
	return page
}

// watchScript records what the page's Content-Security-Policy refused,
// from inside the page: a second view of the same requests, which does not
// depend on how a browser release reports them to DevTools.
const watchScript = `window.__hloadRefused = [];
document.addEventListener("securitypolicyviolation", e => window.__hloadRefused.push(e.blockedURI || e.violatedDirective));`

// load opens path in a new tab and returns what the page showed and every
// URL it asked for other than itself (data: URLs aside). It sees the
// requests as watch does. It takes nothing offline: the emulation calls
// for that change from one Chromium release to the next, and the page's
// CSP already keeps it off the network.
func load(browserCtx context.Context, path string) (*Page, []string, error) {
	ctx, cancel := chromedp.NewContext(browserCtx)
	defer cancel()
	ctx, cancelTimeout := context.WithTimeout(ctx, 60*time.Second)
	defer cancelTimeout()
	fail := failure(browserCtx)
	w, err := watch(ctx, fail)
	if err != nil {
		return nil, nil, err
	}
	self := (&url.URL{Scheme: "file", Path: path}).String()
	began := time.Now()
	if err := chromedp.Do(ctx, chromedp.Navigate(self)); err != nil {
		return nil, nil, fail("Page.navigate", err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.body.getAttribute("data-charts") !== null`)); err != nil {
		return nil, nil, fail("Runtime.evaluate", fmt.Errorf("the charts' script did not finish: %w", err))
	}
	// One animation frame, so that uPlot's batched drawing is done.
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](nextFrame, chromedp.EvalAwaitPromise)); err != nil {
		return nil, nil, fail("Runtime.evaluate", err)
	}
	drawn := time.Since(began)
	pg, err := chromedp.Run(ctx, chromedp.Evaluate[Page](readPage))
	if err != nil {
		return nil, nil, fail("Runtime.evaluate", err)
	}
	pg.Drawn = drawn
	if pg.Screenshot, err = chromedp.Run(ctx, chromedp.FullScreenshot(100)); err != nil {
		return nil, nil, fail("Page.captureScreenshot", err)
	}
	asked, err := w.asked(ctx, fail)
	if err != nil {
		return nil, nil, err
	}
	return &pg, foreign(func(u string) bool { return u == self }, asked), nil
}

// nextFrame waits for one animation frame.
const nextFrame = `new Promise(r => requestAnimationFrame(() => r(true)))`

// failure returns how a failed DevTools call is told: its method and the
// browser's version.
func failure(browserCtx context.Context) func(method string, err error) error {
	version := Version(browserCtx)
	return func(method string, err error) error {
		return fmt.Errorf("DevTools %s failed in %s: %w", method, version, err)
	}
}

// watcher records what a tab asks for.
type watcher struct {
	mu      sync.Mutex
	fetched []string
}

// watch records every URL the tab of ctx asks for, from its next
// navigation on. It sees the requests through the Network domain's
// requestWillBeSent, which a browser sends for every request, the ones the
// page's Content-Security-Policy blocks included, and through the page's
// own securitypolicyviolation events.
func watch(ctx context.Context, fail func(string, error) error) (*watcher, error) {
	w := &watcher{}
	if err := chromedp.Listen(ctx, func(ev any) {
		if e, ok := ev.(*network.EventRequestWillBeSent); ok {
			w.mu.Lock()
			w.fetched = append(w.fetched, e.Request.URL)
			w.mu.Unlock()
		}
	}); err != nil {
		return nil, fail("Target.attachToTarget", err)
	}
	if _, err := chromedp.Call(ctx, network.Enable, network.EnableParams{}); err != nil {
		return nil, fail(network.Enable.Method, err)
	}
	if _, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: watchScript}); err != nil {
		return nil, fail(page.AddScriptToEvaluateOnNewDocument.Method, err)
	}
	return w, nil
}

// asked returns every URL the tab asked for so far, then those its policy
// refused.
func (w *watcher) asked(ctx context.Context, fail func(string, error) error) ([]string, error) {
	refused, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`window.__hloadRefused`))
	if err != nil {
		return nil, fail("Runtime.evaluate", err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return append(slices.Clone(w.fetched), refused...), nil
}

// foreign returns, once each and in order, the URLs that are not the
// page's own (self) and not data: URLs.
func foreign(self func(string) bool, urls []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, u := range urls {
		// A blob: URL is data the page made, under its own origin.
		if self(u) || self(strings.TrimPrefix(u, "blob:")) || strings.HasPrefix(u, "data:") || seen[u] {
			continue
		}
		seen[u] = true
		out = append(out, u)
	}
	return out
}

// SaveArtifact writes a test artifact into $HLOAD_ARTIFACTS, or else into
// the test's temporary folder.
func SaveArtifact(t *testing.T, name string, data []byte) {
	t.Helper()
	dir := os.Getenv("HLOAD_ARTIFACTS")
	if dir == "" {
		dir = t.TempDir()
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s (%d bytes)", path, len(data))
}
