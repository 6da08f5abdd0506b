package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// viewersEnv makes the test binary play the dashboard's viewers instead
// of running tests: "read N URL" opens N viewers of URL's /events that
// read everything, "stall N URL" opens N that read nothing and keep a
// receive buffer of 4 KB, so the server's writes to them block early. It
// prints "ready" once every viewer has its response headers (a stalled
// one: its request sent) and exits when stdin closes.
const viewersEnv = "HLOAD_TEST_DASHBOARD_VIEWERS"

func playViewers(spec string) {
	var mode, url string
	var n int
	if _, err := fmt.Sscan(spec, &mode, &n, &url); err != nil {
		panic(fmt.Sprintf("%s=%q: %v", viewersEnv, spec, err))
	}
	var wg sync.WaitGroup
	for range n {
		switch mode {
		case "read":
			resp, err := http.Get(url + "events")
			if err != nil {
				panic(err)
			}
			wg.Go(func() { io.Copy(io.Discard, resp.Body) })
		case "stall":
			addr := strings.TrimSuffix(strings.TrimPrefix(url, "http://"), "/")
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				panic(err)
			}
			conn.(*net.TCPConn).SetReadBuffer(4096)
			fmt.Fprintf(conn, "GET /events HTTP/1.1\r\nHost: %s\r\n\r\n", addr)
			defer conn.Close()
		}
	}
	fmt.Println("ready")
	io.Copy(io.Discard, os.Stdin)
}

// dashboardBenchTest has 20 requests, so that each interval's event is
// about 40 KB: over a 5 s run a stalled viewer's buffers fill and the
// dashboard drops it while the run goes on.
var dashboardBenchTest = func() string {
	var b strings.Builder
	b.WriteString(`variable "base_url" {}
target "t" {
  base_url = var.base_url
}
scenario "s" {
  executor = "constant-vus"
  vus      = 50
  duration = "5s"
`)
	for i := range 20 {
		fmt.Fprintf(&b, "  request \"r%02d\" {\n    path = \"/r\"\n  }\n", i)
	}
	b.WriteString("}\n")
	return b.String()
}()

// BenchmarkDashboardViewers measures what the dashboard's viewers cost a
// closed-model run that saturates hload's core: the server pinned to CPU
// 1 with the viewers' process, hload pinned to CPU 0, 50 VUs for 5 s,
// against the 60-byte server. Each round runs, in turn, without a
// dashboard, with one viewer that reads nothing, with ten that read
// everything, and without a dashboard again. It reports each run's
// requests/s and CPU per request; the two runs without a dashboard give
// the run-to-run noise (noise-%), beside which the stalled viewer's
// change in requests/s (stalled-%) and the ten viewers' change in CPU per
// request (ten-viewers-cpu-%) are read. Load average: `uptime` beside.
func BenchmarkDashboardViewers(b *testing.B) {
	baseURL, _ := startBenchServer(b, true)
	dir := b.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "test.hcl"), []byte(dashboardBenchTest), 0o644); err != nil {
		b.Fatal(err)
	}

	// run runs hload once; viewers is "" for no dashboard, else what
	// playViewers plays against it.
	run := func(name, viewers string) (rps, cpuPerRequest float64) {
		out := filepath.Join(dir, name+".json")
		args := []string{hloadBin, "apply", "test.hcl", "--quiet", "--summary-export", out, "--var", "base_url=" + baseURL}
		if viewers != "" {
			args = append(args, "--dashboard", "127.0.0.1:0")
		}
		cmd, _ := pinned(true, 0, args...)
		cmd.Dir = dir
		stderrPipe, err := cmd.StderrPipe()
		if err != nil {
			b.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		var stderr bytes.Buffer
		lines := bufio.NewScanner(stderrPipe)
		if viewers != "" {
			// The viewers connect as the run starts: hload prints the
			// address before it sends any load.
			var url string
			for url == "" && lines.Scan() {
				stderr.WriteString(lines.Text() + "\n")
				if m := dashboardLine.FindStringSubmatch(lines.Text()); m != nil {
					url = m[1]
				}
			}
			if url == "" {
				cmd.Wait()
				b.Fatalf("%s: no dashboard address:\n%s", name, stderr.String())
			}
			v, _ := pinned(true, 1, os.Args[0], "-test.run=^$")
			v.Env = append(os.Environ(), viewersEnv+"="+viewers+" "+url)
			vin, _ := v.StdinPipe()
			vout, _ := v.StdoutPipe()
			v.Stderr = os.Stderr
			if err := v.Start(); err != nil {
				b.Fatal(err)
			}
			if line, err := bufio.NewReader(vout).ReadString('\n'); err != nil || line != "ready\n" {
				b.Fatalf("%s: viewers: %q %v", name, line, err)
			}
			defer v.Wait()
			defer vin.Close()
		}
		for lines.Scan() {
			stderr.WriteString(lines.Text() + "\n")
		}
		if err := cmd.Wait(); err != nil {
			b.Fatalf("%s: %v\n%s", name, err, stderr.String())
		}
		sum := *exportedSummary(b, out)
		var count, errs int64
		for _, r := range sum.Scenarios["s"].Requests {
			count += r.Count
			errs += r.Errors
		}
		if errs != 0 || count == 0 {
			b.Fatalf("%s: %d requests, %d errors", name, count, errs)
		}
		cpu := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
		return float64(count) / sum.DurationS, float64(cpu.Microseconds()) / float64(count)
	}
	pct := func(a, b float64) float64 { return (a/b - 1) * 100 }
	// Each figure is the median over the rounds: one round's runs are
	// 20 s apart, and a shared machine drifts.
	figures := map[string][]float64{}
	for b.Loop() {
		rps1, cpu1 := run("none-1", "")
		rpsStalled, cpuStalled := run("stalled", "stall 1")
		rpsTen, cpuTen := run("ten", "read 10")
		rps2, cpu2 := run("none-2", "")
		rps, cpu := (rps1+rps2)/2, (cpu1+cpu2)/2
		for name, v := range map[string]float64{
			"none-req/s": rps, "stalled-req/s": rpsStalled, "ten-req/s": rpsTen,
			"noise-req/s-%": math.Abs(rps1-rps2) / rps * 100, "stalled-req/s-%": pct(rpsStalled, rps),
			"none-cpu-µs/req": cpu, "stalled-cpu-µs/req": cpuStalled, "ten-cpu-µs/req": cpuTen,
			"noise-cpu-%": math.Abs(cpu1-cpu2) / cpu * 100, "ten-viewers-cpu-%": pct(cpuTen, cpu),
		} {
			figures[name] = append(figures[name], v)
		}
	}
	for name, vs := range figures {
		slices.Sort(vs)
		b.ReportMetric(vs[len(vs)/2], name)
	}
}

// TestDashboardBenchTestIsValid keeps the benchmark's test file valid.
func TestDashboardBenchTestIsValid(t *testing.T) {
	dir := t.TempDir()
	file := writeFile(t, dir, "test.hcl", dashboardBenchTest)
	var stdout, stderr bytes.Buffer
	if code := run([]string{"validate", "--var", "base_url=http://127.0.0.1:1", file}, &stdout, &stderr); code != 0 {
		t.Fatalf("validate exit %d: %s", code, stderr.String())
	}
	if n := strings.Count(dashboardBenchTest, "request \""); n != 20 {
		t.Fatalf("%d requests, want 20", n)
	}
}
