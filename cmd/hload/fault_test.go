package main

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hload/hload/internal/tcptest"
	"github.com/hload/hload/metrics"
)

// The fault suite runs the hload binary, as a user does, against servers,
// processes and machines that fail the ways production does, and checks
// each run against what hload did not write: the server's own count, the
// rows on disk, and the exit code. Every case is a TestFault* test of this
// package, so that
//
//	go test -run TestFault -v ./cmd/hload
//
// runs the whole suite. The cases of this file log one line of the same
// shape each. The others are beside the code they guard:
//
//	TestFaultServerCloseIsNotReused     a server that closes after a response (close_test.go)
//	TestFaultLargeBodyChecks            checks on 8 MB bodies, gzip, both paths (body_test.go)
//	TestFaultFrozenPlugin               a plugin stopped (SIGSTOP) at 2 s, 8 s, after its last call
//	TestFaultKilledPluginLeavesNoSocket its unix socket removed (frozen_plugin_test.go)
//	TestFaultOptionalInfluxDown         required = false with nothing listening
//	TestFaultCtrlCDuringInfluxFlush     Ctrl-C while the end's flush waits (influx_optional_test.go)
//	TestFaultTooLargeForTheMachine      vus = 10000000 and rate = 1e9, refused before load
//	TestFaultTooLargeUnderAddressSpaceLimit  the same under a 4 GiB address space (limits_test.go)
//	TestFaultCSVFolderRemoved           the CSV sink's folder removed mid-run
//	TestFaultCSVFullDisk                a full disk: a small tmpfs, or /dev/full
//	TestFaultOutputPathsCheckedBeforeLoad, TestFaultSummaryExportCannotBeWritten,
//	TestFaultSinkCannotStart, TestFaultStdoutClosed  exports and outputs (outputs_test.go)
//	TestFaultServerTextSanitised        terminal escapes in a status line and body (sanitise_test.go)
//	TestFaultSensitiveValuesNeverWritten  a secret through every output (sensitive_test.go)

// faultServer serves HTTP/1.1 by hand on 127.0.0.1 and counts every
// request head it read. Its fault falls on every third head it reads
// (the 3rd, 6th, ...), all connections together:
//
//	reset         reads the request, then resets the connection (RST)
//	partial-head  sends half a status line and header, then closes
//	partial-body  sends a head of Content-Length 10 and 5 bytes, then closes
//	bad-status    answers with a malformed status line, then closes
//	extra-bytes   answers with 2 bytes more than its Content-Length says
//	fin-after     answers in full, then closes: a FIN on the response's
//	              last segment, no Connection: close
//
// Every other request gets "200 OK" and "ok". goAway closes the listener
// for a while: each open connection then answers its next request with
// Connection: close, and new connections are refused until it listens
// again on the same port.
type faultServer struct {
	t     testing.TB
	fault string
	addr  string

	mu      sync.Mutex
	ln      net.Listener
	heads   int            // request heads read
	targets map[string]int // their request targets, as sent
	faulted int            // heads the fault fell on
	away    bool
	wg      sync.WaitGroup
}

func startFaultServer(t *testing.T, fault string) *faultServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &faultServer{t: t, fault: fault, addr: ln.Addr().String(), ln: ln, targets: map[string]int{}}
	s.wg.Add(1)
	go s.accept(ln)
	t.Cleanup(func() {
		s.mu.Lock()
		s.ln.Close()
		s.mu.Unlock()
		s.wg.Wait()
	})
	return s
}

func (s *faultServer) url() string { return "http://" + s.addr }

func (s *faultServer) accept(ln net.Listener) {
	defer s.wg.Done()
	for {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.serve(conn.(*net.TCPConn))
		}()
	}
}

// goAway closes the listener for d, then listens again on its address.
func (s *faultServer) goAway(t *testing.T, d time.Duration) {
	s.mu.Lock()
	s.away = true
	s.ln.Close()
	s.mu.Unlock()
	time.Sleep(d)
	ln, err := net.Listen("tcp", s.addr)
	if err != nil {
		t.Errorf("listening again on %s: %v", s.addr, err)
		return
	}
	s.mu.Lock()
	s.away = false
	s.ln = ln
	s.wg.Add(1)
	s.mu.Unlock()
	go s.accept(ln)
}

func (s *faultServer) serve(conn *net.TCPConn) {
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(time.Minute)) // no test waits on a connection for longer
	br := bufio.NewReader(conn)
	for {
		r, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		io.Copy(io.Discard, r.Body)
		s.mu.Lock()
		s.heads++
		s.targets[r.RequestURI]++
		fault := s.fault != "" && s.heads%3 == 0
		if fault {
			s.faulted++
		}
		away := s.away
		s.mu.Unlock()
		if !fault {
			closing := ""
			if away {
				closing = "Connection: close\r\n"
			}
			if _, err := fmt.Fprintf(conn, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n%s\r\nok", closing); err != nil || away {
				return
			}
			continue
		}
		switch s.fault {
		case "reset":
			conn.SetLinger(0)
			return
		case "partial-head":
			io.WriteString(conn, "HTTP/1.1 200 OK\r\nContent-Len")
			return
		case "partial-body":
			io.WriteString(conn, "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhello")
			return
		case "bad-status":
			io.WriteString(conn, "HTTP/1.1 2x0 OK\r\nContent-Length: 2\r\n\r\nok")
			return
		case "extra-bytes":
			io.WriteString(conn, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokXX")
		case "fin-after":
			// The FIN rides on the response, as a server's write and
			// close do when nothing comes between them: no request of
			// the client's can fall between the two.
			tcptest.Cork(s.t, conn)
			io.WriteString(conn, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
			return
		}
	}
}

func (s *faultServer) counts() (heads, faulted int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.heads, s.faulted
}

// faultRun is what one case's run left: its exit, output, summary (nil
// when none was written) and the rows of its raw CSV file on disk.
type faultRun struct {
	args    []string
	code    int
	out     string
	sum     *metrics.Summary
	rawRows int
}

// request returns the figures of request "r" of scenario "s", or fails.
func (r *faultRun) request(t *testing.T) *metrics.RequestFigures {
	t.Helper()
	if r.sum == nil {
		t.Fatalf("%s: no summary JSON (exit %d):\n%s", r.command(), r.code, r.out)
	}
	sc := r.sum.Scenarios["s"]
	if sc == nil || sc.Requests["r"] == nil {
		t.Fatalf("%s: no figures for request r:\n%s", r.command(), r.out)
	}
	return sc.Requests["r"]
}

func (r *faultRun) command() string { return "hload " + strings.Join(r.args, " ") }

// logLine logs the case's line of the suite's table.
func (r *faultRun) logLine(t *testing.T, server string) {
	t.Helper()
	summary := "no summary"
	if r.sum != nil {
		if sc := r.sum.Scenarios["s"]; sc != nil && sc.Requests["r"] != nil {
			f := sc.Requests["r"]
			summary = fmt.Sprintf("summary %d (errors %s)", f.Count, kinds(f.ErrorsByKind))
		}
	}
	t.Logf("%s | %s | %s | raw rows on disk %d | exit %d", r.command(), server, summary, r.rawRows, r.code)
}

func kinds(m map[string]int64) string {
	if len(m) == 0 {
		return "none"
	}
	var out []string
	for k, v := range m {
		out = append(out, fmt.Sprintf("%s %d", k, v))
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

// faultTest is the closed-model test of most cases: 3 VUs, 20 iterations
// each, one request, a raw CSV file of every call.
const faultTest = `
variable "base_url" {}
target "t" {
  base_url = var.base_url
  timeout  = "5s"
}
scenario "s" {
  executor = "iterations"
  vus      = 3
  iterations = 20
  request "r" {
    path = "/r"
  }
}
sink "csv" {
  path = "out.csv"
  raw  = true
}
`

// startFaultRun starts hload apply on hcl in a folder of its own; finish
// waits for it.
func startFaultRun(t *testing.T, hcl string, vars ...string) (*exec.Cmd, string, *bytes.Buffer) {
	t.Helper()
	dir := t.TempDir()
	writeFile(t, dir, "test.hcl", hcl)
	args := []string{"apply", "test.hcl", "--quiet", "--summary-export", "summary.json"}
	for _, v := range vars {
		args = append(args, "--var", v)
	}
	cmd := exec.Command(hloadBin, args...)
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	timer := time.AfterFunc(2*time.Minute, func() { cmd.Process.Kill() })
	t.Cleanup(func() { timer.Stop() })
	return cmd, dir, &out
}

func finishFaultRun(t *testing.T, cmd *exec.Cmd, dir string, out *bytes.Buffer) *faultRun {
	t.Helper()
	err := cmd.Wait()
	r := &faultRun{args: cmd.Args[1:], out: out.String()}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		r.code = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			r.code = 128 + int(ws.Signal())
		}
	} else if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "summary.json")); err == nil {
		r.sum = exportedSummary(t, filepath.Join(dir, "summary.json"))
	}
	r.rawRows = rawRowsOnDisk(t, filepath.Join(dir, "out.raw.csv"))
	return r
}

// rawRowsOnDisk counts the rows of a raw CSV file, the header aside, and
// fails the test when a line is cut off: a file that hload left must be
// whole lines of the header's fields.
func rawRowsOnDisk(t *testing.T, path string) int {
	t.Helper()
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	if len(data) > 0 && data[len(data)-1] != '\n' {
		t.Errorf("%s ends with a cut-off line: %q", path, data[max(0, len(data)-80):])
	}
	rd := csv.NewReader(bytes.NewReader(data))
	rows, err := rd.ReadAll()
	if err != nil {
		t.Errorf("%s: %v", path, err)
	}
	if len(rows) == 0 {
		return 0
	}
	return len(rows) - 1
}

// TestFaultServerAnswers: against each server fault that falls on a
// request after the server read it, hload's count is the server's count
// of request heads, each failed call is one the fault fell on, of the
// kind that says what happened, none waits for its timeout, and the raw
// CSV file holds one whole row per call.
func TestFaultServerAnswers(t *testing.T) {
	cases := []struct {
		fault  string
		kind   string // the kind of every failed call; "" when none fails
		failed bool   // the fault fails its call
	}{
		{"reset", "reset", true},
		{"partial-head", "protocol", true},
		{"partial-body", "protocol", true},
		{"bad-status", "protocol", true},
		{"extra-bytes", "", false},
		{"fin-after", "", false},
	}
	for _, tc := range cases {
		t.Run(tc.fault, func(t *testing.T) {
			srv := startFaultServer(t, tc.fault)
			cmd, dir, out := startFaultRun(t, faultTest, "base_url="+srv.url())
			r := finishFaultRun(t, cmd, dir, out)
			heads, faulted := srv.counts()
			r.logLine(t, fmt.Sprintf("server read %d heads, the fault fell on %d", heads, faulted))
			f := r.request(t)
			if r.code != exitOK {
				t.Errorf("exit %d, want 0:\n%s", r.code, r.out)
			}
			if f.Count != 60 || int64(heads) != f.Count {
				t.Errorf("hload counted %d calls of 60, the server read %d request heads", f.Count, heads)
			}
			want := int64(0)
			if tc.failed {
				want = int64(faulted)
			}
			if f.Errors != want || (want > 0 && f.ErrorsByKind[tc.kind] != want) {
				t.Errorf("errors %d (%s); want %d of kind %q: the calls the fault fell on", f.Errors, kinds(f.ErrorsByKind), want, tc.kind)
			}
			if faulted < 20 {
				t.Errorf("the fault fell on %d calls; the case means little below 20", faulted)
			}
			if int64(r.rawRows) != f.Count {
				t.Errorf("the raw CSV holds %d rows for %d calls", r.rawRows, f.Count)
			}
		})
	}
}

// TestFaultTargetGoesAwayAndComesBack: the target stops listening for a
// second in the middle of an open-model run and comes back on the same
// port. Calls whose connection was refused count as connection_refused;
// every other call reached the server; the run goes on after it returns.
func TestFaultTargetGoesAwayAndComesBack(t *testing.T) {
	srv := startFaultServer(t, "")
	cmd, dir, out := startFaultRun(t, `
variable "base_url" {}
target "t" {
  base_url = var.base_url
  timeout  = "5s"
}
scenario "s" {
  executor          = "constant-arrival-rate"
  rate              = 200
  duration          = "3s"
  pre_allocated_vus = 10
  max_vus           = 50
  request "r" {
    path = "/r"
  }
}
sink "csv" {
  path = "out.csv"
  raw  = true
}
`, "base_url="+srv.url())
	// Away once it served for a while, back a second later.
	deadline := time.Now().Add(30 * time.Second)
	for heads, _ := srv.counts(); heads < 150 && time.Now().Before(deadline); heads, _ = srv.counts() {
		time.Sleep(10 * time.Millisecond)
	}
	before, _ := srv.counts()
	srv.goAway(t, time.Second)
	back, _ := srv.counts()
	r := finishFaultRun(t, cmd, dir, out)
	heads, _ := srv.counts()
	r.logLine(t, fmt.Sprintf("server read %d heads: %d before it went away, %d after it came back", heads, before, heads-back))
	f := r.request(t)
	refused := f.ErrorsByKind["connection_refused"]
	if r.code != exitOK {
		t.Errorf("exit %d, want 0:\n%s", r.code, r.out)
	}
	if f.Count != int64(heads)+refused || f.Errors != refused {
		t.Errorf("hload counted %d calls, %d errors (%s); the server read %d: every call but the refused ones reached it",
			f.Count, f.Errors, kinds(f.ErrorsByKind), heads)
	}
	if refused == 0 || heads-back < 50 {
		t.Errorf("%d calls refused, %d served after the target came back: the case means little", refused, heads-back)
	}
	if int64(r.rawRows) != f.Count {
		t.Errorf("the raw CSV holds %d rows for %d calls", r.rawRows, f.Count)
	}
}

// TestFaultSignals: SIGINT and SIGTERM stop a long run gracefully (exit
// 130), with the summary, the raw CSV and the server agreeing on every
// call; after SIGKILL, which nothing can catch, the files on disk hold
// whole rows only, and no more of them than calls the server read.
func TestFaultSignals(t *testing.T) {
	long := strings.Replace(strings.Replace(faultTest, `executor = "iterations"`, `executor = "constant-vus"`, 1),
		"iterations = 20", `duration = "60s"`, 1)
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGKILL} {
		t.Run(sig.String(), func(t *testing.T) {
			srv := startFaultServer(t, "")
			cmd, dir, out := startFaultRun(t, long, "base_url="+srv.url())
			// Past its second interval, so the interval file has rows.
			began := time.Now()
			deadline := began.Add(30 * time.Second)
			for heads, _ := srv.counts(); (heads < 300 || time.Since(began) < 2500*time.Millisecond) && time.Now().Before(deadline); heads, _ = srv.counts() {
				time.Sleep(10 * time.Millisecond)
			}
			cmd.Process.Signal(sig)
			r := finishFaultRun(t, cmd, dir, out)
			heads, _ := srv.counts()
			intervals := csvCount(t, filepath.Join(dir, "out.csv"))
			r.logLine(t, fmt.Sprintf("server read %d heads; the interval CSV counts %d", heads, intervals))
			if sig == syscall.SIGKILL {
				if r.code != 128+int(syscall.SIGKILL) || r.rawRows > heads || intervals == 0 || intervals > int64(heads) {
					t.Errorf("exit %d; %d raw rows and %d calls in the interval file on disk, for %d heads the server read",
						r.code, r.rawRows, intervals, heads)
				}
				return
			}
			f := r.request(t)
			if r.code != exitInterrupted || !r.sum.Interrupted {
				t.Errorf("exit %d, interrupted %v; want %d:\n%s", r.code, r.sum.Interrupted, exitInterrupted, r.out)
			}
			if f.Count != int64(heads) || int64(r.rawRows) != f.Count || intervals != f.Count || f.Errors != 0 {
				t.Errorf("hload counted %d calls (errors %s), the raw CSV holds %d rows and the interval CSV %d calls, the server read %d",
					f.Count, kinds(f.ErrorsByKind), r.rawRows, intervals, heads)
			}
		})
	}
}

// TestFaultKilledPlugin: a plugin process killed mid-run (SIGKILL) ends
// the run with exit 1 and a message naming it; the summary and the raw
// CSV keep every call made before, each success one the echo server
// echoed, and no call is lost between them.
func TestFaultKilledPlugin(t *testing.T) {
	requirePlugins(t)
	bin, _ := pluginCopy(t, "echo")
	echo := startEchoServer(t)
	cmd, dir, out := startFaultRun(t, fmt.Sprintf(`
plugin "echo" {
  source = %q
}
target "t" {
  protocol = "echo"
  address  = %q
}
scenario "s" {
  executor = "constant-vus"
  vus      = 4
  duration = "60s"
  request "r" {
    payload = "ping"
  }
}
sink "csv" {
  path = "out.csv"
  raw  = true
}
`, bin, echo.addr))
	pid := waitForProcess(t, bin, 10*time.Second)
	deadline := time.Now().Add(30 * time.Second)
	for echo.conns.Load() < 300 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	r := finishFaultRun(t, cmd, dir, out)
	echo.stop(t)
	conns, echoed := echo.conns.Load(), echo.bytes.Load()/int64(len("ping"))
	r.logLine(t, fmt.Sprintf("echo server: %d connections, %d payloads echoed", conns, echoed))
	f := r.request(t)
	ok := f.Count - f.Errors
	if r.code != exitRuntime || !strings.Contains(r.out, `"echo"`) || r.sum.Failed == "" {
		t.Errorf("exit %d, failure %q; want %d and a message naming the plugin:\n%s", r.code, r.sum.Failed, exitRuntime, r.out)
	}
	if ok == 0 || ok > echoed || echoed > conns || conns > f.Count || int64(r.rawRows) != f.Count {
		t.Errorf("%d calls, %d succeeded (errors %s); the echo server took %d connections and echoed %d payloads; the raw CSV holds %d rows",
			f.Count, ok, kinds(f.ErrorsByKind), conns, echoed, r.rawRows)
	}
}

// TestFaultQueryIsEncoded: a query written with a space and a quote in
// the test's path reaches the server percent-encoded, as the path is, so
// that the server reads every request (a raw space would end its request
// target), and the summary's count is the server's.
func TestFaultQueryIsEncoded(t *testing.T) {
	srv := startFaultServer(t, "")
	cmd, dir, out := startFaultRun(t, strings.Replace(faultTest, `path = "/r"`, `path = "/r?q=a b&c=d\"e"`, 1), "base_url="+srv.url())
	r := finishFaultRun(t, cmd, dir, out)
	heads, _ := srv.counts()
	srv.mu.Lock()
	targets := fmt.Sprint(srv.targets)
	srv.mu.Unlock()
	r.logLine(t, fmt.Sprintf("server read %d heads: %s", heads, targets))
	f := r.request(t)
	if want := "map[/r?q=a%20b&c=d%22e:60]"; targets != want || f.Count != int64(heads) || f.Errors != 0 || r.code != exitOK {
		t.Errorf("the server read %s, want %s; hload counted %d calls (errors %s), exit %d", targets, want, f.Count, kinds(f.ErrorsByKind), r.code)
	}
}
