// Package browsertest opens hload's HTML reports in headless Chromium for
// tests: from file://, with the network off, reading what each chart drew
// and what the tables show. It is imported by tests only.
package browsertest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// ChromiumPath is where Debian's chromium is; scripts/chromium.sh
// installs it.
const ChromiumPath = "/usr/bin/chromium"

// RequireChromium skips only a test run alone, without scripts/test.sh,
// on a machine without chromium; under scripts/test.sh (which installs it
// and sets HLOAD_REQUIRE_SERVICES) a missing chromium fails.
func RequireChromium(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(ChromiumPath); err == nil {
		return
	}
	if os.Getenv("HLOAD_REQUIRE_SERVICES") != "" {
		t.Fatalf("%s is missing; scripts/chromium.sh installs it", ChromiumPath)
	}
	t.Skipf("%s is missing and HLOAD_REQUIRE_SERVICES is unset (run alone, outside scripts/test.sh): run scripts/chromium.sh to install it", ChromiumPath)
}

// NewBrowser starts headless Chromium with a new empty profile, and with
// every background fetch of its own turned off.
func NewBrowser(t *testing.T) context.Context {
	t.Helper()
	profile, err := os.MkdirTemp("", "hload-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(profile) })
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(ChromiumPath),
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
		if _, statErr := os.Stat(ChromiumPath); statErr == nil {
			out, _ := exec.Command(ChromiumPath, "--version").CombinedOutput()
			t.Logf("chromium --version: %s", out)
		}
		t.Fatalf("starting chromium: %v", err)
	}
	return ctx
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
    let coloured = 0, mark = 0, sat = 0;
    const satColumns = new Set();
    for (let i = 0; i < px.length; i += 4) {
      const r = px[i], g = px[i+1], b = px[i+2];
      if (px[i+3] > 0 && Math.max(r, g, b) - Math.min(r, g, b) > 60) coloured++;
      if (r === 221 && g === 0 && b === 0 && px[i+3] === 255) mark++;
      if (r === 123 && g === 50 && b === 148 && px[i+3] === 255) { sat++; satColumns.add((i / 4) % c.width); }
    }
    out.charts.push({title: d.dataset.title, coloured: coloured, generator_mark: mark, saturation_mark: sat, saturation_columns: satColumns.size, width: c.width, height: c.height});
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

// Open opens path from file:// with the network off, and fails if
// the page asks for anything but itself.
func Open(t *testing.T, browser context.Context, path string) *Page {
	t.Helper()
	ctx, cancel := chromedp.NewContext(browser)
	defer cancel()
	ctx, cancelTimeout := context.WithTimeout(ctx, 60*time.Second)
	defer cancelTimeout()

	var mu sync.Mutex
	var fetched []string
	if err := chromedp.Listen(ctx, func(ev any) {
		if e, ok := ev.(*network.EventRequestWillBeSent); ok {
			mu.Lock()
			fetched = append(fetched, e.Request.URL)
			mu.Unlock()
		}
	}); err != nil {
		t.Fatal(err)
	}
	offline := chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
		if _, err := chromedp.Call(ctx, network.Enable, network.EnableParams{}); err != nil {
			return err
		}
		_, err := chromedp.Call(ctx, network.EmulateNetworkConditionsByRule, network.EmulateNetworkConditionsByRuleParams{
			MatchedNetworkConditions: []*network.Conditions{{Offline: true, DownloadThroughput: -1, UploadThroughput: -1}},
		})
		return err
	})
	if err := chromedp.Do(ctx, offline); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	if err := chromedp.Do(ctx, chromedp.Navigate("file://"+path)); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.body.getAttribute("data-charts") !== null`)); err != nil {
		t.Fatalf("the charts' script did not finish: %v", err)
	}
	// One animation frame, so that uPlot's batched drawing is done.
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`new Promise(r => requestAnimationFrame(() => r(true)))`, chromedp.EvalAwaitPromise)); err != nil {
		t.Fatal(err)
	}
	drawn := time.Since(began)
	page, err := chromedp.Run(ctx, chromedp.Evaluate[Page](readPage))
	if err != nil {
		t.Fatal(err)
	}
	page.Drawn = drawn
	if page.Screenshot, err = chromedp.Run(ctx, chromedp.FullScreenshot(100)); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, u := range fetched {
		if !strings.HasPrefix(u, "file://") && !strings.HasPrefix(u, "data:") {
			t.Errorf("the report asked for %s: it must need no network", u)
		}
	}
	return &page
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
