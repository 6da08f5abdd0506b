package main

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The files in testdata are the real output of each tool, captured here:
// 1 s runs against this harness's server (NAME.txt), against a closed
// loopback port (NAME-refused.txt) and against a server that answers 404
// (NAME-404.txt). wrk's refused output is its stderr; it exits 1 then.
func TestParsers(t *testing.T) {
	tests := []struct {
		file    string
		parse   func([]byte) (figures, error)
		want    figures
		wantErr string
	}{
		{"wrk.txt", parseWrk, figures{rps: 53888.00, requests: 53994, latenessP99: -1}, ""},
		{"wrk-404.txt", parseWrk, figures{rps: 2196.07, requests: 2415, errors: 2415, latenessP99: -1}, ""},
		{"wrk-refused.txt", parseWrk, figures{}, `no "N requests in" line`},
		{"hey.txt", parseHey, figures{rps: 43285.8240, requests: 43325, latenessP99: -1}, ""},
		{"hey-404.txt", parseHey, figures{rps: 1978.9437, requests: 1984, errors: 1984, latenessP99: -1}, ""},
		{"hey-refused.txt", parseHey, figures{rps: 64788.8578, requests: 64822, errors: 64822, latenessP99: -1}, ""},
		{"vegeta.txt", parseVegeta, figures{rps: 33253.75, requests: 33253, latenessP99: -1}, ""},
		{"vegeta-404.txt", parseVegeta, figures{rps: 1861.64, requests: 1862, errors: 1862, latenessP99: -1}, ""},
		{"vegeta-refused.txt", parseVegeta, figures{rps: 39563.46, requests: 39552, errors: 39552, latenessP99: -1}, ""},
		{"hload-summary.json", parseHloadSummary, figures{rps: 43618.165238240195, requests: 43707, latenessP99: -1}, ""},
		{"hload-summary-refused.json", parseHloadSummary, figures{rps: 46414.01173210735, requests: 46468, errors: 46468, latenessP99: -1}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			got, err := tt.parse(data)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

// Output that lacks the figures, or has them garbled, is an error, never a
// zero figure.
func TestParsersRejectOtherOutput(t *testing.T) {
	for name, parse := range map[string]func([]byte) (figures, error){
		"wrk": parseWrk, "hey": parseHey, "vegeta": parseVegeta, "hload": parseHloadSummary,
	} {
		for _, out := range []string{"", "Requests/sec: \n", "usage: tool [flags]\n"} {
			if f, err := parse([]byte(out)); err == nil {
				t.Errorf("%s(%q) = %+v, want an error", name, out, f)
			}
		}
	}
	if _, err := parseVegeta([]byte("Requests      [total, rate, throughput]  5, 5.00, 5.00\nStatus Codes  [code:count]  200:x\n")); err == nil {
		t.Error("vegeta status 200:x parsed")
	}
	if _, err := parseHloadSummary([]byte(`{"failed":"plugin http crashed","scenarios":{}}`)); err == nil || !strings.Contains(err.Error(), "crashed") {
		t.Errorf("a failed hload run: error = %v", err)
	}
}

func TestMediansAndRatios(t *testing.T) {
	runs := []result{
		{Case: "get", Tool: "hload", Round: 1, RPS: 70000, RequestsPerCPUSec: 90000},
		{Case: "get", Tool: "wrk", Round: 1, RPS: 80000, RequestsPerCPUSec: 100000},
		{Case: "get", Tool: "vegeta", Round: 1, RPS: 40000, RequestsPerCPUSec: 40000},
		{Case: "get", Tool: "hload-isolated", Round: 1, Error: "exit status 1"},
		{Case: "get", Tool: "hload", Round: 2, RPS: 76000, RequestsPerCPUSec: 94000},
		{Case: "get", Tool: "wrk", Round: 2, Error: "no request completed"},
		{Case: "get", Tool: "vegeta", Round: 2, RPS: 42000, RequestsPerCPUSec: 44000},
		{Case: "get", Tool: "hload-isolated", Round: 2, Error: "exit status 1"},
	}
	meds := medians(runs)
	if len(meds) != 4 || meds[0].Tool != "hload" || meds[3].Tool != "hload-isolated" {
		t.Fatalf("medians in the wrong order: %+v", meds)
	}
	if m := meds[0]; m.RPS != 73000 || m.RequestsPerCPUSec != 92000 || m.Runs != 2 {
		t.Errorf("hload medians = %+v", m)
	}
	if m := meds[1]; m.RPS != 80000 || m.Runs != 1 {
		t.Errorf("wrk's medians over its one good round = %+v", m)
	}
	if m := meds[3]; m.Error == "" {
		t.Errorf("hload-isolated failed in every round, medians = %+v", m)
	}

	rs := ratios(meds, false)
	want := []struct {
		value   float64
		meets   bool
		missing bool
	}{
		{92000.0 / 42000, true, false},
		{92000.0 / 100000, true, false},
		{73000.0 / 80000, false, false},
		{0, false, true},
	}
	for i, w := range want {
		r := rs[i]
		if math.Abs(r.Value-w.value) > 1e-9 || r.Meets != w.meets || (r.Missing != "") != w.missing {
			t.Errorf("%s = %+v, want value %.3f meets %v missing %v", r.What, r, w.value, w.meets, w.missing)
		}
	}
	if rs[3].Missing != "hload-isolated failed in every round" {
		t.Errorf("isolated ratio: missing %q", rs[3].Missing)
	}
	if rs := ratios(meds[:1], true); rs[0].Missing != "vegeta was not run" || rs[2].Note != "" {
		t.Errorf("without vegeta, pinned: %+v", rs)
	}
	if rs[2].Note == "" {
		t.Error("the server-bound ratio does not say the server was not pinned")
	}
}

func TestFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-duration", "1500ms"},
		{"-duration", "0s"},
		{"-rounds", "0"},
		{"-connections", "0"},
		{"-tools", "hload,ab"},
		{"extra"},
		{"-duration", "soon"},
	} {
		if _, err := parseFlags(args, &strings.Builder{}); err == nil {
			t.Errorf("%q: no error", args)
		}
	}
	// The tools run in the order of the cases, whatever the flag's order.
	o, err := parseFlags([]string{"-tools", "wrk, hload"}, &strings.Builder{})
	if err != nil || len(o.tools) != 2 || o.tools[0].name != "hload" || o.tools[1].name != "wrk" || o.duration.Seconds() != 8 || o.rounds != 2 {
		t.Errorf("parseFlags = %+v, %v", o, err)
	}
}

func TestThousands(t *testing.T) {
	for x, want := range map[float64]string{0: "0", 999.4: "999", 999.6: "1,000", 53888: "53,888", 1234567: "1,234,567"} {
		if got := thousands(x); got != want {
			t.Errorf("thousands(%v) = %q, want %q", x, got, want)
		}
	}
}

// The flow test's summary has three requests, one per step: the figures
// are their sum, as every step is a request sent.
func TestHloadFlowSummary(t *testing.T) {
	data := []byte(`{"scenarios": {"s": {"requests": {
		"a": {"count": 100, "errors": 1, "rps": 10},
		"b": {"count": 99, "errors": 0, "rps": 9.9},
		"c": {"count": 99, "errors": 2, "rps": 9.9}}}}}`)
	got, err := parseHloadSummary(data)
	if err != nil {
		t.Fatal(err)
	}
	if want := (figures{rps: 29.8, requests: 298, errors: 3}); got.requests != want.requests || got.errors != want.errors || got.rps < 29.79 || got.rps > 29.81 {
		t.Errorf("figures %+v, want %+v", got, want)
	}
}
