package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/hload/hload/metrics"
)

// figures are what a tool reports of one run.
type figures struct {
	rps      float64 // requests per second, as the tool computes it
	requests int64   // requests completed, failed ones among them
	errors   int64   // failed requests: transport errors and non-2xx/3xx statuses
	// Of hload's open model only: the iterations dropped for want of a
	// VU, and the p99 of how late hload started its iterations, in ms
	// (the worst of the scenario's requests); -1 when not reported.
	dropped     int64
	latenessP99 float64
	// saturated is why hload said it was the bottleneck of the run (its
	// summary's generator.saturated and reason); "" when it did not.
	saturated string
}

var (
	wrkRequests     = regexp.MustCompile(`(?m)^\s*(\d+) requests in `)
	wrkRPS          = regexp.MustCompile(`(?m)^Requests/sec:\s+([0-9.]+)\s*$`)
	wrkSocketErrors = regexp.MustCompile(`(?m)^\s*Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)`)
	wrkNon2xx       = regexp.MustCompile(`(?m)^\s*Non-2xx or 3xx responses: (\d+)`)
)

// parseWrk reads wrk's report:
//
//	41415 requests in 1.00s, 6.99MB read
//	Socket errors: connect 0, read 0, write 0, timeout 0   (only when there are any)
//	Non-2xx or 3xx responses: 12                           (only when there are any)
//	Requests/sec:  41237.80
func parseWrk(out []byte) (figures, error) {
	f := figures{latenessP99: -1}
	m := wrkRequests.FindSubmatch(out)
	if m == nil {
		return f, errors.New(`wrk's output has no "N requests in" line`)
	}
	f.requests, _ = strconv.ParseInt(string(m[1]), 10, 64)
	m = wrkRPS.FindSubmatch(out)
	if m == nil {
		return f, errors.New(`wrk's output has no "Requests/sec:" line`)
	}
	var err error
	if f.rps, err = strconv.ParseFloat(string(m[1]), 64); err != nil {
		return f, fmt.Errorf("wrk's Requests/sec: %w", err)
	}
	if m := wrkSocketErrors.FindSubmatch(out); m != nil {
		for _, n := range m[1:] {
			v, _ := strconv.ParseInt(string(n), 10, 64)
			f.errors += v
		}
	}
	if m := wrkNon2xx.FindSubmatch(out); m != nil {
		v, _ := strconv.ParseInt(string(m[1]), 10, 64)
		f.errors += v
	}
	return f, nil
}

var (
	heyRPS    = regexp.MustCompile(`(?m)^\s*Requests/sec:\s+([0-9.]+)\s*$`)
	heyStatus = regexp.MustCompile(`^\s*\[(\d+)\]\s+(\d+) responses\s*$`)
	heyError  = regexp.MustCompile(`^\s*\[(\d+)\]\s+\S`)
)

// parseHey reads hey's summary: "Requests/sec:", the lines under "Status
// code distribution:" ("[200]	20268 responses") and those under "Error
// distribution:" ("[50]	Get ...: connection refused"), which counts
// requests that got no response.
func parseHey(out []byte) (figures, error) {
	f := figures{latenessP99: -1}
	m := heyRPS.FindSubmatch(out)
	if m == nil {
		return f, errors.New(`hey's output has no "Requests/sec:" line`)
	}
	var err error
	if f.rps, err = strconv.ParseFloat(string(m[1]), 64); err != nil {
		return f, fmt.Errorf("hey's Requests/sec: %w", err)
	}
	section := ""
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		if t := strings.TrimSpace(line); strings.HasSuffix(t, ":") {
			section = t
			continue
		}
		switch section {
		case "Status code distribution:":
			if m := heyStatus.FindStringSubmatch(line); m != nil {
				code, _ := strconv.Atoi(m[1])
				n, _ := strconv.ParseInt(m[2], 10, 64)
				f.requests += n
				if code < 200 || code >= 400 {
					f.errors += n
				}
			}
		case "Error distribution:":
			if m := heyError.FindStringSubmatch(line); m != nil {
				n, _ := strconv.ParseInt(m[1], 10, 64)
				f.requests += n
				f.errors += n
			}
		}
	}
	if f.requests == 0 {
		return f, errors.New(`hey's output has no "Status code distribution:" or "Error distribution:" lines`)
	}
	return f, nil
}

var (
	vegetaRequests = regexp.MustCompile(`(?m)^Requests\s+\[total, rate, throughput\]\s+(\d+), ([0-9.]+), ([0-9.]+)`)
	vegetaStatus   = regexp.MustCompile(`(?m)^Status Codes\s+\[code:count\]\s+(.*)$`)
)

// parseVegeta reads vegeta report's text:
//
//	Requests      [total, rate, throughput]         20903, 20973.82, 20949.29
//	Status Codes  [code:count]                      200:20903
//
// The rate is the requests sent per second of the attack. Status code 0
// counts the requests that got no response.
func parseVegeta(out []byte) (figures, error) {
	f := figures{latenessP99: -1}
	m := vegetaRequests.FindSubmatch(out)
	if m == nil {
		return f, errors.New(`vegeta report has no "Requests [total, rate, throughput]" line`)
	}
	f.requests, _ = strconv.ParseInt(string(m[1]), 10, 64)
	var err error
	if f.rps, err = strconv.ParseFloat(string(m[2]), 64); err != nil {
		return f, fmt.Errorf("vegeta's rate: %w", err)
	}
	m = vegetaStatus.FindSubmatch(out)
	if m == nil {
		return f, errors.New(`vegeta report has no "Status Codes [code:count]" line`)
	}
	var ok int64
	for _, pair := range strings.Fields(string(m[1])) {
		code, count, found := strings.Cut(pair, ":")
		c, err1 := strconv.Atoi(code)
		n, err2 := strconv.ParseInt(count, 10, 64)
		if !found || err1 != nil || err2 != nil {
			return f, fmt.Errorf("vegeta's status codes: cannot read %q", pair)
		}
		if c >= 200 && c < 400 {
			ok += n
		}
	}
	f.errors = f.requests - ok
	return f, nil
}

// parseHloadSummary reads the figures of hload's one request from its
// --summary-export JSON.
func parseHloadSummary(data []byte) (figures, error) {
	var sum metrics.Summary
	if err := json.Unmarshal(data, &sum); err != nil {
		return figures{}, fmt.Errorf("hload's summary: %w", err)
	}
	if sum.Failed != "" {
		return figures{}, fmt.Errorf("hload's run failed: %s", sum.Failed)
	}
	if sum.Interrupted {
		return figures{}, errors.New("hload's run was interrupted")
	}
	s := sum.Scenarios["s"]
	if s == nil || len(s.Requests) == 0 {
		return figures{}, errors.New(`hload's summary has no request in scenario "s"`)
	}
	// The flow test's three steps are three requests: all of them count.
	f := figures{dropped: s.DroppedIterations, latenessP99: -1, saturated: generatorSaturated(data)}
	for _, r := range s.Requests {
		f.rps += r.RPS
		f.requests += r.Count
		f.errors += r.Errors
		if late, ok := r.Metrics[metrics.MetricStartLateness]; ok && late.P99 > f.latenessP99 {
			f.latenessP99 = late.P99
		}
	}
	return f, nil
}

// generatorSaturated reads the summary's "generator": {"saturated": true,
// "reason": "..."}, which says that hload measured itself as much as the
// server: the reason, "saturated" when it gives none, or "" when hload was
// not saturated or its summary has no generator section.
func generatorSaturated(data []byte) string {
	var sum struct {
		Generator *struct {
			Saturated bool   `json:"saturated"`
			Reason    string `json:"reason"`
		} `json:"generator"`
	}
	if json.Unmarshal(data, &sum) != nil || sum.Generator == nil || !sum.Generator.Saturated {
		return ""
	}
	if sum.Generator.Reason == "" {
		return "saturated"
	}
	return sum.Generator.Reason
}
