package main

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// outputsTest sends requests by 5 VUs, 1000 iterations each: 5,000 calls
// in about 2 s against okServer. Its CSV sink, on line 14, writes raw rows.
const outputsTest = `variable "base_url" {}
target "t" {
  base_url = var.base_url
}
scenario "s" {
  executor   = "iterations"
  vus        = 5
  iterations = 1000
  request "r" {
    path = "/r"
  }
}

sink "csv" {
  path = "%s"
  raw  = true
}
`

// csvBlock is where outputsTest's sink block is, as messages name it.
const csvBlock = `test.hcl:14,1-11: sink "csv"`

// mountTmpfs mounts a tmpfs of size bytes on a new folder of the test, or
// skips the test when this process may not mount one.
func mountTmpfs(t *testing.T, size int) string {
	t.Helper()
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%d", size), "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs here (%v: %s)", err, bytes.TrimSpace(out))
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	return dir
}

// readOnlyFolder returns a folder of the test this process cannot write
// in: a read-only tmpfs for root, whom permissions do not stop, else a
// folder of mode 0555.
func readOnlyFolder(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if os.Geteuid() == 0 {
		if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "ro,size=64k", "tmpfs", dir).CombinedOutput(); err != nil {
			t.Skipf("root, and cannot mount a read-only tmpfs here (%v: %s)", err, bytes.TrimSpace(out))
		}
		t.Cleanup(func() { exec.Command("umount", dir).Run() })
		return dir
	}
	if err := os.Chmod(dir, 0o555); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(dir, 0o755) })
	return dir
}

// wholeRawRows reads a raw CSV file that must hold whole rows: it ends
// with a newline and every row has the raw header's 10 fields. It returns
// the rows less the header.
func wholeRawRows(t *testing.T, path string) int {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) > 0 && data[len(data)-1] != '\n' {
		t.Errorf("%s ends in a cut row: %q", path, data[max(0, len(data)-60):])
	}
	r := csv.NewReader(bytes.NewReader(data))
	r.FieldsPerRecord = 10
	rows, err := r.ReadAll()
	if err != nil {
		t.Fatalf("%s does not read as whole rows: %v", path, err)
	}
	return len(rows) - 1
}

// TestFaultCSVFolderRemoved: the CSV sink's folder is removed while the
// run writes it. Both files are gone, so the run fails and says so: every
// raw row (one per call, 5,000 by the server's count) is lost.
func TestFaultCSVFolderRemoved(t *testing.T) {
	srv, served := okServer(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	if err := os.Mkdir(out, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "test.hcl", fmt.Sprintf(outputsTest, "out/res.csv"))
	cmd, stdout, stderr := startHload(t, dir, "apply", "test.hcl", "--var", "base_url="+srv.URL, "--summary-export", "summary.json")
	// Once rows are in the raw file, so that they are lost with it.
	raw := filepath.Join(out, "res.raw.csv")
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if st, err := os.Stat(raw); err == nil && st.Size() > 1000 {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatal("no raw rows on disk within 10 s")
		}
	}
	if err := os.RemoveAll(out); err != nil {
		t.Fatal(err)
	}
	r := wait(t, cmd, stdout, stderr)
	if r.code != exitRuntime {
		t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, exitRuntime, r.stdout, r.stderr)
	}
	want := fmt.Sprintf("%s: csv sink: out/res.csv was deleted during the run, or its folder was: all ", csvBlock)
	wantRaw := fmt.Sprintf("out/res.raw.csv was deleted during the run, or its folder was: all %d rows are lost", served.Load())
	for _, w := range []string{want, wantRaw} {
		if !strings.Contains(r.stderr, w) || !strings.Contains(r.stdout, w) {
			t.Errorf("stdout and stderr do not both say %q\nstdout:\n%s\nstderr:\n%s", w, r.stdout, r.stderr)
		}
	}
	if strings.Contains(r.stdout, "PASS") {
		t.Errorf("PASS printed:\n%s", r.stdout)
	}
	sum := exportedSummary(t, filepath.Join(dir, "summary.json"))
	if n := sum.Scenarios["s"].Requests["r"].Count; sum.Passed || len(sum.SinkErrors) != 1 || n != served.Load() || n != 5000 {
		t.Errorf("summary: passed %v, sink errors %q, %d calls; server %d", sum.Passed, sum.SinkErrors, n, served.Load())
	}
	t.Logf("server %d calls; summary %d; exit %d; %s", served.Load(), sum.Scenarios["s"].Requests["r"].Count, r.code, strings.TrimSpace(r.stderr))
}

// rowsLost reads "(N of M rows not written; the file holds the other K".
var rowsLost = regexp.MustCompile(`res\.raw\.csv: no space left on device \((\d+) of (\d+) rows not written; the file holds the other (\d+), each whole\)`)

// TestFaultCSVFullDisk: the CSV sink writes to a 128 KiB tmpfs, which fills
// during the run. The run fails; the raw file holds whole rows only, and
// the message's counts are the rows on disk and the calls the server
// served.
func TestFaultCSVFullDisk(t *testing.T) {
	out := mountTmpfs(t, 128<<10)
	srv, served := okServer(t)
	dir := t.TempDir()
	writeFile(t, dir, "test.hcl", fmt.Sprintf(outputsTest, filepath.Join(out, "res.csv")))
	r := hload(t, dir, "apply", "--quiet", "test.hcl", "--var", "base_url="+srv.URL, "--summary-export", "summary.json")
	if r.code != exitRuntime {
		t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, exitRuntime, r.stdout, r.stderr)
	}
	m := rowsLost.FindStringSubmatch(r.stderr)
	if m == nil || !strings.Contains(r.stderr, csvBlock) {
		t.Fatalf("stderr does not name the sink and count its rows:\n%s", r.stderr)
	}
	lost, all, kept := atoi(t, m[1]), atoi(t, m[2]), atoi(t, m[3])
	onDisk := wholeRawRows(t, filepath.Join(out, "res.raw.csv"))
	if kept != onDisk || lost+kept != all || int64(all) != served.Load() || lost == 0 {
		t.Errorf("the message says %d lost and %d kept of %d; %d rows on disk, %d calls served", lost, kept, all, onDisk, served.Load())
	}
	if sum := exportedSummary(t, filepath.Join(dir, "summary.json")); sum.Passed || len(sum.SinkErrors) == 0 {
		t.Errorf("summary: passed %v, sink errors %q", sum.Passed, sum.SinkErrors)
	}
	t.Logf("server %d calls; %d raw rows on disk; exit %d; %s", served.Load(), onDisk, r.code, strings.TrimSpace(r.stderr))
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestFaultOutputPathsCheckedBeforeLoad: an output that cannot be written (a
// folder that does not exist, a read-only folder, a folder where a file
// should be) is found before any load is sent: exit 2, naming the flag or
// the sink's block, and validate finds the sinks' too.
func TestFaultOutputPathsCheckedBeforeLoad(t *testing.T) {
	srv, served := okServer(t)
	ro := readOnlyFolder(t)
	for _, tc := range []struct {
		name   string
		sink   string // the sink block, "" for outputsTest's CSV sink at csvPath
		csv    string
		export string
		want   string
	}{
		{name: "export folder missing", csv: "res.csv", export: "missing/summary.json",
			want: "--summary-export: the folder missing does not exist; create it first"},
		{name: "export folder read-only", csv: "res.csv", export: filepath.Join(ro, "summary.json"),
			want: "--summary-export: cannot create files in " + ro},
		{name: "export is a folder", csv: "res.csv", export: ".",
			want: "--summary-export: . is a folder, not a file"},
		{name: "csv folder missing", csv: "missing/res.csv",
			want: csvBlock + ": the folder missing does not exist; create it first"},
		{name: "csv folder read-only", csv: filepath.Join(ro, "res.csv"),
			want: csvBlock + ": cannot create files in " + ro},
		{name: "raw file is a folder", csv: "raw.csv", sink: "raw_path = \"sub\"",
			want: csvBlock + ": sub is a folder, not a file"},
		{name: "html folder missing", csv: "res.csv", sink: "}\nsink \"html\" {\n  path = \"missing/report.html\"",
			want: `test.hcl:18,1-12: sink "html": the folder missing does not exist; create it first`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
				t.Fatal(err)
			}
			src := fmt.Sprintf(outputsTest, tc.csv)
			if tc.sink != "" {
				src = strings.Replace(src, "  raw  = true\n", "  raw  = true\n  "+tc.sink+"\n", 1)
			}
			writeFile(t, dir, "test.hcl", src)
			args := []string{"apply", "test.hcl", "--var", "base_url=" + srv.URL}
			if tc.export != "" {
				args = append(args, "--summary-export", tc.export)
			}
			before := served.Load()
			r := hload(t, dir, args...)
			if r.code != exitUsage || !strings.Contains(r.stderr, tc.want) {
				t.Errorf("apply: exit %d, want %d and %q\nstderr:\n%s", r.code, exitUsage, tc.want, r.stderr)
			}
			if n := served.Load() - before; n != 0 {
				t.Errorf("%d calls sent", n)
			}
			if tc.export != "" {
				return // validate has no --summary-export
			}
			r = hload(t, dir, "validate", "test.hcl", "--var", "base_url="+srv.URL)
			if r.code != exitUsage || !strings.Contains(r.stderr, tc.want) {
				t.Errorf("validate: exit %d, want %d and %q\nstderr:\n%s", r.code, exitUsage, tc.want, r.stderr)
			}
		})
	}
}

// TestFaultSummaryExportCannotBeWritten: an export that cannot be written at
// the end of the run (its folder removed meanwhile, its disk full) fails
// the run before the console's verdict, which is never PASS, and leaves
// no file, whole or partial, behind.
func TestFaultSummaryExportCannotBeWritten(t *testing.T) {
	srv, _ := okServer(t)
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T) (folder string, during func())
		want  string
	}{
		{"folder removed", func(t *testing.T) (string, func()) {
			folder := filepath.Join(t.TempDir(), "results")
			if err := os.Mkdir(folder, 0o755); err != nil {
				t.Fatal(err)
			}
			return folder, func() { os.RemoveAll(folder) }
		}, "the folder %s no longer exists"},
		{"disk full", func(t *testing.T) (string, func()) {
			// The summary takes about 4 KB; the tmpfs has room for less.
			folder := mountTmpfs(t, 64<<10)
			return folder, func() {
				f, err := os.Create(filepath.Join(folder, "filler"))
				if err != nil {
					t.Error(err)
					return
				}
				defer f.Close()
				// Fill it but for a kilobyte or so: written in small steps
				// to the last byte, then 1 KiB given back.
				buf := make([]byte, 512)
				for {
					if _, err := f.Write(buf); err != nil {
						break
					}
				}
				st, _ := f.Stat()
				f.Truncate(st.Size() - 1024)
			}
		}, "no space left on device"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			folder, during := tc.setup(t)
			dir := t.TempDir()
			writeFile(t, dir, "test.hcl", strings.Replace(fmt.Sprintf(outputsTest, "res.csv"), "iterations = 1000", "iterations = 200", 1))
			export := filepath.Join(folder, "summary.json")
			cmd, stdout, stderr := startHload(t, dir, "apply", "test.hcl", "--var", "base_url="+srv.URL, "--summary-export", export)
			time.Sleep(200 * time.Millisecond) // after the checks at the start
			during()
			r := wait(t, cmd, stdout, stderr)
			want := tc.want
			if strings.Contains(want, "%s") {
				want = fmt.Sprintf(want, folder)
			}
			if r.code != exitRuntime || !strings.Contains(r.stderr, "--summary-export: writing "+export) || !strings.Contains(r.stderr, want) {
				t.Errorf("exit %d, want %d and %q\nstderr:\n%s", r.code, exitRuntime, want, r.stderr)
			}
			if strings.Contains(r.stdout, "PASS") || !strings.Contains(r.stdout, "FAIL: a sink failed") || !strings.Contains(r.stdout, "--summary-export") {
				t.Errorf("the console's verdict:\n%s", r.stdout)
			}
			entries, _ := os.ReadDir(folder)
			for _, e := range entries {
				if e.Name() != "filler" {
					t.Errorf("%s left in %s", e.Name(), folder)
				}
			}
		})
	}
}

// TestFaultSinkCannotStart: a sink that cannot start (an
// InfluxDB where nothing listens) stops the run before any load, and the
// summary export still says why, naming the sink's block.
func TestFaultSinkCannotStart(t *testing.T) {
	srv, served := okServer(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := "http://" + ln.Addr().String()
	ln.Close()
	dir := t.TempDir()
	writeFile(t, dir, "test.hcl", strings.Replace(fmt.Sprintf(outputsTest, "res.csv"), "sink \"csv\"", fmt.Sprintf("sink \"influxdb\" {\n  url    = %q\n  bucket = \"b\"\n}\nsink \"csv\"", down), 1))
	r := hload(t, dir, "apply", "test.hcl", "--var", "base_url="+srv.URL, "--summary-export", "summary.json")
	want := `test.hcl:14,1-16: sink "influxdb" could not start: influxdb sink: InfluxDB at ` + down + " does not answer"
	if r.code != exitRuntime || !strings.Contains(r.stderr, want) {
		t.Fatalf("exit %d, want %d and %q\nstderr:\n%s", r.code, exitRuntime, want, r.stderr)
	}
	sum := exportedSummary(t, filepath.Join(dir, "summary.json"))
	if sum.Passed || !strings.HasPrefix(sum.Failed, want) || served.Load() != 0 {
		t.Errorf("summary passed %v, failed %q; %d calls served", sum.Passed, sum.Failed, served.Load())
	}
}

// TestFaultStdoutClosed: the reader of stdout goes away after the first line
// (`hload apply ... | head -1`). The run goes on to its end, exits 0, not
// killed by SIGPIPE, and its summary export holds every call.
func TestFaultStdoutClosed(t *testing.T) {
	srv, served := okServer(t)
	dir := t.TempDir()
	writeFile(t, dir, "test.hcl", fmt.Sprintf(outputsTest, "res.csv"))
	cmd := exec.Command(hloadBin, "apply", "test.hcl", "--var", "base_url="+srv.URL, "--summary-export", "summary.json")
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	timer := time.AfterFunc(time.Minute, func() { cmd.Process.Kill() })
	defer timer.Stop()
	first, err := bufio.NewReader(pipe).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	pipe.Close() // as head does after its line: the next write breaks the pipe
	err = cmd.Wait()
	if ws := cmd.ProcessState.Sys().(syscall.WaitStatus); ws.Signaled() || err != nil {
		t.Fatalf("hload ended with %v (signal %v)\nstderr:\n%s", err, ws.Signal(), stderr.String())
	}
	sum := exportedSummary(t, filepath.Join(dir, "summary.json"))
	if n := sum.Scenarios["s"].Requests["r"].Count; !sum.Passed || n != 5000 || n != served.Load() {
		t.Errorf("summary passed %v, %d calls; server %d", sum.Passed, n, served.Load())
	}
	if !strings.HasPrefix(first, "hload ") {
		t.Errorf("first line %q", first)
	}
	io.Copy(io.Discard, &stderr)
}
