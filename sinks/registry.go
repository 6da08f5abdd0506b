package sinks

import (
	"errors"
	"fmt"
	"io"

	"github.com/hashicorp/hcl/v2/hcldec"

	"github.com/hload/hload/config"
	"github.com/hload/hload/core"
	"github.com/hload/hload/internal/named"
	"github.com/hload/hload/internal/outfile"
)

// Type is a kind of sink, as a `sink "NAME"` block asks for it.
type Type struct {
	// Name is the block's label: "csv" for `sink "csv" { ... }`.
	Name string
	// Spec is the block's schema; config checks and decodes the block
	// with it before anything runs.
	Spec hcldec.ObjectSpec
	// New builds the sink of one block, without starting it: it connects
	// to nothing and writes no file before core.Sink.Start. A setting it
	// cannot use is an error, which names neither the block nor its
	// place: the caller adds them.
	New func(b Block) (core.Sink, error)
}

// Block is one sink block of a test, with what a sink may need to know
// of the run that it will receive.
type Block struct {
	// Sink is the decoded block: its Config conforms to the Type's Spec,
	// and Sensitive tells which of its values came from a secret.
	*config.Sink
	// Plans are the test's scenarios as this process runs them (see
	// core.Plan), for a sink that draws them; the sink's own copy.
	Plans []core.ScenarioPlan
	// Segment is the part of the run this process sends; a Count of 0
	// or 1 is the whole run.
	Segment core.Segment
	// Log receives what a sink has to say during the run, one line at
	// a time: the process's stderr.
	Log io.Writer
}

// Registry maps sink type names to sink types. It is built explicitly by
// the caller; there is no process-wide registry.
type Registry struct {
	set named.Set[Type]
}

// typeName is a type's key in a registry.
func typeName(t Type) string { return t.Name }

// NewRegistry returns a registry holding ts, keyed by their Name; of two
// types with one name, the later wins.
func NewRegistry(ts ...Type) *Registry {
	return (&Registry{}).With(ts...)
}

// With returns a new registry holding r's types plus ts; a type in ts
// replaces one of r's with the same name. r is not changed.
func (r *Registry) With(ts ...Type) *Registry {
	return &Registry{set: r.set.With(typeName, ts...)}
}

// Lookup returns the type with the given name.
func (r *Registry) Lookup(name string) (Type, bool) { return r.set.Lookup(name) }

// Names returns the registered type names, sorted.
func (r *Registry) Names() []string { return r.set.Names() }

// Specs returns each type's block schema by name, as config.Options.Sinks
// takes them.
func (r *Registry) Specs() map[string]hcldec.ObjectSpec {
	specs := make(map[string]hcldec.ObjectSpec, r.set.Len())
	for _, n := range r.set.Names() {
		t, _ := r.set.Lookup(n)
		specs[n] = t.Spec
	}
	return specs
}

// New builds the sinks of test's blocks, in their order, without starting
// them, and checks the files they will write (see outfile.Check), so that
// validate finds a bad setting or a folder that does not exist before a
// run. It returns each sink's name, as messages call it: the block's
// place and type. An error names the block the same way.
func (r *Registry) New(test *config.Test, seg core.Segment, log io.Writer) ([]core.Sink, []string, error) {
	built := make([]core.Sink, 0, len(test.Sinks))
	names := make([]string, 0, len(test.Sinks))
	for _, s := range test.Sinks {
		name := fmt.Sprintf("%s: sink %q", s.DeclRange, s.Type)
		t, ok := r.set.Lookup(s.Type)
		if !ok {
			// config decodes only the types of a registry's Specs: this
			// one came from another registry.
			return nil, nil, fmt.Errorf("%s: no sink of this type is registered", name)
		}
		// Plans of its own: a sink may keep pointers into them.
		sk, err := t.New(Block{Sink: s, Plans: core.Plan(test, seg), Segment: seg, Log: log})
		if err == nil {
			err = checkOutputs(sk)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", name, err)
		}
		built = append(built, sk)
		names = append(names, name)
	}
	return built, names, nil
}

// checkOutputs checks the files a sink will write (Path, and a CSV
// sink's RawPath), without creating them.
func checkOutputs(sk core.Sink) error {
	if sk == nil {
		return errors.New("the sink's constructor returned no sink")
	}
	var paths []string
	if p, ok := sk.(interface{ Path() string }); ok {
		paths = append(paths, p.Path())
	}
	if p, ok := sk.(interface{ RawPath() string }); ok && p.RawPath() != "" {
		paths = append(paths, p.RawPath())
	}
	for _, p := range paths {
		if err := outfile.Check(p); err != nil {
			return err
		}
	}
	return nil
}
