package csv

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hload/hload/metrics"
)

// shortFile is a file on a disk that fills up: it takes budget bytes, cut
// wherever they end, then fails with ENOSPC, as write(2) does. It can be
// truncated, as an *os.File can.
type shortFile struct {
	mu     sync.Mutex
	data   []byte
	budget int
}

func (f *shortFile) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := min(len(p), f.budget)
	f.data = append(f.data, p[:n]...)
	f.budget -= n
	if n < len(p) {
		return n, syscall.ENOSPC
	}
	return n, nil
}

func (f *shortFile) Truncate(size int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.data = f.data[:size]
	return nil
}

func (f *shortFile) Close() error { return nil }

func (f *shortFile) bytes() []byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]byte(nil), f.data...)
}

// lostCount reads "(N of M rows not written; the file holds the other K"
// from a Close error.
var lostCount = regexp.MustCompile(`\((\d+) of (\d+) rows not written; the file holds the other (\d+), each whole\)`)

// checkWholeRows checks that data is a CSV file of whole rows of width
// fields, a header first, and that err counts its rows exactly: the rows
// it says the file holds are the rows in it, and with the rows lost they
// make the rows offered.
func checkWholeRows(t *testing.T, data []byte, width int, err error, offered int) {
	t.Helper()
	if len(data) > 0 && data[len(data)-1] != '\n' {
		t.Errorf("the file ends in a cut row: %q", data[max(0, len(data)-60):])
	}
	r := csv.NewReader(bytes.NewReader(data))
	r.FieldsPerRecord = width
	rows, rerr := r.ReadAll()
	if rerr != nil {
		t.Fatalf("the file does not read as whole rows: %v", rerr)
	}
	m := lostCount.FindStringSubmatch(fmt.Sprint(err))
	if m == nil {
		t.Fatalf("Close = %v; want the count of rows lost and kept", err)
	}
	lost, all, kept := atoi(t, m[1]), atoi(t, m[2]), atoi(t, m[3])
	onDisk := len(rows) - 1 // less the header
	if kept != onDisk || lost+kept != all || all != offered {
		t.Errorf("the error says %d of %d rows lost and %d kept; the file holds %d rows of the %d offered", lost, all, kept, onDisk, offered)
	}
	if lost == 0 {
		t.Errorf("no row lost: the disk did not fill")
	}
	t.Logf("%d of %d rows lost, %d on disk, each whole: %v", lost, all, onDisk, err)
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestDiskFullLeavesWholeRows: a disk that fills in the middle of a row
// leaves the file cut back to its last whole row, and the error's count
// of rows written is the count of rows in the file. Names with quoted
// newlines and commas make a row's end more than its first newline.
func TestDiskFullLeavesWholeRows(t *testing.T) {
	names := []string{"main", "multi\nline", `say "hi", twice`}
	for _, budget := range []int{1, 100, 5_000, 77_777} {
		t.Run(fmt.Sprintf("raw, full after %d bytes", budget), func(t *testing.T) {
			f := &shortFile{budget: budget}
			s := newSinkWith(t, "path = \"r.csv\"\nraw = true", func(path string) (io.WriteCloser, error) {
				if strings.HasSuffix(path, ".raw.csv") {
					return f, nil
				}
				return &shortFile{budget: 1 << 30}, nil
			})
			const offered = 3_000
			for i := range offered {
				s.WriteRaw(metrics.RawRecord{Scenario: "sc", Request: names[i%len(names)], Iteration: uint64(i), Error: names[(i+1)%len(names)]})
			}
			err := s.Close(metrics.Summary{})
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("Close = %v, want ENOSPC", err)
			}
			if budget < len("time_unix_ns,") {
				// Not even the header fits: nothing of it may stay.
				if len(f.bytes()) != 0 || !strings.Contains(err.Error(), "3000 of 3000 rows not written") {
					t.Errorf("file %q, Close = %v; want an empty file and every row lost", f.bytes(), err)
				}
				return
			}
			checkWholeRows(t, f.bytes(), len(rawHeader), err, offered)
		})
	}
	t.Run("interval", func(t *testing.T) {
		f := &shortFile{budget: 2_000}
		s := newSinkWith(t, `path = "r.csv"`, func(string) (io.WriteCloser, error) { return f, nil })
		const offered = 40
		for i := range offered {
			snap := metrics.Snapshot{End: time.Unix(int64(i), 0), Series: []metrics.SeriesFigures{{Scenario: "sc", Request: names[i%len(names)]}}}
			s.Write(snap) // the error comes back from Close, with the count
			// One interval at a time, as the run's ticks come: a batch
			// per row, so the disk fills within one.
			for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
				if s.interval.idleNow() {
					break
				}
			}
		}
		checkWholeRows(t, f.bytes(), len(intervalHeader), s.Close(metrics.Summary{}), offered)
	})
}

// idleNow reports whether the writer has written everything handed to it.
func (s *spool) idleNow() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.idle && len(s.pending) == 0
}

// mountTmpfs mounts a tmpfs of size bytes on a new folder of the test, or
// skips the test when this process may not mount one (not root, or in a
// container without the right).
func mountTmpfs(t *testing.T, size int) string {
	t.Helper()
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%d", size), "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs here (%v: %s); the fake full disk above stands for it", err, bytes.TrimSpace(out))
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	return dir
}

// TestFullTmpfs: on a real file system that fills up (a 64 KiB tmpfs),
// the raw file holds whole rows, and the error counts them.
func TestFullTmpfs(t *testing.T) {
	dir := mountTmpfs(t, 64<<10)
	cfg, _ := decode(t, "path = \"r.csv\"\nraw = true")
	s, err := New(cfg, dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background(), metrics.RunInfo{}); err != nil {
		t.Fatal(err)
	}
	const offered = 5_000
	for i := range offered {
		s.WriteRaw(metrics.RawRecord{Time: time.Unix(1_700_000_000, int64(i)), Scenario: "sc", Request: "r", VU: 1, Iteration: uint64(i), Status: 200})
	}
	err = s.Close(metrics.Summary{})
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Close = %v, want ENOSPC", err)
	}
	data, rerr := os.ReadFile(s.RawPath())
	if rerr != nil {
		t.Fatal(rerr)
	}
	checkWholeRows(t, data, len(rawHeader), err, offered)
}

// TestFileGoneMidRun: a file deleted while the sink writes it (its folder
// removed) or replaced by another takes writes without an error, and
// nobody will read them: the sink fails, and counts every row as lost.
// The interval file says so at the next Write already.
func TestFileGoneMidRun(t *testing.T) {
	for _, tc := range []struct {
		name string
		gone func(dir string, paths ...string) error
		want string
	}{
		{"folder removed", func(dir string, _ ...string) error { return os.RemoveAll(dir) }, "was deleted during the run, or its folder was"},
		{"files replaced", func(_ string, paths ...string) error {
			for _, p := range paths {
				if err := os.Rename(p, p+".old"); err != nil {
					return err
				}
				if err := os.WriteFile(p, nil, 0o644); err != nil {
					return err
				}
			}
			return nil
		}, "was replaced by another file during the run"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "out")
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			cfg, _ := decode(t, "path = \"r.csv\"\nraw = true")
			s, err := New(cfg, dir)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Start(context.Background(), metrics.RunInfo{}); err != nil {
				t.Fatal(err)
			}
			snap := metrics.Snapshot{Series: []metrics.SeriesFigures{{Scenario: "sc", Request: "r"}}}
			if err := s.Write(snap); err != nil {
				t.Fatal(err)
			}
			const before, after = 100, 50
			for i := range before {
				s.WriteRaw(metrics.RawRecord{Scenario: "sc", Iteration: uint64(i)})
			}
			// Until the rows are on disk, so they are lost with the file.
			for deadline := time.Now().Add(5 * time.Second); s.RawRowsWritten() < before; time.Sleep(5 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("%d rows written within 5 s", s.RawRowsWritten())
				}
			}
			if err := tc.gone(dir, s.Path(), s.RawPath()); err != nil {
				t.Fatal(err)
			}
			for i := range after {
				s.WriteRaw(metrics.RawRecord{Scenario: "sc", Iteration: uint64(before + i)})
			}
			var werr error
			for deadline := time.Now().Add(5 * time.Second); werr == nil && time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
				werr = s.Write(snap)
			}
			if werr == nil || !strings.Contains(werr.Error(), tc.want) {
				t.Errorf("Write after the interval file went = %v, want %q", werr, tc.want)
			}
			err = s.Close(metrics.Summary{})
			for _, want := range []string{
				s.RawPath() + " " + tc.want + fmt.Sprintf(": all %d rows are lost", before+after),
				s.Path() + " " + tc.want,
			} {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("Close = %v\nwant %q", err, want)
				}
			}
		})
	}
}

func TestWholeRows(t *testing.T) {
	for _, tc := range []struct {
		in    string
		bytes int
		rows  int64
	}{
		{"", 0, 0},
		{"a,b", 0, 0},
		{"a,b\n", 4, 1},
		{"a,b\nc,d", 4, 1},
		{"a,\"x\ny\"\nc", 8, 1},
		{"a,\"x\ny", 0, 0},
		{"a,\"say \"\"hi\"\"\"\nb,\"\"\"\n", 15, 1},
		{"a\nb\nc\n", 6, 3},
	} {
		b, n := wholeRows([]byte(tc.in))
		if b != tc.bytes || n != tc.rows {
			t.Errorf("wholeRows(%q) = %d bytes, %d rows; want %d, %d", tc.in, b, n, tc.bytes, tc.rows)
		}
	}
}
