package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

func TestParseRates(t *testing.T) {
	rates, err := parseRates(defaultSweepRates)
	if err != nil || !slices.Equal(rates, []int{2000, 5000, 10000, 15000, 20000, 25000, 30000, 35000, 40000}) {
		t.Errorf("the default rates = %v, %v", rates, err)
	}
	if rates, err := parseRates("2000, 4000"); err != nil || !slices.Equal(rates, []int{2000, 4000}) {
		t.Errorf("2000, 4000 = %v, %v", rates, err)
	}
	// A sweep stops at its first rate not held, so the rates must rise.
	for _, bad := range []string{"", "0", "-5", "x", "2000,", "4000,2000", "2000,2000"} {
		if rates, err := parseRates(bad); err == nil {
			t.Errorf("parseRates(%q) = %v, no error", bad, rates)
		}
	}
	if _, err := parseFlags([]string{"-sweep-rates", "4000,2000"}, &strings.Builder{}); err == nil {
		t.Error("-sweep-rates 4000,2000: no error")
	}
}

// step is a sweep run at rate that sent sent of its plan (rate x 10 s),
// with a start lateness p99 of late ms when late >= 0.
func step(rate int, sent float64, dropped int64, late float64) result {
	r := result{Planned: int64(rate) * 10, Requests: int64(sent * float64(rate) * 10), Dropped: dropped, ServerConnections: 40}
	if late >= 0 {
		r.LatenessP99Ms = &late
	}
	return r
}

// A rate holds when the tool sent within 0.5 % of the plan and dropped
// nothing, and for hload when its start lateness p99 was under 2 ms; a
// run with an error never holds.
func TestSweepHeld(t *testing.T) {
	for _, tt := range []struct {
		name     string
		r        result
		lateness bool
		held     bool
		why      string
	}{
		{"hload on plan", step(10000, 1, 0, 0.4), true, true, ""},
		{"0.5 % short", step(10000, 0.995, 0, 0.4), true, true, ""},
		{"0.6 % short", step(10000, 0.994, 0, 0.4), true, false, "sent 99.40 % of the plan"},
		{"0.6 % over", step(10000, 1.006, 0, 0.4), true, false, "sent 100.60 % of the plan"},
		{"one dropped", step(10000, 1, 1, 0.4), true, false, "1 dropped"},
		{"lateness at 2 ms", step(10000, 1, 0, 2), true, false, "start lateness p99 2.00 ms"},
		{"lateness just under", step(10000, 1, 0, 1.99), true, true, ""},
		{"hload without lateness", step(10000, 1, 0, -1), true, false, "no start lateness reported"},
		{"vegeta reports none", step(10000, 1, 0, -1), false, true, ""},
		{"vegeta short", step(10000, 0.99, 0, -1), false, false, "sent 99.00 % of the plan"},
		{"requests failed", result{Planned: 10, Requests: 10, Error: "3 of 10\nrequests failed"}, false, false, "3 of 10 requests failed"},
		{"no plan", result{Requests: 10}, false, false, "no plan"},
	} {
		held, why := held(tt.r, tt.lateness)
		if held != tt.held || why != tt.why {
			t.Errorf("%s: held %v %q, want %v %q", tt.name, held, why, tt.held, tt.why)
		}
	}
}

func TestHighestHeld(t *testing.T) {
	s := func(rate int, held bool) sweepStep { return sweepStep{Rate: rate, Held: held} }
	for _, tt := range []struct {
		steps []sweepStep
		want  int
	}{
		{nil, 0},
		{[]sweepStep{s(5000, false)}, 0},
		{[]sweepStep{s(5000, true), s(10000, true), s(15000, false)}, 10000},
		{[]sweepStep{s(5000, true), s(10000, true)}, 10000},
		// A rate held above one that was not does not count.
		{[]sweepStep{s(5000, true), s(10000, false), s(15000, true)}, 5000},
	} {
		if got := highest(tt.steps, isHeld); got != tt.want {
			t.Errorf("highest(%+v, isHeld) = %d, want %d", tt.steps, got, tt.want)
		}
		// The same steps by Sent: the criterion is the one asked for.
		sent := slices.Clone(tt.steps)
		for i := range sent {
			sent[i].Sent, sent[i].Held = sent[i].Held, false
		}
		if got := highest(sent, isSent); got != tt.want {
			t.Errorf("highest(%+v, isSent) = %d, want %d", sent, got, tt.want)
		}
	}
}

// sweepTools are the sweep's tools as cases() builds them: hload and the
// floor (both held to their lateness) and vegeta.
func sweepTools(t *testing.T) []*tool {
	t.Helper()
	for _, c := range cases() {
		if c.name == "open-sweep" {
			return c.tools
		}
	}
	t.Fatal("no case open-sweep")
	return nil
}

// Each tool runs at each rate, the tools interleaved, until its first
// rate not held; a rate whose requests failed is not held and does not
// fail the harness, any other error does.
func TestSweepRound(t *testing.T) {
	tools := sweepTools(t)
	rates := []int{5000, 10000, 15000, 20000, 25000, 30000, 35000, 40000}
	var calls []string
	run := func(tl *tool, rate int) (result, error) {
		calls = append(calls, fmt.Sprintf("%s@%d", strings.Split(tl.name, "-")[0], rate))
		if strings.HasPrefix(tl.name, "vegeta") {
			r := step(rate, 1, 0, -1)
			if rate == 15000 {
				return r, requestsFailed{failed: 3, of: r.Requests}
			}
			return r, nil
		}
		// Late from 30,000/s on, and short of the plan at 40,000/s: the
		// late rates are sent in full, not held, and the sweep goes on.
		switch {
		case rate == 40000:
			return step(rate, 0.98, 0, 9), nil
		case rate >= 30000:
			return step(rate, 1, 0, 2.5), nil
		}
		return step(rate, 1, 0, 0.5), nil
	}
	runs, failed := sweepRound(rates, tools, 2, run)
	want := "hload@5000 vegeta@5000 floor@5000 hload@10000 vegeta@10000 floor@10000 hload@15000 vegeta@15000 floor@15000 " +
		"hload@20000 floor@20000 hload@25000 floor@25000 hload@30000 floor@30000 hload@35000 floor@35000 hload@40000 floor@40000"
	if got := strings.Join(calls, " "); got != want {
		t.Errorf("runs %s\nwant %s", got, want)
	}
	if len(failed) != 0 {
		t.Errorf("failed %v: requests that failed at a rate are a rate not held", failed)
	}
	if len(runs) != 3 || runs[2].Highest != 25000 || runs[0].Highest != 25000 || runs[1].Highest != 10000 || runs[0].Round != 2 || runs[1].Steps[2].Run.Round != 2 {
		t.Fatalf("runs %+v", runs)
	}
	if runs[0].HighestSent != 35000 || runs[2].HighestSent != 35000 || runs[1].HighestSent != 10000 {
		t.Errorf("highest sent in full: hload %d, vegeta %d, floor %d; want 35000, 10000, 35000", runs[0].HighestSent, runs[1].HighestSent, runs[2].HighestSent)
	}
	for _, r := range []sweepRun{runs[0], runs[2]} {
		if late := r.Steps[5]; late.Held || !late.Sent || late.Why != "start lateness p99 2.50 ms" {
			t.Errorf("%s at 30,000/s: %+v", r.Tool, late)
		}
		if last := r.Steps[len(r.Steps)-1]; last.Held || last.Sent || last.Why != "sent 98.00 % of the plan" {
			t.Errorf("%s's last step %+v", r.Tool, last)
		}
	}
	if last := runs[1].Steps[2]; last.Held || last.Sent || last.Why != "3 of 150000 requests failed" || last.Run.Error == "" {
		t.Errorf("vegeta's last step %+v", last)
	}

	// A tool that fails otherwise (here at its first rate) fails the
	// harness, and holds nothing.
	runs, failed = sweepRound(rates[:2], tools, 1, func(tl *tool, rate int) (result, error) {
		if strings.HasPrefix(tl.name, "hload") {
			return step(rate, 1, 0, 0.5), errors.New("the server counted 49999 http calls, hload-open-sweep reported 50000")
		}
		return step(rate, 1, 0, -1), nil
	})
	if len(failed) != 1 || !strings.Contains(failed[0], "hload-open-sweep at 5000/s in round 1: the server counted") {
		t.Errorf("failed %q", failed)
	}
	if runs[0].Highest != 0 || len(runs[0].Steps) != 1 || runs[1].Highest != 10000 {
		t.Errorf("runs %+v", runs)
	}
}

// The sweep's tables: each rate tried with its figures and verdict, each
// tool's highest held rate, and over the rounds each round's and the
// median; the JSON has them too.
func TestPrintSweep(t *testing.T) {
	hload := sweepRun{Tool: "hload-open-sweep", Round: 1, Highest: 5000, HighestSent: 10000, Steps: []sweepStep{
		{Rate: 5000, Held: true, Sent: true, Run: step(5000, 1, 0, 0.41)},
		{Rate: 10000, Sent: true, Why: "start lateness p99 2.50 ms", Run: step(10000, 1, 0, 2.5)},
	}}
	vegeta := sweepRun{Tool: "vegeta-open-sweep", Round: 1, Steps: []sweepStep{
		{Rate: 5000, Why: "sent 99.00 % of the plan", Run: step(5000, 0.99, 0, -1)},
	}}
	var b strings.Builder
	printSweep(&b, "round 1 of 2, case open-sweep", 10e9, []sweepRun{hload, vegeta})
	out := b.String()
	for _, want := range []string{
		"round 1 of 2, case open-sweep, each rate for 10s",
		"lateness p99 ms  conns  held",
		"hload-open-sweep   5,000   100.00 %        0             0.41     40   yes",
		"hload-open-sweep  10,000   100.00 %        0             2.50     40    no  start lateness p99 2.50 ms",
		"vegeta-open-sweep   5,000    99.00 %        0                -     40    no  sent 99.00 % of the plan",
		"hload-open-sweep: highest rate held 5,000/s, sent in full 10,000/s",
		"vegeta-open-sweep: highest rate held none, sent in full none",
		"vegeta reports no lateness",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}

	hload2, vegeta2 := hload, vegeta
	hload2.Round, hload2.Highest, hload2.HighestSent, vegeta2.Round, vegeta2.Highest, vegeta2.HighestSent = 2, 10000, 20000, 2, 10000, 10000
	meds := sweepMedians([]sweepRun{hload, vegeta, hload2, vegeta2})
	if len(meds) != 2 || meds[0].Tool != "hload-open-sweep" || !slices.Equal(meds[0].Highest, []int{5000, 10000}) || meds[0].Median != 7500 ||
		!slices.Equal(meds[0].Sent, []int{10000, 20000}) || meds[0].MedianSent != 15000 || meds[1].Median != 5000 || meds[1].MedianSent != 5000 {
		t.Fatalf("medians %+v", meds)
	}
	b.Reset()
	printSweepMedians(&b, 2, meds)
	for _, want := range []string{"round 1   round 2    median",
		"hload-open-sweep          held   5,000/s  10,000/s   7,500/s",
		"hload-open-sweep  sent in full  10,000/s  20,000/s  15,000/s",
		"vegeta-open-sweep          held      none  10,000/s   5,000/s"} {
		if out := b.String(); !strings.Contains(out, want) {
			t.Errorf("no %q in the medians:\n%s", want, out)
		}
	}

	data, err := json.Marshal(report{SweepRates: []int{5000, 10000}, Sweeps: []sweepRun{hload}, SweepMedians: meds})
	if err != nil {
		t.Fatal(err)
	}
	for _, field := range []string{`"sweep_rates":[5000,10000]`, `"highest_held_rate":5000`, `"why_not":"start lateness p99 2.50 ms"`,
		`"server_connections":40`, `"median_highest_held_rate":7500`, `"highest_sent_rate":10000`, `"sent_in_full":true`,
		`"highest_sent_rates":[10000,20000]`, `"median_highest_sent_rate":15000`} {
		if !strings.Contains(string(data), field) {
			t.Errorf("no %s in %s", field, data)
		}
	}
}
