package csv

import (
	"bufio"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"github.com/hload/hload/metrics"
)

// The contracts of core.Sink and core.RawSink, restated so that this test
// does not depend on core.
var (
	_ interface {
		Start(context.Context, metrics.RunInfo) error
		Write(metrics.Snapshot) error
		Close(metrics.Summary) error
	} = (*Sink)(nil)
	_ interface{ WriteRaw(metrics.RawRecord) } = (*Sink)(nil)
)

// decode decodes an HCL body with Spec, as the config package will.
func decode(t testing.TB, src string) (cty.Value, hcl.Diagnostics) {
	t.Helper()
	f, diags := hclsyntax.ParseConfig([]byte(src), "test.hcl", hcl.InitialPos)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	return hcldec.Decode(f.Body, Spec(), nil)
}

func TestNew(t *testing.T) {
	tests := []struct {
		name    string
		src     string
		dir     string
		path    string
		rawPath string
		wantErr string
	}{
		{name: "path only", src: `path = "results.csv"`, path: "results.csv"},
		{name: "dir", src: `path = "results.csv"`, dir: "/tmp/run", path: "/tmp/run/results.csv"},
		{name: "absolute path ignores dir", src: `path = "/data/r.csv"`, dir: "/tmp/run", path: "/data/r.csv"},
		{name: "raw default path", src: "path = \"out/results.csv\"\nraw = true", path: "out/results.csv", rawPath: "out/results.raw.csv"},
		{name: "raw default path without .csv", src: "path = \"results.txt\"\nraw = true", path: "results.txt", rawPath: "results.txt.raw.csv"},
		{name: "raw path", src: "path = \"a.csv\"\nraw = true\nraw_path = \"b.csv\"", dir: "d", path: "d/a.csv", rawPath: "d/b.csv"},
		{name: "raw false", src: "path = \"a.csv\"\nraw = false", path: "a.csv"},
		{name: "raw_path without raw", src: "path = \"a.csv\"\nraw_path = \"b.csv\"", wantErr: `"raw_path" is set`},
		{name: "same file", src: "path = \"a.csv\"\nraw = true\nraw_path = \"./a.csv\"", wantErr: "same file"},
		{name: "empty path", src: `path = ""`, wantErr: "must not be empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, diags := decode(t, tt.src)
			if diags.HasErrors() {
				t.Fatal(diags)
			}
			s, err := New(cfg, tt.dir)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s.Path() != tt.path || s.RawPath() != tt.rawPath {
				t.Errorf("paths = %q, %q; want %q, %q", s.Path(), s.RawPath(), tt.path, tt.rawPath)
			}
			if s.RawEnabled() != (tt.rawPath != "") {
				t.Errorf("RawEnabled = %v", s.RawEnabled())
			}
		})
	}
}

func TestSpecRequiresPath(t *testing.T) {
	_, diags := decode(t, `raw = true`)
	if !diags.HasErrors() {
		t.Fatal("a block without path decoded without error")
	}
}

// newSink returns a started sink writing into a temporary folder.
func newSink(t *testing.T, src string) *Sink {
	t.Helper()
	cfg, diags := decode(t, src)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	s, err := New(cfg, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background(), metrics.RunInfo{RunID: "r1"}); err != nil {
		t.Fatal(err)
	}
	return s
}

func readCSV(t *testing.T, path string) [][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := csv.NewReader(f)
	r.ReuseRecord = false
	rows, err := r.ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

func TestIntervalRows(t *testing.T) {
	s := newSink(t, `path = "results.csv"`)
	t0 := time.Date(2025, 5, 1, 10, 0, 0, 0, time.UTC)
	lat := metrics.LatencyFigures{Mean: 12.5, P50: 10, P90: 20.25, P95: 30, P99: 45.0004, Max: 99.9}
	snaps := []metrics.Snapshot{
		{
			Start: t0, End: t0.Add(time.Second), Elapsed: time.Second,
			Series: []metrics.SeriesFigures{
				// Out of order on purpose: the file is sorted.
				{Scenario: "browse", Request: "main", RequestFigures: metrics.RequestFigures{
					Count: 800, Errors: 2, RPS: 800, Latency: lat, BytesSent: 1000, BytesReceived: 50000}},
				{Scenario: "browse", Request: "detail", RequestFigures: metrics.RequestFigures{
					Count: 12, RPS: 12, Latency: lat, BytesSent: 10, BytesReceived: 500}},
				{Scenario: `odd, "name"`, Request: "x", RequestFigures: metrics.RequestFigures{Count: 1, RPS: 1}},
			},
			VUs:     map[string]int{"browse": 40, `odd, "name"`: 1, "open": 7},
			Dropped: map[string]int64{"browse": 0, "open": 3},
		},
		{
			Start: t0.Add(time.Second), End: t0.Add(1500 * time.Millisecond), Elapsed: 1500 * time.Millisecond,
			Series: []metrics.SeriesFigures{
				{Scenario: "browse", Request: "main", RequestFigures: metrics.RequestFigures{Count: 5, RPS: 10}},
			},
			VUs: map[string]int{"browse": 0},
		},
	}
	for _, snap := range snaps {
		if err := s.Write(snap); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(metrics.Summary{}); err != nil {
		t.Fatal(err)
	}

	got := readCSV(t, s.Path())
	want := [][]string{
		intervalHeader,
		{"2025-05-01T10:00:01Z", "1.000", "browse", "detail", "12", "0", "12.000", "12.500", "10.000", "20.250", "30.000", "45.000", "99.900", "10", "500", "40", "0", "request"},
		{"2025-05-01T10:00:01Z", "1.000", "browse", "main", "800", "2", "800.000", "12.500", "10.000", "20.250", "30.000", "45.000", "99.900", "1000", "50000", "40", "0", "request"},
		{"2025-05-01T10:00:01Z", "1.000", `odd, "name"`, "x", "1", "0", "1.000", "0.000", "0.000", "0.000", "0.000", "0.000", "0.000", "0", "0", "1", "0", "request"},
		// A scenario with VUs and drops but no finished request still shows.
		{"2025-05-01T10:00:01Z", "1.000", "open", "", "0", "0", "0", "", "", "", "", "", "", "0", "0", "7", "3", "request"},
		{"2025-05-01T10:00:01Z", "1.500", "browse", "main", "5", "0", "10.000", "0.000", "0.000", "0.000", "0.000", "0.000", "0.000", "0", "0", "0", "0", "request"},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d rows, want %d:\n%q", len(got), len(want), got)
	}
	for i := range want {
		if strings.Join(got[i], "|") != strings.Join(want[i], "|") {
			t.Errorf("row %d:\n got %q\nwant %q", i, got[i], want[i])
		}
	}
}

// TestIntervalHeader: the columns of old stay where they were, and kind
// is added at the end, so that a reader taking columns by position keeps
// working.
func TestIntervalHeader(t *testing.T) {
	s := newSink(t, `path = "results.csv"`)
	if err := s.Close(metrics.Summary{}); err != nil {
		t.Fatal(err)
	}
	want := "time,elapsed_s,scenario,request,count,errors,rps,latency_mean_ms,latency_p50_ms,latency_p90_ms," +
		"latency_p95_ms,latency_p99_ms,latency_max_ms,bytes_sent,bytes_received,active_vus,dropped_iterations,kind"
	if got := readCSV(t, s.Path()); len(got) != 1 || strings.Join(got[0], ",") != want {
		t.Fatalf("file = %q, want the header\n%s", got, want)
	}
}

// TestIntervalFlowRows: a snapshot's flows follow its requests, one row
// each, sorted, with kind "flow"; the request rows are the ones the same
// snapshot gives without flows.
func TestIntervalFlowRows(t *testing.T) {
	t0 := time.Date(2025, 5, 1, 10, 0, 0, 0, time.UTC)
	snap := metrics.Snapshot{
		Start: t0, End: t0.Add(2 * time.Second), Elapsed: 2 * time.Second,
		Series: []metrics.SeriesFigures{
			{Scenario: "shop", Request: "list", RequestFigures: metrics.RequestFigures{
				Count: 30, Errors: 3, RPS: 15, Latency: metrics.LatencyFigures{Mean: 4, P50: 3, P90: 6, P95: 7, P99: 9, Max: 11},
				BytesSent: 300, BytesReceived: 9000}},
		},
		VUs:     map[string]int{"shop": 10, "idle": 2},
		Dropped: map[string]int64{"shop": 1},
	}
	without := writeRows(t, snap)

	snap.Flows = []metrics.FlowSeriesFigures{
		// Out of order on purpose: the file is sorted.
		{Scenario: "shop", Flow: "setup", FlowFigures: metrics.FlowFigures{
			Count: 10, Completed: 9, Failed: 1, FailureRate: 0.1, Rate: 5,
			Duration: metrics.LatencyFigures{Mean: 20.5, P50: 20, P90: 25, P95: 26, P99: 30.25, Max: 31}}},
		{Scenario: "shop", Flow: "order", FlowFigures: metrics.FlowFigures{
			Count: 27, Completed: 24, Failed: 3, FailureRate: 3.0 / 27, Rate: 13.5,
			Duration: metrics.LatencyFigures{Mean: 60.125, P50: 55, P90: 80, P95: 90.5, P99: 120, Max: 130.0004}}},
		// Every flow failed: no duration to show.
		{Scenario: "idle", Flow: "browse", FlowFigures: metrics.FlowFigures{Count: 2, Failed: 2, FailureRate: 1, Rate: 1}},
	}
	got := writeRows(t, snap)
	const at = "2025-05-01T10:00:02Z"
	want := append(without,
		[]string{at, "2.000", "idle", "browse", "2", "2", "1.000", "", "", "", "", "", "", "0", "0", "2", "0", "flow"},
		[]string{at, "2.000", "shop", "order", "27", "3", "13.500", "60.125", "55.000", "80.000", "90.500", "120.000", "130.000", "0", "0", "10", "1", "flow"},
		[]string{at, "2.000", "shop", "setup", "10", "1", "5.000", "20.500", "20.000", "25.000", "26.000", "30.250", "31.000", "0", "0", "10", "1", "flow"},
	)
	if len(without) != 3 || without[1][17] != "request" || without[2][3] != "" {
		t.Fatalf("without flows: %q, want the header, the request row and the idle scenario's row", without)
	}
	if len(got) != len(want) {
		t.Fatalf("got %d rows, want %d:\n%q", len(got), len(want), got)
	}
	for i := range want {
		if strings.Join(got[i], "|") != strings.Join(want[i], "|") {
			t.Errorf("row %d:\n got %q\nwant %q", i, got[i], want[i])
		}
	}
}

// writeRows writes one snapshot to a new sink and returns its file's rows.
func writeRows(t *testing.T, snap metrics.Snapshot) [][]string {
	t.Helper()
	s := newSink(t, `path = "results.csv"`)
	if err := s.Write(snap); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(metrics.Summary{}); err != nil {
		t.Fatal(err)
	}
	return readCSV(t, s.Path())
}

func TestRawConcurrent(t *testing.T) {
	const goroutines, perGoroutine = 8, 10_000
	s := newSink(t, "path = \"results.csv\"\nraw = true")
	base := time.Unix(1_700_000_000, 0)
	// Names and errors that need quoting must read back unchanged.
	names := []string{"main", "a,b", `say "hi"`, " lead", "multi\nline", "상품"}

	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range perGoroutine {
				s.WriteRaw(metrics.RawRecord{
					Time:          base.Add(time.Duration(i) * time.Microsecond),
					Scenario:      "sc",
					Request:       names[i%len(names)],
					VU:            uint64(g + 1),
					Iteration:     uint64(i),
					Status:        200 + i%3,
					Latency:       time.Duration(i) * time.Microsecond,
					BytesSent:     int64(i),
					BytesReceived: int64(2 * i),
					Error:         names[(i+1)%len(names)],
				})
			}
		})
	}
	wg.Wait()
	if err := s.Close(metrics.Summary{}); err != nil {
		t.Fatal(err)
	}
	if n := s.RawRowsWritten(); n != goroutines*perGoroutine {
		t.Errorf("RawRowsWritten = %d, want %d", n, goroutines*perGoroutine)
	}

	rows := readCSV(t, s.RawPath())
	if strings.Join(rows[0], ",") != strings.Join(rawHeader, ",") {
		t.Fatalf("header = %q", rows[0])
	}
	rows = rows[1:]
	if len(rows) != goroutines*perGoroutine {
		t.Fatalf("%d rows, want %d", len(rows), goroutines*perGoroutine)
	}
	seen := make(map[[2]uint64]bool, len(rows))
	for _, r := range rows {
		vu, _ := strconv.ParseUint(r[3], 10, 64)
		it, _ := strconv.ParseUint(r[4], 10, 64)
		key := [2]uint64{vu, it}
		if seen[key] {
			t.Fatalf("row %v written twice", key)
		}
		seen[key] = true
		i := int(it)
		want := []string{
			strconv.FormatInt(base.Add(time.Duration(i)*time.Microsecond).UnixNano(), 10),
			"sc", names[i%len(names)], r[3], r[4], strconv.Itoa(200 + i%3),
			strconv.Itoa(i), strconv.Itoa(i), strconv.Itoa(2 * i), names[(i+1)%len(names)],
		}
		if strings.Join(r, "|") != strings.Join(want, "|") {
			t.Fatalf("row\n got %q\nwant %q", r, want)
		}
	}
	for g := range goroutines {
		for i := range perGoroutine {
			if !seen[[2]uint64{uint64(g + 1), uint64(i)}] {
				t.Fatalf("row vu %d iteration %d missing", g+1, i)
			}
		}
	}
}

func TestWriteRawWithoutRawIsNoop(t *testing.T) {
	s := newSink(t, `path = "results.csv"`)
	s.WriteRaw(metrics.RawRecord{Scenario: "sc"})
	if err := s.Close(metrics.Summary{}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(s.Path()), "results.raw.csv")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("raw file exists without raw = true: %v", err)
	}
}

// failingFile accepts writes until budget bytes, then fails.
type failingFile struct {
	mu     sync.Mutex
	budget int
	closed bool
}

var errDiskFull = errors.New("disk full")

func (f *failingFile) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(p) > f.budget {
		return 0, errDiskFull
	}
	f.budget -= len(p)
	return len(p), nil
}

func (f *failingFile) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	return nil
}

func TestWriteErrorSurfacesFromClose(t *testing.T) {
	t.Run("raw", func(t *testing.T) {
		cfg, _ := decode(t, "path = \"r.csv\"\nraw = true")
		s, err := New(cfg, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		files := map[string]*failingFile{}
		s.create = func(path string) (io.WriteCloser, error) {
			f := &failingFile{budget: 1 << 30}
			if strings.HasSuffix(path, ".raw.csv") {
				f.budget = 0
			}
			files[path] = f
			return f, nil
		}
		if err := s.Start(context.Background(), metrics.RunInfo{}); err != nil {
			t.Fatal(err)
		}
		for i := range 1000 {
			s.WriteRaw(metrics.RawRecord{Scenario: "sc", Iteration: uint64(i)})
		}
		err = s.Close(metrics.Summary{})
		if !errors.Is(err, errDiskFull) {
			t.Fatalf("Close = %v, want %v", err, errDiskFull)
		}
		// The header is a row too, of zero count: 1000 rows are lost.
		if !strings.Contains(err.Error(), "1000 of 1000 rows not written") {
			t.Errorf("Close = %v; want the count of rows lost", err)
		}
		for p, f := range files {
			if !f.closed {
				t.Errorf("%s not closed", p)
			}
		}
		if err2 := s.Close(metrics.Summary{}); err2 == nil || err2.Error() != err.Error() {
			t.Errorf("second Close = %v, want %v", err2, err)
		}
	})
	t.Run("interval, early from Write", func(t *testing.T) {
		cfg, _ := decode(t, `path = "r.csv"`)
		s, _ := New(cfg, "")
		s.create = func(string) (io.WriteCloser, error) { return &failingFile{}, nil }
		if err := s.Start(context.Background(), metrics.RunInfo{}); err != nil {
			t.Fatal(err)
		}
		snap := metrics.Snapshot{Series: []metrics.SeriesFigures{{Scenario: "s", Request: "r"}}}
		var werr error
		for deadline := time.Now().Add(5 * time.Second); werr == nil && time.Now().Before(deadline); {
			werr = s.Write(snap)
			time.Sleep(time.Millisecond)
		}
		if !errors.Is(werr, errDiskFull) {
			t.Errorf("Write = %v, want %v", werr, errDiskFull)
		}
		if err := s.Close(metrics.Summary{}); !errors.Is(err, errDiskFull) {
			t.Errorf("Close = %v, want %v", err, errDiskFull)
		}
	})
	t.Run("dev full", func(t *testing.T) {
		if _, err := os.Stat("/dev/full"); err != nil {
			t.Skip("no /dev/full")
		}
		s := newSinkWith(t, "path = \"r.csv\"\nraw = true", func(string) (io.WriteCloser, error) {
			return os.OpenFile("/dev/full", os.O_WRONLY, 0)
		})
		for range 10_000 { // more than one batch, so a write reaches the device
			s.WriteRaw(metrics.RawRecord{Scenario: "sc"})
		}
		if err := s.Close(metrics.Summary{}); !errors.Is(err, syscall.ENOSPC) {
			t.Fatalf("Close = %v, want ENOSPC", err)
		}
	})
}

func newSinkWith(t testing.TB, src string, create func(string) (io.WriteCloser, error)) *Sink {
	t.Helper()
	cfg, _ := decode(t, src)
	s, err := New(cfg, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s.create = create
	if err := s.Start(context.Background(), metrics.RunInfo{}); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestStartFails(t *testing.T) {
	dir := t.TempDir()
	cfg, _ := decode(t, `path = "missing/folder/r.csv"`)
	s, err := New(cfg, dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background(), metrics.RunInfo{}); err == nil {
		t.Fatal("Start succeeded in a missing folder")
	}
	if err := s.Close(metrics.Summary{}); err != nil {
		t.Errorf("Close after a failed Start = %v", err)
	}

	// The raw file fails: the interval file must not stay open.
	var opened []*failingFile
	cfg, _ = decode(t, "path = \"r.csv\"\nraw = true")
	s, _ = New(cfg, dir)
	s.create = func(path string) (io.WriteCloser, error) {
		if strings.HasSuffix(path, ".raw.csv") {
			return nil, errors.New("permission denied")
		}
		f := &failingFile{budget: 1 << 20}
		opened = append(opened, f)
		return f, nil
	}
	if err := s.Start(context.Background(), metrics.RunInfo{}); err == nil {
		t.Fatal("Start succeeded")
	}
	if len(opened) != 1 || !opened[0].closed {
		t.Error("interval file left open after a failed Start")
	}
}

func TestCloseTwice(t *testing.T) {
	s := newSink(t, "path = \"results.csv\"\nraw = true")
	s.WriteRaw(metrics.RawRecord{Scenario: "sc"})
	for i := range 2 {
		if err := s.Close(metrics.Summary{}); err != nil {
			t.Fatalf("Close #%d = %v", i+1, err)
		}
	}
	if err := s.Write(metrics.Snapshot{}); err == nil {
		t.Error("Write after Close succeeded")
	}
	if rows := readCSV(t, s.RawPath()); len(rows) != 2 {
		t.Errorf("raw file has %d rows, want header and 1", len(rows))
	}
}

// gateFile blocks every write until the gate is opened.
type gateFile struct {
	gate    chan struct{}
	mu      sync.Mutex
	written []byte
}

func (f *gateFile) Write(p []byte) (int, error) {
	<-f.gate
	f.mu.Lock()
	defer f.mu.Unlock()
	f.written = append(f.written, p...)
	return len(p), nil
}

func (f *gateFile) Close() error { return nil }

// TestSpoolBackpressure checks that a stalled disk blocks producers
// instead of dropping rows, and that every row arrives once it resumes.
func TestSpoolBackpressure(t *testing.T) {
	f := &gateFile{gate: make(chan struct{})}
	sp := newSpool("gate", f, 16, 64)
	const producers, rows = 4, 100
	var done atomic.Int64
	var wg sync.WaitGroup
	for p := range producers {
		wg.Go(func() {
			for i := range rows {
				sp.append(fmt.Appendf(nil, "%d-%03d\n", p, i), 1) // 6 bytes
				done.Add(1)
			}
		})
	}
	time.Sleep(50 * time.Millisecond)
	if n := done.Load(); n >= producers*rows {
		t.Fatalf("all %d rows accepted while the disk was stalled", n)
	}
	close(f.gate)
	wg.Wait()
	if err := sp.close(); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(f.written), "\n"), "\n")
	if len(lines) != producers*rows {
		t.Fatalf("%d rows written, want %d", len(lines), producers*rows)
	}
	seen := map[string]bool{}
	for _, l := range lines {
		if seen[l] {
			t.Fatalf("row %q twice", l)
		}
		seen[l] = true
	}
}

// TestSpoolFlushesWhenQuiet checks that a few rows reach the file within
// about a second, without waiting for a full batch or for Close.
func TestSpoolFlushesWhenQuiet(t *testing.T) {
	f := &gateFile{gate: make(chan struct{})}
	close(f.gate)
	sp := newSpool("quiet", f, 1<<20, 1<<22)
	defer sp.close()
	sp.append([]byte("row\n"), 1)
	deadline := time.Now().Add(3 * spoolFlushEvery)
	for time.Now().Before(deadline) {
		f.mu.Lock()
		n := len(f.written)
		f.mu.Unlock()
		if n > 0 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("a quiet row was not written within three seconds")
}

func TestAppendFieldMatchesEncodingCSV(t *testing.T) {
	// Text that appendField makes safe first is in TestAppendFieldSafe.
	for _, f := range []string{"", "a", "a,b", `a"b`, `"`, " a", "a\nb", `\.`, "상품", "a b"} {
		var want strings.Builder
		w := csv.NewWriter(&want)
		w.Write([]string{f})
		w.Flush()
		got := string(appendField(nil, f)) + "\n"
		if got != want.String() {
			t.Errorf("appendField(%q) = %q, want %q", f, got, want.String())
		}
	}
}

// discardFile is a file that accepts everything, for benchmarks.
type discardFile struct{}

func (discardFile) Write(p []byte) (int, error) { return len(p), nil }
func (discardFile) Close() error                { return nil }

var benchRecord = metrics.RawRecord{
	Time: time.Unix(1_700_000_000, 123456789), Scenario: "browse", Request: "detail",
	VU: 42, Iteration: 1234, Status: 200, Latency: 23456 * time.Microsecond,
	BytesSent: 180, BytesReceived: 5120,
}

// BenchmarkWriteRaw measures WriteRaw from many goroutines, with the
// formatting and the hand-over to the writer goroutine, to a file that
// costs nothing.
func BenchmarkWriteRaw(b *testing.B) {
	s := newSinkWith(b, "path = \"r.csv\"\nraw = true", func(string) (io.WriteCloser, error) {
		return discardFile{}, nil
	})
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		r := benchRecord
		for pb.Next() {
			s.WriteRaw(r)
		}
	})
	b.StopTimer()
	if err := s.Close(metrics.Summary{}); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkWriteRawFile is BenchmarkWriteRaw to a real file.
func BenchmarkWriteRawFile(b *testing.B) {
	cfg, _ := decode(b, "path = \"r.csv\"\nraw = true")
	s, err := New(cfg, b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	if err := s.Start(context.Background(), metrics.RunInfo{}); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		r := benchRecord
		for pb.Next() {
			s.WriteRaw(r)
		}
	})
	if err := s.Close(metrics.Summary{}); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkWriteRawChannel is the design the spool replaced: records sent
// over a large buffered channel to a goroutine that formats and writes
// them through a bufio.Writer. Kept to compare against BenchmarkWriteRaw.
func BenchmarkWriteRawChannel(b *testing.B) {
	ch := make(chan metrics.RawRecord, 65536)
	done := make(chan struct{})
	go func() {
		defer close(done)
		w := bufio.NewWriterSize(discardFile{}, rawFlushSize)
		var buf []byte
		for r := range ch {
			buf = appendRawRow(buf[:0], &r)
			w.Write(buf)
		}
		w.Flush()
	}()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		r := benchRecord
		for pb.Next() {
			ch <- r
		}
	})
	close(ch)
	<-done
}
