package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// influxTest runs 2 s of load with an InfluxDB sink at url; extra goes in
// the sink block.
func influxTest(url, extra string) string {
	return fmt.Sprintf(`variable "base_url" {}
target "t" {
  base_url = var.base_url
}
scenario "s" {
  executor = "constant-vus"
  vus      = 2
  duration = "2s"
  request "r" {
    path = "/r"
  }
}
sink "influxdb" {
  url    = %q
  bucket = "hload"
  %s
}
`, url, extra)
}

// downURL is a loopback URL where nothing listens.
func downURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return "http://" + ln.Addr().String()
}

// TestFaultOptionalInfluxDown (must-show 5): an InfluxDB sink with required =
// false and nothing listening. The load runs; at its end hload waits at
// most the short default flush_timeout, then exits 0, passing with
// warnings that count the points that never arrived. Timed against the
// load's end as the summary reports it.
func TestFaultOptionalInfluxDown(t *testing.T) {
	srv, served := okServer(t)
	dir := t.TempDir()
	writeFile(t, dir, "test.hcl", influxTest(downURL(t), "required = false"))
	r := hload(t, dir, "apply", "test.hcl", "--var", "base_url="+srv.URL, "--summary-export", "summary.json")
	exited := time.Now()
	if r.code != exitOK {
		t.Fatalf("exit %d, want 0\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	sum := exportedSummary(t, filepath.Join(dir, "summary.json"))
	after := exited.Sub(sum.Ended)
	if after > 5*time.Second {
		t.Errorf("hload exited %v after the load's end", after)
	}
	unsent := slices.ContainsFunc(sum.Warnings, func(w string) bool {
		return strings.HasPrefix(w, "influxdb sink (required = false): ") && strings.Contains(w, "unsent")
	})
	if !sum.Passed || !unsent || sum.Scenarios["s"].Requests["r"].Count != served.Load() {
		t.Errorf("summary passed %v, warnings %q, %d calls (server %d)", sum.Passed, sum.Warnings, sum.Scenarios["s"].Requests["r"].Count, served.Load())
	}
	if !strings.Contains(r.stdout, "PASS") || !strings.Contains(r.stdout, "warning(s) above") || !strings.Contains(r.stderr, "WARNING: InfluxDB at") {
		t.Errorf("stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	}
	t.Logf("exit %d, %v after the load's end; %d calls; stderr:\n%s", r.code, after.Round(time.Millisecond), served.Load(), r.stderr)
}

// fakeInflux answers /ping and takes writes until it is closed.
func fakeInflux(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestFaultCtrlCDuringInfluxFlush (must-show 5): InfluxDB does not take the
// run's last points, and flush_timeout is long. A Ctrl-C (SIGINT to
// hload) while the sink waits ends the wait at once: exit 130, the points
// unsent are a warning, the summary says interrupted. With required =
// false InfluxDB is down from the start; with required = true it is up
// at the start and goes away during the run.
func TestFaultCtrlCDuringInfluxFlush(t *testing.T) {
	for _, required := range []bool{false, true} {
		t.Run(fmt.Sprintf("required = %v", required), func(t *testing.T) {
			srv, _ := okServer(t)
			url := downURL(t)
			var influx *httptest.Server
			if required {
				influx = fakeInflux(t)
				url = influx.URL
			}
			dir := t.TempDir()
			writeFile(t, dir, "test.hcl", influxTest(url, fmt.Sprintf("required = %v\n  flush_timeout = \"60s\"", required)))
			cmd := exec.Command(hloadBin, "apply", "test.hcl", "--var", "base_url="+srv.URL, "--summary-export", "summary.json")
			cmd.Dir = dir
			var stdout bytes.Buffer
			cmd.Stdout = &stdout
			pipe, err := cmd.StderrPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			timer := time.AfterFunc(time.Minute, func() { cmd.Process.Kill() })
			defer timer.Stop()
			if influx != nil {
				time.AfterFunc(time.Second, influx.Close) // InfluxDB goes away mid-run
			}
			// Read stderr until the sink says it waits.
			var (
				stderr  strings.Builder
				mu      sync.Mutex
				waiting = make(chan struct{})
				once    sync.Once
				read    = make(chan struct{})
			)
			go func() {
				defer close(read)
				sc := bufio.NewScanner(pipe)
				for sc.Scan() {
					mu.Lock()
					stderr.WriteString(sc.Text() + "\n")
					mu.Unlock()
					if strings.Contains(sc.Text(), "influxdb: waiting for "+url) {
						once.Do(func() { close(waiting) })
					}
				}
			}()
			select {
			case <-waiting:
			case <-time.After(30 * time.Second):
				cmd.Process.Kill()
				<-read
				t.Fatalf("the sink never said it waits; stderr:\n%s", stderr.String())
			}
			signalled := time.Now()
			if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
				t.Fatal(err)
			}
			<-read
			cmd.Wait()
			took := time.Since(signalled)
			mu.Lock()
			errText := stderr.String()
			mu.Unlock()
			if code := cmd.ProcessState.ExitCode(); code != exitInterrupted || took > time.Second {
				t.Errorf("exit %d %v after SIGINT; want %d within 1 s\nstdout:\n%s\nstderr:\n%s", code, took, exitInterrupted, stdout.String(), errText)
			}
			sum := exportedSummary(t, filepath.Join(dir, "summary.json"))
			interrupted := slices.ContainsFunc(sum.Warnings, func(w string) bool {
				return strings.HasPrefix(w, "influxdb sink: the wait for InfluxDB was interrupted: ") && strings.Contains(w, "unsent")
			})
			if !sum.Interrupted || !interrupted || len(sum.SinkErrors) != 0 {
				t.Errorf("summary interrupted %v, warnings %q, sink errors %q", sum.Interrupted, sum.Warnings, sum.SinkErrors)
			}
			if !strings.Contains(errText, "hload: no longer waiting for the sinks to flush") || strings.Contains(errText, "press Ctrl-C again") {
				t.Errorf("stderr:\n%s", errText)
			}
			if !strings.Contains(stdout.String(), "INTERRUPTED") {
				t.Errorf("stdout:\n%s", stdout.String())
			}
			t.Logf("SIGINT while the sink waited: exit %d after %v", cmd.ProcessState.ExitCode(), took.Round(time.Millisecond))
		})
	}
}
