package core

import (
	"context"

	"github.com/hload/hload/metrics"
)

// Sink receives the run's figures: a snapshot once per interval and the
// summary at the end.
type Sink interface {
	Start(ctx context.Context, run metrics.RunInfo) error
	// Write is called once per interval, never concurrently. It must not
	// block the run.
	Write(s metrics.Snapshot) error
	// Close is the final flush; nothing accepted before it may be lost.
	Close(sum metrics.Summary) error
}

// RawSink is an optional ability of a Sink: it also receives every call.
// WriteRaw is called concurrently from many VUs and must not lose records.
type RawSink interface {
	WriteRaw(r metrics.RawRecord)
}

// Warner is an optional ability of a Sink: after Close, the problems that
// did not fail it but that a reader of the results must know, such as an
// optional InfluxDB that did not take every point. They join the summary's
// warnings, for the sinks closed after it.
type Warner interface {
	Warnings() []string
}

// Exporter is an optional ability of a Sink: it writes the summary export,
// so its Close gets the summary with Mergeable set, for `hload merge`. The
// other sinks have no use for it, and the HTML report would embed it.
type Exporter interface {
	ExportsMergeable()
}

// Abandoner is an optional ability of a Sink whose Close may wait, for a
// network say: Abandon makes a Close in progress, or to come, stop waiting
// at once and count what it still holds as lost, as a warning. The run
// calls it, concurrently with Close, when the user interrupts the end of
// the run (see Interrupter).
type Abandoner interface {
	Abandon()
}

// Watcher is an optional ability of a Sink: its snapshots carry the run so
// far (Snapshot.SoFar), the summary as it would read if the run ended at
// the snapshot, for a sink that shows the run live. Building it merges
// every request's histograms once per interval, so only a sink that asks
// for it pays for it.
type Watcher interface {
	WatchesRunSoFar()
}

// watches reports whether any of sinks is a Watcher.
func watches(sinks []Sink) bool {
	for _, s := range sinks {
		if _, ok := s.(Watcher); ok {
			return true
		}
	}
	return false
}
