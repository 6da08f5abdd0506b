// Package sinks is where a run's measurements go: one package per sink
// (sinks/csv, sinks/influxdb, sinks/html ...), each behind core.Sink, and
// the Registry that maps the type of a `sink "TYPE"` block to the block's
// schema and the sink's constructor, as protocols.Registry does for
// protocols.
//
// A sink package exports a Type; cmd/hload builds the registry of the
// built-in ones, hands its specs to config.Load, so that a block is
// checked against its own schema, and builds the test's sinks with New.
// Adding a sink is thus one package and one registration: nothing else
// lists the sink types.
//
// The sinks the command line adds (the console, --summary-export,
// --dashboard) have no block, and are not in the registry.
package sinks
