package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/hload/hload/core"
)

// The environment variables that stand for the segment and start flags,
// so that a pod spec or an array job can set them without a wrapper
// script. A flag given on the command line wins over its variable.
const (
	envSegmentCount     = "HLOAD_SEGMENT_COUNT"
	envSegmentIndexEnv  = "HLOAD_SEGMENT_INDEX_ENV"
	envSegmentIndexBase = "HLOAD_SEGMENT_INDEX_BASE"
	envStartAt          = "HLOAD_START_AT"
	envStartSlack       = "HLOAD_START_SLACK"
)

// defaultIndexEnv is the variable a Kubernetes Indexed Job sets in each
// pod: its completion index, from 0.
const defaultIndexEnv = "JOB_COMPLETION_INDEX"

// defaultStartSlack is how late after --start-at a process may still
// start. Pods whose clocks are synchronised and whose images are pulled
// reach the barrier within milliseconds; seconds late means the pod was
// scheduled or restarted late, and its share would skew the merged run.
const defaultStartSlack = 5 * time.Second

// segmentFlags are the flags that choose a process's share of a sharded
// run: either --segment i/n, or --segment-count n with the index read from
// an environment variable that the job engine sets.
type segmentFlags struct {
	fs        *flag.FlagSet
	segment   string
	count     string
	indexEnv  string
	indexBase string
	getenv    func(string) string
}

func (s *segmentFlags) register(fs *flag.FlagSet) {
	s.fs = fs
	fs.StringVar(&s.segment, "segment", "1/1", "run only share i of n of the load, for sharded runs")
	fs.StringVar(&s.count, "segment-count", "", "run one share of n, its index read from --segment-index-env (env "+envSegmentCount+")")
	fs.StringVar(&s.indexEnv, "segment-index-env", defaultIndexEnv, "with --segment-count: the variable that holds this process's index (env "+envSegmentIndexEnv+")")
	fs.StringVar(&s.indexBase, "segment-index-base", "0", "with --segment-count: 0 if the index variable counts from 0, 1 if from 1 (env "+envSegmentIndexBase+")")
}

// resolve returns the segment the flags and the environment choose.
func (s *segmentFlags) resolve() (core.Segment, error) {
	getenv := s.getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	count, countFrom := flagOrEnv(s.fs, "segment-count", s.count, envSegmentCount, getenv)
	if count == "" {
		return core.ParseSegment(s.segment)
	}
	if isSet(s.fs, "segment") {
		return core.Segment{}, fmt.Errorf("--segment %s and %s: give one or the other", s.segment, countFrom)
	}
	n, err := strconv.Atoi(strings.TrimSpace(count))
	if err != nil || n < 1 {
		return core.Segment{}, fmt.Errorf("%s: want a whole number of segments, 1 or more", countFrom)
	}
	indexEnv, indexEnvFrom := flagOrEnv(s.fs, "segment-index-env", s.indexEnv, envSegmentIndexEnv, getenv)
	if strings.TrimSpace(indexEnv) == "" {
		return core.Segment{}, fmt.Errorf("%s: want the name of the variable that holds the index", indexEnvFrom)
	}
	baseText, baseFrom := flagOrEnv(s.fs, "segment-index-base", s.indexBase, envSegmentIndexBase, getenv)
	base, err := strconv.Atoi(strings.TrimSpace(baseText))
	if err != nil || (base != 0 && base != 1) {
		return core.Segment{}, fmt.Errorf("%s: want 0 or 1, the index of the first segment", baseFrom)
	}
	raw := getenv(indexEnv)
	if strings.TrimSpace(raw) == "" {
		return core.Segment{}, fmt.Errorf("%s: the index variable %s is not set (%s names it; a Kubernetes Indexed Job sets %s)",
			countFrom, indexEnv, indexEnvFrom, defaultIndexEnv)
	}
	index, err := strconv.Atoi(strings.TrimSpace(raw))
	if err != nil {
		return core.Segment{}, fmt.Errorf("%s: the index variable %s=%q is not a whole number", countFrom, indexEnv, raw)
	}
	if index < base || index > n-1+base {
		return core.Segment{}, fmt.Errorf("%s: the index variable %s=%d is out of range: with %d segments counted from %d (%s) it goes from %d to %d",
			countFrom, indexEnv, index, n, base, baseFrom, base, n-1+base)
	}
	return core.Segment{Index: index - base, Count: n}, nil
}

// startFlags are the start barrier: wait until --start-at, and refuse to
// start when reaching it more than --start-slack late.
type startFlags struct {
	fs     *flag.FlagSet
	at     string
	slack  string
	getenv func(string) string
}

func (s *startFlags) register(fs *flag.FlagSet) {
	s.fs = fs
	fs.StringVar(&s.at, "start-at", "", "wait until this RFC3339 time before starting, to align shards (env "+envStartAt+")")
	fs.StringVar(&s.slack, "start-slack", defaultStartSlack.String(), "refuse to start when reaching --start-at later than this after it (env "+envStartSlack+")")
}

// startBarrier is a resolved --start-at: the zero value waits for nothing.
type startBarrier struct {
	at, atFrom string
	time       time.Time
	slack      time.Duration
	slackFrom  string
}

func (s *startFlags) resolve() (startBarrier, error) {
	getenv := s.getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	var b startBarrier
	b.at, b.atFrom = flagOrEnv(s.fs, "start-at", s.at, envStartAt, getenv)
	slack, slackFrom := flagOrEnv(s.fs, "start-slack", s.slack, envStartSlack, getenv)
	b.slackFrom = slackFrom
	var err error
	if b.slack, err = time.ParseDuration(strings.TrimSpace(slack)); err != nil || b.slack < 0 {
		return startBarrier{}, fmt.Errorf("%s: want a duration of 0 or more, such as 5s", slackFrom)
	}
	if strings.TrimSpace(b.at) == "" {
		return b, nil
	}
	if b.time, err = time.Parse(time.RFC3339, strings.TrimSpace(b.at)); err != nil {
		return startBarrier{}, fmt.Errorf("%s: want an RFC3339 time such as 2026-01-02T15:04:05Z", b.atFrom)
	}
	return b, nil
}

// late returns an error when now is past the barrier by more than the
// slack: a process that starts late sends its share of the load at the
// wrong time, so the merged result would not be the run one process
// would have made.
func (b startBarrier) late(now time.Time) error {
	if b.time.IsZero() {
		return nil
	}
	if late := now.Sub(b.time); late > b.slack {
		return fmt.Errorf("%s: reached the start barrier %s late, more than %s allows; refusing to start, as this share of the load would run late and skew the merged result",
			b.atFrom, late.Round(time.Millisecond), b.slackFrom)
	}
	return nil
}

// flagOrEnv returns the flag's value when it was given on the command
// line, else the environment variable's when set, else the flag's default,
// together with how to name it in an error.
func flagOrEnv(fs *flag.FlagSet, name, value, env string, getenv func(string) string) (string, string) {
	if isSet(fs, name) {
		return value, fmt.Sprintf("--%s %q", name, value)
	}
	if v := getenv(env); v != "" {
		return v, fmt.Sprintf("%s=%q (--%s)", env, v, name)
	}
	return value, fmt.Sprintf("--%s %q", name, value)
}

func isSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) {
		if f.Name == name {
			set = true
		}
	})
	return set
}

// writeSummaryExport writes the summary JSON to path, indented; path "-"
// prints it on stdout as one line of compact JSON instead. The run's
// summary table is printed by then, so the JSON is the last line of
// stdout: the line a pod's `kubectl logs` ends with, for `hload merge -`.
func writeSummaryExport(path string, sum any, stdout io.Writer) error {
	if path != "-" {
		return writeJSON(path, sum)
	}
	enc := json.NewEncoder(stdout)
	enc.SetEscapeHTML(false)
	return enc.Encode(sum) // one line, ended by a newline
}
