package core

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/hload/hload/metrics"
)

// lifecycleSink records what the run did to it, in a log shared by the
// sinks of one test, and fails where told.
type lifecycleSink struct {
	snapshotSink
	name       string
	log        *[]string
	mu         *sync.Mutex
	startErr   error
	writeErr   error // from the second Write on
	closeErr   error
	warnings   []string
	writes     int
	gotSummary metrics.Summary
}

func (s *lifecycleSink) note(what string) {
	s.mu.Lock()
	*s.log = append(*s.log, what+" "+s.name)
	s.mu.Unlock()
}

func (s *lifecycleSink) Start(ctx context.Context, run metrics.RunInfo) error {
	s.note("start")
	return s.startErr
}

func (s *lifecycleSink) Write(snap metrics.Snapshot) error {
	s.snapshotSink.Write(snap)
	s.writes++
	if s.writes > 1 {
		return s.writeErr
	}
	return nil
}

func (s *lifecycleSink) Close(sum metrics.Summary) error {
	s.note("close")
	s.gotSummary = sum
	return s.closeErr
}

func (s *lifecycleSink) Warnings() []string { return s.warnings }

func newLifecycleSinks(names ...string) []*lifecycleSink {
	var (
		log []string
		mu  sync.Mutex
	)
	var out []*lifecycleSink
	for _, n := range names {
		out = append(out, &lifecycleSink{name: n, log: &log, mu: &mu})
	}
	return out
}

func asSinks(ls []*lifecycleSink) []Sink {
	var out []Sink
	for _, s := range ls {
		out = append(out, s)
	}
	return out
}

const twoSecondScenario = `
scenario "s" {
  executor = "constant-vus"
  vus      = 1
  duration = "2100ms"
  request "r" {}
}
`

// TestSinkStartFailure: when a sink cannot start, nothing is sent; the
// sinks started before it are closed, last first as at the end of a run,
// with a summary that says which sink (by its name) and why; Run returns
// that summary, for a summary export, with the error.
func TestSinkStartFailure(t *testing.T) {
	p := newFaultProtocol()
	ls := newLifecycleSinks("console", "export", "csv", "never")
	ls[2].startErr = errors.New("no such folder")
	names := []string{"the console", "--summary-export", `test.hcl:9,1-11: sink "csv"`, ""}
	sum, err := runFault(t, p, twoSecondScenario, Options{Sinks: asSinks(ls), SinkNames: names})
	want := `test.hcl:9,1-11: sink "csv" could not start: no such folder`
	if err == nil || err.Error() != want {
		t.Fatalf("Run = %v, want %q", err, want)
	}
	if sum == nil || sum.Failed != want || sum.Passed {
		t.Fatalf("summary %+v, want failed %q and not passed", sum, want)
	}
	if got := *ls[0].log; !slices.Equal(got, []string{"start console", "start export", "start csv", "close export", "close console"}) {
		t.Errorf("lifecycle %q", got)
	}
	if ls[0].gotSummary.Failed != want || ls[1].gotSummary.Failed != want {
		t.Errorf("the started sinks got failed %q and %q", ls[0].gotSummary.Failed, ls[1].gotSummary.Failed)
	}
	if n := p.calls.Load(); n != 0 {
		t.Errorf("%d calls sent", n)
	}

	// Without names, a sink is called by its position.
	ls = newLifecycleSinks("a", "b")
	ls[1].startErr = errors.New("down")
	if _, err := runFault(t, p, twoSecondScenario, Options{Sinks: asSinks(ls)}); err == nil || err.Error() != "sink 2 could not start: down" {
		t.Errorf("Run = %v", err)
	}
}

// TestSinkFailuresNamed: a sink whose Write fails is named in a warning
// of the next snapshot, while the run goes on; its Close error, which
// says what the failure cost, replaces the Write's in the summary; the
// sinks closed after it, and the caller, get a summary that does not pass
// and names it. A Warner's warnings join the summary's.
func TestSinkFailuresNamed(t *testing.T) {
	p := newFaultProtocol()
	ls := newLifecycleSinks("console", "csv", "influx")
	ls[1].writeErr = errors.New("disk full")
	ls[1].closeErr = errors.New("disk full: 7 of 9 rows not written")
	ls[2].warnings = []string{"influx: 3 points unsent"}
	names := []string{"the console", `t.hcl:3: sink "csv"`, `t.hcl:7: sink "influxdb"`}
	sum, err := runFault(t, p, twoSecondScenario, Options{Sinks: asSinks(ls), SinkNames: names})
	want := `t.hcl:3: sink "csv": disk full: 7 of 9 rows not written`
	if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), `"csv": disk full`+"\n") {
		t.Fatalf("Run = %v, want %q alone", err, want)
	}
	if sum.Passed || !slices.Equal(sum.SinkErrors, []string{want}) {
		t.Errorf("summary passed %v, sink errors %q; want %q", sum.Passed, sum.SinkErrors, want)
	}
	if got := ls[0].gotSummary; got.Passed || !slices.Equal(got.SinkErrors, []string{want}) || !slices.Contains(got.Warnings, "influx: 3 points unsent") {
		t.Errorf("the console got passed %v, sink errors %q, warnings %q", got.Passed, got.SinkErrors, got.Warnings)
	}
	// The influx sink, closed first, already knew the CSV sink's Write
	// had failed.
	if got := ls[2].gotSummary; got.Passed || !slices.Equal(got.SinkErrors, []string{`t.hcl:3: sink "csv": disk full`}) {
		t.Errorf("the sink closed first got passed %v, sink errors %q", got.Passed, got.SinkErrors)
	}
	var warned []string
	for _, snap := range ls[0].snaps {
		warned = append(warned, snap.Warnings...)
	}
	if w := `a sink failed; the run goes on, and will not pass: t.hcl:3: sink "csv": disk full`; !slices.Contains(warned, w) {
		t.Errorf("live warnings %q, want %q", warned, w)
	}
}
