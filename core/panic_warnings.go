package core

import (
	"fmt"
	"maps"
	"slices"

	"github.com/hload/hload/config"
	"github.com/hload/hload/metrics"
	"github.com/hload/hload/protocols"
)

// panicWarning says that calls of a request panicked in their protocol's
// Do, naming the protocol (a plugin's name), the request and the first
// message the protocol gave (the panic's value and first stack lines), or
// says "". The calls are counted as failed, of kind panic: a warning also
// says it, because a panic is a bug in the protocol, not the target's
// answer, and a run with a few of them would otherwise pass unnoticed.
func panicWarning(test *config.Test, scenario, request string, f *metrics.RequestFigures, sofar string) string {
	n := f.ErrorsByKind[string(protocols.ErrPanic)]
	if n == 0 {
		return ""
	}
	proto := "its protocol"
	if req := findRequest(test, scenario, request); req != nil {
		proto = fmt.Sprintf("protocol %q (target %q)", req.Protocol, req.Target)
	}
	return fmt.Sprintf("scenario %q, request %q: %d calls%s panicked in %s, counted as failed%s",
		scenario, request, n, sofar, proto, firstMessage(f, string(protocols.ErrPanic)))
}

// findRequest returns the scenario's request block of that name, or nil.
func findRequest(test *config.Test, scenario, request string) *config.Request {
	if test == nil {
		return nil
	}
	for _, sc := range test.Scenarios {
		if sc.Name != scenario {
			continue
		}
		for _, r := range sc.Requests {
			if r.Name == request {
				return r
			}
		}
	}
	return nil
}

// panicWarnings are the summary's panicWarning of each request.
func panicWarnings(test *config.Test, sum *metrics.Summary) []string {
	var out []string
	for _, name := range slices.Sorted(maps.Keys(sum.Scenarios)) {
		reqs := sum.Scenarios[name].Requests
		for _, req := range slices.Sorted(maps.Keys(reqs)) {
			if r := reqs[req]; r != nil {
				if w := panicWarning(test, name, req, r, ""); w != "" {
					out = append(out, w)
				}
			}
		}
	}
	return out
}

// livePanicWarning is the panicWarning of an interval's series, with the
// messages kept over the run so far: an interval's figures carry none.
// It is called once per request at most, when its first panic is seen.
func livePanicWarning(r *run, f *metrics.SeriesFigures) string {
	if f.ErrorsByKind[string(protocols.ErrPanic)] == 0 {
		return ""
	}
	figures := f.RequestFigures
	if r.agg != nil {
		if total := r.agg.Requests(0)[f.Scenario][f.Request]; total != nil {
			figures.ErrorMessages = total.ErrorMessages
		}
	}
	return panicWarning(r.test, f.Scenario, f.Request, &figures, " so far")
}
