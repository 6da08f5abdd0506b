package demo

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestSlow: GET /slow sleeps the delay it is given before answering "ok"
// (the sleep is a floor under its latency), answers at once without one,
// and refuses a delay that is not a bounded duration with 400.
func TestSlow(t *testing.T) {
	h := NewHandler(Options{Products: testProducts})
	timed := func(target string) (*httptest.ResponseRecorder, time.Duration) {
		start := time.Now()
		rec := do(t, h, "GET", target, "")
		return rec, time.Since(start)
	}
	fast, fastTook := timed("/slow")
	slowRec, slowTook := timed("/slow?delay=150ms")
	zero, _ := timed("/slow?delay=0")
	for _, rec := range []*httptest.ResponseRecorder{fast, slowRec, zero} {
		if rec.Code != http.StatusOK || rec.Body.String() != "ok" {
			t.Fatalf("GET /slow = %d %q, want 200 \"ok\"", rec.Code, rec.Body.String())
		}
	}
	if slowTook < 150*time.Millisecond {
		t.Errorf("delay=150ms answered after %v: it did not sleep", slowTook)
	}
	if fastTook >= slowTook {
		t.Errorf("no delay took %v, delay=150ms took %v: the call without a delay slept too", fastTook, slowTook)
	}
	t.Logf("no delay: %v; delay=150ms: %v", fastTook, slowTook)

	for _, bad := range []string{"abc", "50", "-1ms", "2001ms", "1h", "NaN"} {
		// Bounded, so that a handler that took the delay would not hold
		// the test for an hour.
		ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequestWithContext(ctx, "GET", "/slow?delay="+bad, nil))
		cancel()
		if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), "must be a duration from 0 to 2s") {
			t.Errorf("delay=%s: %d %q, want 400 naming the bound", bad, rec.Code, rec.Body.String())
		}
	}
}

// TestSlowStopsWhenTheClientLeaves: a client that goes away ends the sleep,
// and nothing is written.
func TestSlowStopsWhenTheClientLeaves(t *testing.T) {
	h := NewHandler(Options{Products: testProducts})
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()
	req := httptest.NewRequestWithContext(ctx, "GET", "/slow?delay=2s", nil)
	rec := httptest.NewRecorder()
	done := make(chan struct{})
	go func() { h.ServeHTTP(rec, req); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the handler kept sleeping after its client left")
	}
	if rec.Body.Len() != 0 {
		t.Errorf("wrote %q to a client that left", rec.Body.String())
	}
}
