package config

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync/atomic"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

// dataWhere names data blocks in messages about per-iteration values.
const dataWhere = "A data block"

// dataTypeCSV is the only data source type.
const dataTypeCSV = "csv"

// The feeder modes.
const (
	modeSequential = "sequential"
	modeRandom     = "random"
	modeUnique     = "unique"
)

// feederModes lists the modes in the order messages show them.
var feederModes = []string{modeSequential, modeRandom, modeUnique}

// dataSchema is the schema of a data "csv" block.
var dataSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "path", Required: true},
		{Name: "mode"},
		{Name: "delimiter"},
	},
}

// Feeder is a data "csv" block: rows read once at load, shared by every VU.
// The fields of all rows sit in one string, so that a file of millions of
// rows costs about its own size plus 4 bytes per field, whatever the number
// of VUs and scenarios.
type Feeder struct {
	Name      string
	Path      string // as written, relative to the config folder
	Mode      string // sequential | random | unique
	DeclRange hcl.Range

	columns []string
	fields  string   // every field of every row, one after the other
	ends    []uint32 // ends[i*len(columns)+c] is where field c of row i ends in fields
	rows    int

	// built holds the rows Row built, by index, when the file has at most
	// maxBuiltRows of them: a row is an object of three maps, most of a
	// dynamic request's cost when built per iteration. Larger files keep
	// their compact form and are built per call.
	built []atomic.Pointer[cty.Value]

	// taken counts the rows handed out by all cursors of a unique feeder:
	// unique means once in the whole run, not once per scenario.
	taken atomic.Uint64
}

// Cursor walks a feeder's rows for one scenario.
type Cursor struct {
	rows  int
	first int // the first row a unique cursor hands out; see NewSegmentCursor
	mode  string
	next  *atomic.Uint64 // sequential: the scenario's own; unique: the feeder's
}

// Columns returns the header's column names.
func (f *Feeder) Columns() []string { return slices.Clone(f.columns) }

// Len returns the number of rows.
func (f *Feeder) Len() int { return f.rows }

// maxBuiltRows bounds the rows a feeder keeps built (see Feeder.built):
// a few hundred bytes each.
const maxBuiltRows = 4096

// Row returns row i, from 0 to Len()-1, as an object of column name to
// string. It builds the object on its first call for a small file, and on
// each call for a large one, and is safe for concurrent use.
func (f *Feeder) Row(i int) cty.Value {
	if i < len(f.built) {
		if v := f.built[i].Load(); v != nil {
			return *v
		}
		v := f.buildRow(i)
		f.built[i].Store(&v) // two VUs may build it at once: the same value
		return v
	}
	return f.buildRow(i)
}

// buildRow returns row i as Row does.
func (f *Feeder) buildRow(i int) cty.Value {
	n := len(f.columns)
	first := i * n
	start := 0
	if first > 0 {
		start = int(f.ends[first-1])
	}
	attrs := make(map[string]cty.Value, n)
	for c, name := range f.columns {
		end := int(f.ends[first+c])
		attrs[name] = cty.StringVal(f.fields[start:end])
		start = end
	}
	return cty.ObjectVal(attrs)
}

// NewCursor returns a cursor for one scenario, to be shared by all its VUs.
// Cursors of a sequential feeder are independent, each starting at row 0;
// those of a unique feeder share the feeder's rows, so that no row is used
// twice in the run.
func (f *Feeder) NewCursor() *Cursor {
	c := &Cursor{rows: f.rows, mode: f.Mode}
	switch f.Mode {
	case modeUnique:
		c.next = &f.taken
	case modeRandom:
	default:
		c.next = new(atomic.Uint64)
	}
	return c
}

// NewSegmentCursor is NewCursor for one machine's share of a run sharded
// over several: a unique feeder's cursor hands out only rows lo to hi-1,
// so that the machines, each with its own share, never use a row twice.
// Other modes walk every row, as NewCursor's do.
func (f *Feeder) NewSegmentCursor(lo, hi int) *Cursor {
	c := f.NewCursor()
	if f.Mode == modeUnique {
		c.first, c.rows = lo, max(0, hi-lo)
	}
	return c
}

// Next returns the next row; ok is false when a unique feeder ran out, and
// stays false. Next is safe for concurrent use.
func (c *Cursor) Next() (row int, ok bool) {
	if c.rows == 0 {
		return 0, false
	}
	n := uint64(c.rows)
	switch c.mode {
	case modeRandom:
		return rand.IntN(c.rows), true
	case modeUnique:
		// The check keeps a run that keeps asking from ever wrapping the
		// counter around.
		if c.next.Load() >= n {
			return 0, false
		}
		i := c.next.Add(1) - 1
		if i >= n {
			return 0, false
		}
		return c.first + int(i), true
	}
	return int((c.next.Add(1) - 1) % n), true
}

// Feeders returns the feeders r's expressions use, each once, in the order
// of their data blocks. The slice must not be modified.
func (r *Request) Feeders() []*Feeder { return r.feeders }

// feederEntry is a declared data block. ok is false when it could not be
// loaded; uses of it are then not checked, as the mistake is reported.
type feederEntry struct {
	feeder *Feeder
	ok     bool
}

// decodeData is the phase after locals: requests need the columns.
func (l *loader) decodeData(blocks []*hcl.Block) hcl.Diagnostics {
	var diags hcl.Diagnostics
	for _, b := range blocks {
		kind, name := b.Labels[0], b.Labels[1]
		if !hclsyntax.ValidIdentifier(name) {
			diags = append(diags, errorDiag(b.LabelRanges[1], "Invalid data block name",
				"%q cannot be used as data.%s. A name starts with a letter and holds only letters, digits, underscores and dashes.", name, name))
			continue
		}
		if earlier, dup := l.feeders[name]; dup {
			diags = append(diags, duplicateDiag("data block", name, b.DefRange, earlier.feeder.DeclRange))
			continue
		}
		f := &Feeder{Name: name, Mode: modeSequential, DeclRange: b.DefRange}
		entry := &feederEntry{feeder: f}
		l.feeders[name] = entry
		l.feederNames = append(l.feederNames, name)
		if kind != dataTypeCSV {
			diags = append(diags, errorDiag(b.LabelRanges[0], fmt.Sprintf("Unknown data type %q", kind),
				`hload reads data from CSV files only, such as data "csv" %q { path = "%s.csv" }.`, name, name))
			continue
		}
		var d hcl.Diagnostics
		entry.ok, d = l.decodeFeeder(f, b)
		diags = append(diags, d...)
		l.test.Feeders = append(l.test.Feeders, f)
	}
	return diags
}

// decodeFeeder reads the attributes of a data "csv" block, then its file.
func (l *loader) decodeFeeder(f *Feeder, b *hcl.Block) (bool, hcl.Diagnostics) {
	content, diags := b.Body.Content(dataSchema)
	if attr := content.Attributes["mode"]; attr != nil {
		// null means not set, so the default.
		mode, set, d := l.stringAttr(attr, dataWhere)
		diags = append(diags, d...)
		if set && !slices.Contains(feederModes, mode) {
			set = false
			diags = append(diags, errorDiag(attr.Expr.Range(), fmt.Sprintf("Unknown mode %q", mode),
				"A data block reads its rows in one of the modes %s.%s",
				quoteList(feederModes), didYouMean(mode, feederModes)))
		}
		if set {
			f.Mode = mode
		}
	}
	delimiter := ','
	if attr := content.Attributes["delimiter"]; attr != nil {
		s, set, d := l.stringAttr(attr, dataWhere)
		diags = append(diags, d...)
		r, size := utf8.DecodeRuneInString(s)
		if set && (size != len(s) || !validDelimiter(r)) {
			set = false
			diags = append(diags, errorDiag(attr.Expr.Range(), "Invalid delimiter",
				`The delimiter is the one character between fields, such as "," or ";" or "\t", other than a quote or a line break; got %q.`, s))
		}
		if set {
			delimiter = r
		}
	}
	attr := content.Attributes["path"]
	if attr == nil {
		return false, diags // reported by Content
	}
	path, pathOK, d := l.stringAttr(attr, dataWhere)
	diags = append(diags, d...)
	if (pathOK && path == "") || (!pathOK && !d.HasErrors()) {
		pathOK = false
		diags = append(diags, errorDiag(attr.Expr.Range(), "Empty path",
			`A data block needs the CSV file to read, relative to the config folder, such as path = "users.csv".`))
	}
	if !pathOK || diags.HasErrors() {
		return false, diags
	}
	f.Path = path
	if d := f.load(l.test.Dir, delimiter); d != nil {
		d.Subject = attr.Expr.Range().Ptr()
		return false, append(diags, d)
	}
	return true, diags
}

// validDelimiter reports whether encoding/csv accepts r between fields.
func validDelimiter(r rune) bool {
	return r != 0 && r != '"' && r != '\r' && r != '\n' && r != utf8.RuneError && utf8.ValidRune(r)
}

// load reads f.Path, relative to dir. It returns a diagnostic without a
// subject when the file is missing or malformed.
func (f *Feeder) load(dir string, delimiter rune) *hcl.Diagnostic {
	file, err := openConfined(dir, f.Path, "a data block")
	if err != nil {
		return &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Cannot read data file", Detail: capitalize(err.Error()) + "."}
	}
	defer file.Close()
	// The file's size bounds the bytes of its fields, since quotes,
	// delimiters and line breaks are dropped, so the fields never move.
	var fields strings.Builder
	if info, err := file.Stat(); err == nil && info.Size() > 0 && info.Size() <= math.MaxUint32 {
		fields.Grow(int(info.Size()))
	}

	r := csv.NewReader(file)
	r.Comma = delimiter
	r.ReuseRecord = true // the fields are copied into one string anyway
	r.FieldsPerRecord = 0
	if d := f.readHeader(r); d != nil {
		return d
	}
	if d := f.readRows(r, &fields); d != nil {
		return d
	}
	f.rows = len(f.ends) / len(f.columns)
	if f.rows == 0 {
		return dataProblem("No rows in data file",
			"%q has a header (%s) but no rows, so there is nothing to feed. Add a row after the header.",
			f.Path, quoteList(f.columns))
	}
	f.fields = fields.String()
	if f.rows <= maxBuiltRows {
		f.built = make([]atomic.Pointer[cty.Value], f.rows)
	}
	// append may leave up to twice the room needed; a million rows are
	// worth one copy to give it back.
	if cap(f.ends)-len(f.ends) > len(f.ends)/8 {
		f.ends = slices.Clone(f.ends)
	}
	return nil
}

// readHeader reads the file's first line into f.columns: every column
// named, once, in UTF-8.
func (f *Feeder) readHeader(r *csv.Reader) *hcl.Diagnostic {
	header, err := r.Read()
	switch {
	case errors.Is(err, io.EOF):
		return dataProblem("Empty data file",
			"%q is empty. Its first line must be a header that names the columns, such as email,password.", f.Path)
	case err != nil:
		return csvProblem(f.Path, err)
	}
	f.columns = slices.Clone(header)
	// Spreadsheets often start a UTF-8 file with a byte order mark, which
	// is not part of the first column's name.
	f.columns[0] = strings.TrimPrefix(f.columns[0], "\uFEFF")
	seen := make(map[string]int, len(f.columns))
	for i, name := range f.columns {
		line, _ := r.FieldPos(i)
		switch earlier, dup := seen[name]; {
		case !utf8.ValidString(name):
			return dataProblem("Invalid data file", "Line %d of %q is not valid UTF-8 text.", line, f.Path)
		case name == "":
			return dataProblem("Empty column name",
				"Column %d of the header of %q (line %d) has no name. Every column needs one, for data.%s.<column>.",
				i+1, f.Path, line, f.Name)
		case dup:
			return dataProblem("Duplicate column name",
				"The header of %q (line %d) names column %q twice, as columns %d and %d. Each column needs its own name.",
				f.Path, line, name, earlier+1, i+1)
		}
		seen[name] = i
	}
	return nil
}

// readRows reads the rows after the header into fields, one string for
// the whole file, and records where each field ends in f.ends.
func (f *Feeder) readRows(r *csv.Reader, fields *strings.Builder) *hcl.Diagnostic {
	for {
		record, err := r.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if pe := (*csv.ParseError)(nil); errors.As(err, &pe) && errors.Is(err, csv.ErrFieldCount) {
			return dataProblem("Wrong number of fields",
				"Line %d of %q has %s, but the header names %s (%s). Quote a field that holds the delimiter.",
				pe.StartLine, f.Path, plural(len(record), "field"), plural(len(f.columns), "column"), quoteList(f.columns))
		}
		if err != nil {
			return csvProblem(f.Path, err)
		}
		for _, field := range record {
			if !utf8.ValidString(field) {
				line, _ := r.FieldPos(0)
				return dataProblem("Invalid data file", "Line %d of %q is not valid UTF-8 text.", line, f.Path)
			}
			fields.WriteString(field)
			if fields.Len() > math.MaxUint32 {
				return dataProblem("Data file too large", "The fields of %q take more than 4 GiB.", f.Path)
			}
			f.ends = append(f.ends, uint32(fields.Len()))
		}
	}
}

// dataProblem is a data file's error; the caller sets the subject.
func dataProblem(summary, detail string, args ...any) *hcl.Diagnostic {
	return &hcl.Diagnostic{Severity: hcl.DiagError, Summary: summary, Detail: fmt.Sprintf(detail, args...)}
}

// csvProblem reports a file that is not valid CSV, with the line.
func csvProblem(path string, err error) *hcl.Diagnostic {
	d := &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Invalid CSV"}
	if pe := (*csv.ParseError)(nil); errors.As(err, &pe) {
		d.Detail = fmt.Sprintf("Line %d of %q: %s.", pe.Line, path, pe.Err)
		if errors.Is(err, csv.ErrBareQuote) || errors.Is(err, csv.ErrQuote) {
			d.Detail += ` A field that holds a quote is quoted itself, with the quote doubled: "say ""hi""".`
		}
	} else {
		d.Detail = fmt.Sprintf("Cannot read %q: %s.", path, err)
	}
	return d
}

// plural formats n things, such as "1 field" or "3 fields".
func plural(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}
