package sinks

import (
	"context"
	"errors"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/zclconf/go-cty/cty"

	"github.com/hload/hload/config"
	"github.com/hload/hload/core"
	"github.com/hload/hload/metrics"
)

// fileSink is a sink that would write the file path.
type fileSink struct{ path string }

func (s *fileSink) Start(context.Context, metrics.RunInfo) error { return nil }
func (s *fileSink) Write(metrics.Snapshot) error                 { return nil }
func (s *fileSink) Close(metrics.Summary) error                  { return nil }
func (s *fileSink) Path() string                                 { return s.path }

// fileType is a sink type name whose sinks write their block's path, or
// fail with err.
func fileType(name string, err error) Type {
	return Type{
		Name: name,
		Spec: hcldec.ObjectSpec{"path": &hcldec.AttrSpec{Name: "path", Type: cty.String, Required: true}},
		New: func(b Block) (core.Sink, error) {
			if err != nil {
				return nil, err
			}
			return &fileSink{path: b.Config.GetAttr("path").AsString()}, nil
		},
	}
}

func TestRegistryWith(t *testing.T) {
	base := NewRegistry(fileType("b", nil), fileType("a", nil))
	more := base.With(fileType("c", nil))
	if got := base.Names(); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("base: %v, want [a b]: With must not change it", got)
	}
	if got := more.Names(); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Errorf("with c: %v, want [a b c]", got)
	}
	specs := more.Specs()
	if len(specs) != 3 || specs["c"]["path"] == nil {
		t.Errorf("specs: %v, want a, b and c with their schema", specs)
	}
	if _, ok := more.Lookup("c"); !ok {
		t.Error("Lookup(c) found nothing")
	}
}

func TestRegistryNew(t *testing.T) {
	dir := t.TempDir()
	reg := NewRegistry(fileType("file", nil), fileType("broken", errors.New("no good")))
	block := func(typ, path string, line int) *config.Sink {
		return &config.Sink{Type: typ, Config: cty.ObjectVal(map[string]cty.Value{"path": cty.StringVal(path)}),
			DeclRange: hcl.Range{Filename: "test.hcl", Start: hcl.Pos{Line: line, Column: 1, Byte: 0}, End: hcl.Pos{Line: line, Column: 12, Byte: 11}}}
	}
	for _, tc := range []struct {
		name   string
		blocks []*config.Sink
		names  []string
		err    string
	}{
		{name: "each block, in order", blocks: []*config.Sink{block("file", filepath.Join(dir, "a"), 3), block("file", filepath.Join(dir, "b"), 7)},
			names: []string{`test.hcl:3,1-12: sink "file"`, `test.hcl:7,1-12: sink "file"`}},
		{name: "the constructor refuses", blocks: []*config.Sink{block("broken", "x", 4)},
			err: `test.hcl:4,1-12: sink "broken": no good`},
		{name: "its file cannot be written", blocks: []*config.Sink{block("file", filepath.Join(dir, "missing", "a"), 5)},
			err: `test.hcl:5,1-12: sink "file": the folder ` + filepath.Join(dir, "missing") + " does not exist"},
		{name: "a type from another registry", blocks: []*config.Sink{block("other", "x", 6)},
			err: `test.hcl:6,1-12: sink "other": no sink of this type is registered`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			built, names, err := reg.New(&config.Test{Sinks: tc.blocks}, core.Segment{}, io.Discard)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(names, tc.names) || len(built) != len(tc.blocks) {
				t.Fatalf("%d sinks named %q, want %q", len(built), names, tc.names)
			}
			for i, sk := range built {
				if p := sk.(*fileSink).path; p != tc.blocks[i].Config.GetAttr("path").AsString() {
					t.Errorf("sink %d writes %s, not its block's path", i, p)
				}
			}
		})
	}
}
