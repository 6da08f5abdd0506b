package browsertest

import (
	"context"
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// Tab is a page open at an http:// address, for a test that watches it
// change as it goes (the live dashboard). Its methods fail the test, naming
// the DevTools method and the browser's version.
type Tab struct {
	t      *testing.T
	ctx    context.Context
	origin string
	w      *watcher
	fail   func(string, error) error
}

// OpenURL opens address in a new tab with a viewport of width×height CSS
// pixels, and returns once the page has loaded, whatever its scripts do
// next. The tab closes when the test ends.
func OpenURL(t *testing.T, browserCtx context.Context, address string, width, height int64) *Tab {
	t.Helper()
	u, err := url.Parse(address)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		t.Fatalf("OpenURL(%q): want an http:// address", address)
	}
	ctx, cancel := chromedp.NewContext(browserCtx)
	t.Cleanup(cancel)
	tab := &Tab{t: t, ctx: ctx, origin: u.Scheme + "://" + u.Host, fail: failure(browserCtx)}
	if tab.w, err = watch(ctx, tab.fail); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(width, height)); err != nil {
		t.Fatal(tab.fail("Emulation.setDeviceMetricsOverride", err))
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(address)); err != nil {
		t.Fatal(tab.fail("Page.navigate", err))
	}
	return tab
}

// Wait waits until the JavaScript expression is truthy, for timeout at
// most, then for one animation frame, so that what it waited for is drawn.
func (tab *Tab) Wait(expression string, timeout time.Duration) {
	tab.t.Helper()
	if _, err := chromedp.Run(tab.ctx, chromedp.Poll[chromedp.Void](expression,
		chromedp.WithPollingTimeout(timeout), chromedp.WithPollingInterval(20*time.Millisecond))); err != nil {
		tab.t.Fatal(tab.fail("Runtime.evaluate", fmt.Errorf("waiting %v for %s: %w", timeout, expression, err)))
	}
	if _, err := chromedp.Run(tab.ctx, chromedp.Evaluate[bool](nextFrame, chromedp.EvalAwaitPromise)); err != nil {
		tab.t.Fatal(tab.fail("Runtime.evaluate", err))
	}
}

// Eval returns the value of a JavaScript expression in the tab; of a
// promise, the value it resolves to.
func Eval[T any](tab *Tab, expression string) T {
	tab.t.Helper()
	v, err := chromedp.Run(tab.ctx, chromedp.Evaluate[T](expression, chromedp.EvalAwaitPromise))
	if err != nil {
		tab.t.Fatal(tab.fail("Runtime.evaluate", fmt.Errorf("%s: %w", expression, err)))
	}
	return v
}

// Read reads the page as Open does: its charts, request rows and tables
// (with no screenshot; see Screenshot).
func (tab *Tab) Read() *Page {
	tab.t.Helper()
	p := Eval[Page](tab, readPage)
	return &p
}

// Screenshot returns a PNG of the viewport.
func (tab *Tab) Screenshot() []byte {
	tab.t.Helper()
	png, err := chromedp.Run(tab.ctx, chromedp.CaptureScreenshot())
	if err != nil {
		tab.t.Fatal(tab.fail("Page.captureScreenshot", err))
	}
	return png
}

// Foreign returns, once each, the URLs the page asked for so far outside
// its own origin (data: URLs aside).
func (tab *Tab) Foreign() []string {
	tab.t.Helper()
	asked, err := tab.w.asked(tab.ctx, tab.fail)
	if err != nil {
		tab.t.Fatal(err)
	}
	return foreign(func(u string) bool {
		p, err := url.Parse(u)
		return err == nil && p.Scheme+"://"+p.Host == tab.origin
	}, asked)
}
