// Package export writes a run's summary JSON to a file, as
// --summary-export asks. It is a sink, closed after the other sinks and
// before the console, so that the file holds the summary with every
// sink's failure, and an export that cannot be written fails the run
// before the console prints its verdict.
package export

import (
	"context"
	"fmt"

	"github.com/hload/hload/internal/outfile"
	"github.com/hload/hload/metrics"
	"github.com/hload/hload/sinks/series"
)

// Sink writes the summary JSON to its path when it is closed: whole, or
// not at all (see outfile.Write). It implements core.Sink.
type Sink struct {
	path   string
	series func() *metrics.IntervalSeries
	closed bool
	err    error
}

// New returns a sink that writes the summary to path, with the series
// that series returns at the end (nil for none).
func New(path string, series func() *metrics.IntervalSeries) *Sink {
	return &Sink{path: path, series: series}
}

// Path is the file the summary goes to.
func (s *Sink) Path() string { return s.path }

// Start checks once more that the file can be written, so that a folder
// removed since the command began fails before any load is sent.
func (s *Sink) Start(context.Context, metrics.RunInfo) error {
	if err := outfile.Check(s.path); err != nil {
		return err
	}
	return nil
}

// ExportsMergeable implements core.Exporter: the file carries what
// `hload merge` needs.
func (s *Sink) ExportsMergeable() {}

// Write does nothing: the summary is written at the end.
func (s *Sink) Write(metrics.Snapshot) error { return nil }

// Close writes the summary JSON. A second call returns the first's result.
func (s *Sink) Close(sum metrics.Summary) error {
	if s.closed {
		return s.err
	}
	s.closed = true
	if s.series != nil {
		sum.Series = s.series()
	}
	data, err := series.IndentJSON(sum)
	if err == nil {
		err = outfile.Write(s.path, append(data, '\n'))
	}
	if err != nil {
		s.err = fmt.Errorf("writing %s: %w", s.path, err)
	}
	return s.err
}
