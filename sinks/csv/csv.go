// Package csv is the csv sink: one row per interval per (scenario, request)
// and per (scenario, flow) for spreadsheets, and optionally one row per
// request in a raw file.
//
//	sink "csv" {
//	  path     = "results.csv"
//	  raw      = true               # default false
//	  raw_path = "results.raw.csv"  # default: path with .csv replaced by .raw.csv
//	}
package csv

import (
	"bytes"
	"cmp"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/zclconf/go-cty/cty"

	"github.com/hload/hload/core"
	"github.com/hload/hload/metrics"
	"github.com/hload/hload/sinks"
)

// intervalHeader is the header row of the interval file. Columns are only
// ever added at the end, so that readers that take them by position keep
// working.
//
// kind says what a row counts. "request": the calls of one request. "flow":
// the runs of one flow (a scenario's setup is the flow "setup"); its
// request column is the flow's name, count the flows that ended, errors
// the failed ones, rps the flows ended per second, latency_* the
// flow_duration of the completed ones, and its bytes are 0, as its calls'
// bytes are in their own rows.
var intervalHeader = []string{
	"time", "elapsed_s", "scenario", "request", "count", "errors", "rps",
	"latency_mean_ms", "latency_p50_ms", "latency_p90_ms", "latency_p95_ms",
	"latency_p99_ms", "latency_max_ms", "bytes_sent", "bytes_received",
	"active_vus", "dropped_iterations", "kind",
}

// The values of the kind column.
const (
	kindRequest = "request"
	kindFlow    = "flow"
)

// rawHeader is the header row of the raw file.
var rawHeader = []string{
	"time_unix_ns", "scenario", "request", "vu", "iteration", "status",
	"latency_us", "bytes_sent", "bytes_received", "error",
}

const (
	// rawFlushSize is how much the raw file's writer gathers before a
	// write: about 2,500 rows, so a busy run costs a syscall per 256 KiB.
	rawFlushSize = 256 << 10
	// rawLimit is how much may wait for the disk before WriteRaw blocks:
	// about 0.8 s of rows at 100k requests/s.
	rawLimit = 8 << 20
	// intervalLimit is far more than any interval's rows; it exists so
	// that a stalled disk cannot grow memory without bound.
	intervalLimit = 16 << 20
)

// Spec is the schema of a `sink "csv"` block.
func Spec() hcldec.ObjectSpec {
	return hcldec.ObjectSpec{
		"path":     &hcldec.AttrSpec{Name: "path", Type: cty.String, Required: true},
		"raw":      &hcldec.AttrSpec{Name: "raw", Type: cty.Bool},
		"raw_path": &hcldec.AttrSpec{Name: "raw_path", Type: cty.String},
	}
}

// Type is the csv sink as its registry knows it: `sink "csv"`. Relative
// paths are taken from the working directory.
func Type() sinks.Type {
	return sinks.Type{Name: "csv", Spec: Spec(), New: func(b sinks.Block) (core.Sink, error) {
		s, err := New(b.Config, "")
		if err != nil {
			return nil, err
		}
		return s, nil
	}}
}

// Sink writes the interval file and, when raw is set, the raw file. It
// implements core.Sink and core.RawSink.
type Sink struct {
	path    string
	rawPath string // empty unless raw = true

	// create opens a file for writing; tests replace it to make writes fail.
	create func(path string) (io.WriteCloser, error)

	interval *spool
	raw      *spool

	// Write is never called concurrently, so these need no lock.
	rowBuf bytes.Buffer
	rowCSV *csv.Writer
	record []string
	order  []int

	// scratch holds per-goroutine row buffers for WriteRaw, so that
	// formatting happens outside the spool's lock and allocates nothing.
	scratch sync.Pool

	closed    bool // Write and Close are never concurrent, per core.Sink
	closeOnce sync.Once
	closeErr  error
}

// New returns a csv sink for a block that conforms to Spec. Relative paths
// are taken relative to dir, or to the working directory when dir is empty.
// No file is created before Start.
func New(cfg cty.Value, dir string) (*Sink, error) {
	if cfg.IsNull() || !cfg.Type().IsObjectType() || !cfg.IsWhollyKnown() {
		return nil, errors.New("csv sink: the block must be a known object")
	}
	path, _, err := stringAttr(cfg, "path")
	if err != nil {
		return nil, err
	}
	if path == "" {
		return nil, errors.New(`csv sink: "path" must not be empty`)
	}
	raw := false
	if cfg.Type().HasAttribute("raw") {
		if v := cfg.GetAttr("raw"); !v.IsNull() {
			if v.Type() != cty.Bool {
				return nil, errors.New(`csv sink: "raw" must be a bool`)
			}
			raw = v.True()
		}
	}
	rawPath, rawPathSet, err := stringAttr(cfg, "raw_path")
	if err != nil {
		return nil, err
	}
	switch {
	case rawPathSet && !raw:
		// A contradiction, not a default: the user expects a raw file.
		return nil, errors.New(`csv sink: "raw_path" is set but "raw" is not true`)
	case rawPathSet && rawPath == "":
		return nil, errors.New(`csv sink: "raw_path" must not be empty`)
	case raw && !rawPathSet:
		rawPath = defaultRawPath(path)
	}

	s := &Sink{path: resolve(path, dir), create: createFile}
	if raw {
		s.rawPath = resolve(rawPath, dir)
		if s.rawPath == s.path {
			return nil, fmt.Errorf("csv sink: raw_path and path are the same file %q", path)
		}
	}
	s.scratch.New = func() any {
		b := make([]byte, 0, 256)
		return &b
	}
	return s, nil
}

// stringAttr reads an optional string attribute; set is false when it is
// absent or null.
func stringAttr(cfg cty.Value, name string) (v string, set bool, err error) {
	if !cfg.Type().HasAttribute(name) {
		return "", false, nil
	}
	a := cfg.GetAttr(name)
	if a.IsNull() {
		return "", false, nil
	}
	if a.Type() != cty.String {
		return "", false, fmt.Errorf("csv sink: %q must be a string", name)
	}
	return a.AsString(), true, nil
}

// defaultRawPath puts the raw file beside the interval file:
// results.csv -> results.raw.csv.
func defaultRawPath(path string) string {
	if base, ok := strings.CutSuffix(path, ".csv"); ok {
		return base + ".raw.csv"
	}
	return path + ".raw.csv"
}

func resolve(path, dir string) string {
	if dir != "" && !filepath.IsAbs(path) {
		path = filepath.Join(dir, path)
	}
	return filepath.Clean(path)
}

func createFile(path string) (io.WriteCloser, error) {
	return os.Create(path)
}

// Path is the interval file's path.
func (s *Sink) Path() string { return s.path }

// RawPath is the raw file's path, or "" when raw is not set.
func (s *Sink) RawPath() string { return s.rawPath }

// RawEnabled reports whether the sink keeps raw rows. The Sink type always
// has WriteRaw, so a caller that finds RawSink by type assertion can ask
// this to skip building records nobody keeps.
func (s *Sink) RawEnabled() bool { return s.rawPath != "" }

// RawRowsWritten is the number of raw rows the file has accepted so far;
// after Close, every row that was not lost to a reported error.
func (s *Sink) RawRowsWritten() int64 {
	if s.raw == nil {
		return 0
	}
	s.raw.mu.Lock()
	defer s.raw.mu.Unlock()
	return s.raw.dataWritten()
}

// Start creates the files and writes their headers. An error means the sink
// could not start; nothing is left open.
func (s *Sink) Start(ctx context.Context, run metrics.RunInfo) error {
	if s.interval != nil {
		return errors.New("csv sink: started twice")
	}
	f, err := s.create(s.path)
	if err != nil {
		return fmt.Errorf("csv sink: %w", err)
	}
	var rf io.WriteCloser
	if s.rawPath != "" {
		if rf, err = s.create(s.rawPath); err != nil {
			f.Close()
			return fmt.Errorf("csv sink: %w", err)
		}
	}

	s.rowCSV = csv.NewWriter(&s.rowBuf)
	s.record = make([]string, len(intervalHeader))
	s.interval = newSpool(s.path, f, 1, intervalLimit)
	s.rowBuf.Reset()
	s.rowCSV.Write(intervalHeader) // writes to a bytes.Buffer cannot fail
	s.rowCSV.Flush()
	s.interval.header(s.rowBuf.Bytes())
	if rf != nil {
		s.raw = newSpool(s.rawPath, rf, rawFlushSize, rawLimit)
		var b []byte
		for i, h := range rawHeader {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, h...)
		}
		s.raw.header(append(b, '\n'))
	}
	return nil
}

// Write adds one row per (scenario, request) of the snapshot, sorted by
// scenario and request, then one per (scenario, flow), sorted likewise. The rps column is the snapshot's rate: in the
// run's last row, when that interval is shorter than the others, it runs
// over the interval before it too (metrics.Snapshot.RateStart), so the
// calls that end with the run are not scaled from a few milliseconds to
// a per-second rate; the count column is the row's own, so the counts
// still add up to the summary's. A scenario with active VUs or dropped iterations
// but no finished request in the interval gets a row with an empty request,
// so that its VUs and drops are never missing from the file. A flow
// row's latencies are left empty when no flow completed in the interval.
// It returns the file's first write error, if any; the rows are counted,
// written or not.
func (s *Sink) Write(snap metrics.Snapshot) error {
	if s.interval == nil {
		return errors.New("csv sink: Write before Start")
	}
	if s.closed {
		return errors.New("csv sink: Write after Close")
	}

	end := snap.End.Format(time.RFC3339)
	elapsed := strconv.FormatFloat(snap.Elapsed.Seconds(), 'f', 3, 64)
	s.rowBuf.Reset()
	// seen are the scenarios that have a row.
	seen := make(map[string]bool, len(snap.VUs))
	rows := s.requestRows(end, elapsed, &snap, seen)
	rows += s.idleRows(end, elapsed, &snap, seen)
	rows += s.flowRows(end, elapsed, &snap)
	s.rowCSV.Flush()
	if rows > 0 {
		// Even after a write error: the spool counts the rows it can no
		// longer write, so Close says how many were lost.
		s.interval.append(s.rowBuf.Bytes(), rows)
	}
	if err := s.interval.failed(); err != nil {
		return fmt.Errorf("csv sink: %w", err)
	}
	return nil
}

// requestRows encodes one row per request of the snapshot, sorted by
// scenario and request, notes their scenarios in seen, and returns how
// many.
func (s *Sink) requestRows(end, elapsed string, snap *metrics.Snapshot, seen map[string]bool) int64 {
	s.order = s.order[:0]
	for i := range snap.Series {
		s.order = append(s.order, i)
	}
	sort.SliceStable(s.order, func(a, b int) bool {
		x, y := &snap.Series[s.order[a]], &snap.Series[s.order[b]]
		if x.Scenario != y.Scenario {
			return x.Scenario < y.Scenario
		}
		return x.Request < y.Request
	})
	for _, i := range s.order {
		f := &snap.Series[i]
		seen[f.Scenario] = true
		r := s.record
		r[0], r[1], r[2], r[3] = end, elapsed, f.Scenario, f.Request
		r[4] = strconv.FormatInt(f.Count, 10)
		r[5] = strconv.FormatInt(f.Errors, 10)
		r[6] = formatFloat(f.RPS)
		r[7] = formatFloat(f.Latency.Mean)
		r[8] = formatFloat(f.Latency.P50)
		r[9] = formatFloat(f.Latency.P90)
		r[10] = formatFloat(f.Latency.P95)
		r[11] = formatFloat(f.Latency.P99)
		r[12] = formatFloat(f.Latency.Max)
		r[13] = strconv.FormatInt(f.BytesSent, 10)
		r[14] = strconv.FormatInt(f.BytesReceived, 10)
		r[15] = strconv.Itoa(snap.VUs[f.Scenario])
		r[16] = strconv.FormatInt(snap.Dropped[f.Scenario], 10)
		r[17] = kindRequest
		s.rowCSV.Write(r)
	}
	return int64(len(s.order))
}

// idleRows encodes a row with an empty request for each scenario not in
// seen that has active VUs or dropped iterations, sorted by scenario, and
// returns how many: its VUs and drops are never missing from the file.
func (s *Sink) idleRows(end, elapsed string, snap *metrics.Snapshot, seen map[string]bool) int64 {
	var idle []string
	for sc, n := range snap.VUs {
		if !seen[sc] && n != 0 {
			idle = append(idle, sc)
			seen[sc] = true
		}
	}
	for sc, n := range snap.Dropped {
		if !seen[sc] && n != 0 {
			idle = append(idle, sc)
			seen[sc] = true
		}
	}
	sort.Strings(idle)
	for _, sc := range idle {
		// Latencies are left empty: there is none, and a 0 would pull
		// a spreadsheet's average down.
		r := s.record
		r[0], r[1], r[2], r[3] = end, elapsed, sc, ""
		r[4], r[5], r[6] = "0", "0", "0"
		for j := 7; j <= 12; j++ {
			r[j] = ""
		}
		r[13], r[14] = "0", "0"
		r[15] = strconv.Itoa(snap.VUs[sc])
		r[16] = strconv.FormatInt(snap.Dropped[sc], 10)
		r[17] = kindRequest
		s.rowCSV.Write(r)
	}
	return int64(len(idle))
}

// flowRows encodes one row per flow of the snapshot, sorted by scenario
// and flow, and returns how many.
func (s *Sink) flowRows(end, elapsed string, snap *metrics.Snapshot) int64 {
	flows := slices.SortedStableFunc(slices.Values(snap.Flows), func(x, y metrics.FlowSeriesFigures) int {
		return cmp.Or(cmp.Compare(x.Scenario, y.Scenario), cmp.Compare(x.Flow, y.Flow))
	})
	for i := range flows {
		f := &flows[i]
		r := s.record
		r[0], r[1], r[2], r[3] = end, elapsed, f.Scenario, f.Flow
		r[4] = strconv.FormatInt(f.Count, 10)
		r[5] = strconv.FormatInt(f.Failed, 10)
		r[6] = formatFloat(f.Rate)
		d := &f.Duration
		for j, v := range []float64{d.Mean, d.P50, d.P90, d.P95, d.P99, d.Max} {
			r[7+j] = ""
			if f.Completed > 0 {
				// Without a completed flow there is no duration; a 0
				// would pull a spreadsheet's average down.
				r[7+j] = formatFloat(v)
			}
		}
		r[13], r[14] = "0", "0"
		r[15] = strconv.Itoa(snap.VUs[f.Scenario])
		r[16] = strconv.FormatInt(snap.Dropped[f.Scenario], 10)
		r[17] = kindFlow
		s.rowCSV.Write(r)
	}
	return int64(len(flows))
}

// formatFloat keeps three decimals: a microsecond for latencies in ms.
func formatFloat(v float64) string {
	return strconv.FormatFloat(v, 'f', 3, 64)
}

// WriteRaw adds one row to the raw file. It is safe for concurrent use and
// allocates nothing. It blocks only when the disk is so far behind that
// rawLimit bytes are waiting; it never drops a row. Without raw = true it
// does nothing.
func (s *Sink) WriteRaw(r metrics.RawRecord) {
	if s.raw == nil {
		return
	}
	bp := s.scratch.Get().(*[]byte)
	b := appendRawRow((*bp)[:0], &r)
	s.raw.append(b, 1)
	*bp = b
	s.scratch.Put(bp)
}

// appendRawRow formats r as one csv line with strconv, not fmt or
// encoding/csv, because it runs once per request.
func appendRawRow(b []byte, r *metrics.RawRecord) []byte {
	b = strconv.AppendInt(b, r.Time.UnixNano(), 10)
	b = append(b, ',')
	b = appendField(b, r.Scenario)
	b = append(b, ',')
	b = appendField(b, r.Request)
	b = append(b, ',')
	b = strconv.AppendUint(b, r.VU, 10)
	b = append(b, ',')
	b = strconv.AppendUint(b, r.Iteration, 10)
	b = append(b, ',')
	b = strconv.AppendInt(b, int64(r.Status), 10)
	b = append(b, ',')
	b = strconv.AppendInt(b, r.Latency.Microseconds(), 10)
	b = append(b, ',')
	b = strconv.AppendInt(b, r.BytesSent, 10)
	b = append(b, ',')
	b = strconv.AppendInt(b, r.BytesReceived, 10)
	b = append(b, ',')
	b = appendField(b, r.Error)
	return append(b, '\n')
}

// appendField appends a text field quoted as encoding/csv would quote
// it, so that names and error kinds with commas, quotes or newlines read
// back unchanged. A protocol names the error kinds, and a plugin's may
// come from its server, so the text is made safe first: its control
// characters escaped (metrics.Printable), and a field that a spreadsheet
// would run as a formula (starting with =, +, -, @ or a tab) prefixed
// with ', as OWASP's advice on CSV injection says.
func appendField(b []byte, f string) []byte {
	f = metrics.Printable(f)
	if f != "" && strings.IndexByte("=+-@\t", f[0]) >= 0 {
		f = "'" + f
	}
	if !fieldNeedsQuotes(f) {
		return append(b, f...)
	}
	b = append(b, '"')
	for {
		i := strings.IndexByte(f, '"')
		if i < 0 {
			break
		}
		b = append(b, f[:i+1]...)
		b = append(b, '"')
		f = f[i+1:]
	}
	b = append(b, f...)
	return append(b, '"')
}

// fieldNeedsQuotes mirrors encoding/csv's rule for a comma separator.
func fieldNeedsQuotes(f string) bool {
	if f == "" {
		return false
	}
	if f == `\.` || strings.ContainsAny(f, ",\"\r\n") {
		return true
	}
	r, _ := utf8.DecodeRuneInString(f)
	return unicode.IsSpace(r)
}

// Close writes every row accepted before it, closes the files and returns
// the first error of the run's writes, with how many rows it cost. Later
// calls return the same result.
func (s *Sink) Close(sum metrics.Summary) error {
	s.closeOnce.Do(func() {
		s.closed = true
		if s.interval == nil {
			return // never started: nothing to flush
		}
		err := s.interval.close()
		if s.raw != nil {
			if rerr := s.raw.close(); err == nil {
				err = rerr
			} else if rerr != nil {
				// One line, for the console's verdict; both files named.
				err = fmt.Errorf("%w; %w", err, rerr)
			}
		}
		if err != nil {
			s.closeErr = fmt.Errorf("csv sink: %w", err)
		}
	})
	return s.closeErr
}
