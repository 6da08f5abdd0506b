// Package sinks is where a run's measurements go: one package per sink
// (sinks/csv, sinks/influxdb, sinks/html ...), each behind core.Sink, and
// the Registry that maps the type of a `sink "TYPE"` block to the block's
// schema and the sink's constructor, as protocols.Registry does for
// protocols.
//
// cmd/hload builds the registry of the built-in types (sinkTypes in
// cmd/hload/load.go) and hands it to validate, plan and apply: config.Load
// checks each block against its type's Spec, with file:line diagnostics,
// and Registry.New builds the sinks of a test, which validate does too,
// so that what apply would refuse, validate refuses first. Nothing else
// lists the sink types.
//
// The sinks the command line adds (the console, --summary-export,
// --dashboard) have no block, and are not in the registry.
//
// # Adding a sink
//
// A new sink is one package and one registration:
//
//  1. A package sinks/NAME with a type that implements core.Sink (and,
//     if it wants them, the optional core.RawSink, core.Warner ...), and
//     a func Type() sinks.Type: the block's label, its hcldec.ObjectSpec,
//     and New, which builds the sink of one Block without starting it.
//     New refuses a setting it cannot use with an error; the registry
//     adds the block's place and type. A sink with a Path() string method
//     has that file checked before the run.
//  2. NAME.Type() added to sinkTypes in cmd/hload/load.go.
//
// Its tests sit in its package; sinks/sinktest runs a test against a
// counting server into sinks a test makes.
package sinks
