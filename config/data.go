package config

import (
	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
)

// Feeder is a data "csv" block: rows read once at load, shared by every VU.
type Feeder struct {
	Name      string
	Path      string
	Mode      string // sequential | random | unique
	DeclRange hcl.Range
}

// Cursor walks a feeder's rows for one scenario.
type Cursor struct{}

// Columns returns the header's column names.
func (f *Feeder) Columns() []string { panic("not implemented") }

// Len returns the number of rows.
func (f *Feeder) Len() int { panic("not implemented") }

// Row returns row i as an object of column name to string.
func (f *Feeder) Row(i int) cty.Value { panic("not implemented") }

// NewCursor returns a cursor for one scenario.
func (f *Feeder) NewCursor() *Cursor { panic("not implemented") }

// Next returns the next row; ok is false when a unique feeder ran out.
func (c *Cursor) Next() (row int, ok bool) { panic("not implemented") }

// Feeders returns the feeders r's expressions use.
func (r *Request) Feeders() []*Feeder { return nil }
