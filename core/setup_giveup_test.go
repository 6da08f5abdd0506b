package core

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// TestIterationsGiveUpAFailingSetup: the iterations executor ends when
// every VU is done, so a VU whose setup never succeeds gives up after
// iterationsSetupTries tries instead of holding the run forever. The
// server counts exactly that many logins from it, no work, and the
// summary says so; the VU whose setup succeeds runs all its iterations.
func TestIterationsGiveUpAFailingSetup(t *testing.T) {
	ls := newLoginServer(t, func(user string, _ int) bool { return user != "vu-2" })
	test := loadTest(t, loginScenario(`  executor   = "iterations"
  vus        = 2
  iterations = 5`), map[string]string{"base_url": ls.URL})
	done := make(chan journeyResult, 1)
	go func() { done <- runJourney(t, test, 5*time.Millisecond) }()
	var res journeyResult
	select {
	case res = <-done:
	case <-time.After(time.Minute):
		t.Fatal("the run did not end a minute after a VU's setup kept failing")
	}
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if got := len(ls.attempts["vu-2"]); got != iterationsSetupTries {
		t.Errorf("vu-2 tried to log in %d times, want %d", got, iterationsSetupTries)
	}
	if ls.work["vu-2"] != 0 || ls.work["vu-1"] != 5 {
		t.Errorf("work by VU: %v; want 5 from vu-1 and none from vu-2", ls.work)
	}
	want := `scenario "s": 1 VUs gave up their setup after 6 failed tries, and ran none of their iterations`
	if !slices.ContainsFunc(res.sum.Warnings, func(w string) bool { return strings.Contains(w, want) }) {
		t.Errorf("warnings %q lack %q", res.sum.Warnings, want)
	}
}
