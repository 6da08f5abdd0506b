package console

import (
	"bytes"
	"strings"
	"testing"

	"github.com/hload/hload/metrics"
)

// TestSummaryGenerator: the summary prints hload's own CPU use on one
// line; when hload was saturated it says so before any figure, says why
// and what to do under generator, and after the verdict, which it does not
// change; a run with headroom says nothing of saturation.
func TestSummaryGenerator(t *testing.T) {
	wait := 0.47
	saturated := sampleSummary()
	saturated.Passed = true
	saturated.Thresholds = nil
	saturated.Generator = &metrics.GeneratorFigures{
		Saturated: true, Reason: "hload may use 1 CPU core; it was saturated in 3 of 3 intervals (3 used at least 90 % of it)",
		CPUCoresAvailable: 1, CPUSeconds: 2.93, CPUUtilizationMax: 0.98, CPUUtilizationMean: 0.9512,
		RunQueueWaitShareMax: &wait, Intervals: 3, SaturatedIntervals: 3,
	}
	headroom := sampleSummary()
	headroom.Passed = true
	headroom.Thresholds = nil
	headroom.Generator = &metrics.GeneratorFigures{CPUCoresAvailable: 2, CPUSeconds: 0.4, CPUUtilizationMax: 0.08, CPUUtilizationMean: 0.0667, Intervals: 3}

	for _, tc := range []struct {
		name     string
		sum      metrics.Summary
		want     []string
		dontWant []string
	}{
		{"saturated", saturated, []string{
			"SATURATED: hload itself was the bottleneck, so the figures measured hload as much as the server; see generator below.\nLatencies in ms",
			"\ngenerator\n  hload used 95.1% of its 1 core on average, 98.0% at most in an interval (2.93 CPU-seconds); its threads waited for a CPU up to 47.0%; saturated in 3 of 3 intervals\n",
			"  SATURATED: hload may use 1 CPU core; it was saturated in 3 of 3 intervals (3 used at least 90 % of it).\n  The figures measured hload as much as the server.",
			"PASS: the run completed; no thresholds were set. Read the 1 warning(s) above. hload was saturated: the figures measured hload as much as the server.\n",
		}, nil},
		{"headroom", headroom, []string{
			"\ngenerator\n  hload used 6.67% of its 2 cores on average, 8.00% at most in an interval (0.40 CPU-seconds); saturated in 0 of 3 intervals\n",
			"PASS: the run completed; no thresholds were set. Read the 1 warning(s) above.\n",
		}, []string{"SATURATED", "measured hload", "waited for a CPU"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := WriteSummary(&buf, tc.sum, true); err != nil {
				t.Fatal(err)
			}
			got := buf.String()
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("summary lacks %q:\n%s", w, got)
				}
			}
			for _, w := range tc.dontWant {
				if strings.Contains(got, w) {
					t.Errorf("summary has %q:\n%s", w, got)
				}
			}
		})
	}

	// A failed threshold while hload was saturated may have failed on
	// hload's delays: the verdict says so, and stays a FAIL.
	failing := sampleSummary()
	failing.Generator = saturated.Generator
	var buf bytes.Buffer
	if err := WriteSummary(&buf, failing, true); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "thresholds failed. hload was saturated: the figures measured hload as much as the server.\n") {
		t.Errorf("a failing verdict does not say hload was saturated:\n%s", buf.String())
	}
}
