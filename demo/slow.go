package demo

import (
	"fmt"
	"net/http"
	"time"
)

// MaxSlowDelay bounds the delay GET /slow sleeps, so that a typo in a load
// test (delay=50s for 50ms) cannot hold thousands of connections open on
// the machine that also runs the load generator.
const MaxSlowDelay = 2 * time.Second

// slow serves GET /slow?delay=D: it answers "ok" after sleeping D, a Go
// duration such as 50ms (0 or no delay answers at once). It is a page made
// slow on purpose, to show a regression between two runs with hload
// compare, or to give a test a server whose latency is known. A delay that
// is not a duration, is negative, or is above MaxSlowDelay gets 400 and no
// sleep. A client that goes away ends the sleep.
func slow(w http.ResponseWriter, r *http.Request) {
	var delay time.Duration
	if text := r.URL.Query().Get("delay"); text != "" {
		d, err := time.ParseDuration(text)
		if err != nil || d < 0 || d > MaxSlowDelay {
			http.Error(w, fmt.Sprintf("delay %q must be a duration from 0 to %s, such as 50ms", text, MaxSlowDelay), http.StatusBadRequest)
			return
		}
		delay = d
	}
	if delay > 0 {
		t := time.NewTimer(delay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-r.Context().Done():
			return
		}
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Write([]byte("ok"))
}
