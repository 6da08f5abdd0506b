package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
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
	for range n { // "read 0": a dashboard no one watches
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

// BenchmarkDashboardViewers measures what the dashboard and its viewers
// cost a closed-model run that saturates hload's core: the server pinned
// to CPU 1 with the viewers' process, hload pinned to CPU 0, 50 VUs for
// 5 s, against the 60-byte server. Each round runs four variants, in an
// order that rotates from round to round: no dashboard; a dashboard no
// one watches; one viewer that reads nothing; ten that read everything.
// It reports each variant's median requests/s and CPU per request over
// the rounds, the spread of the runs without a dashboard (max - min over
// the median: the run-to-run noise), and each variant's change against
// the one it is compared with: the stalled viewer's requests/s against
// no dashboard, the ten viewers' CPU per request against the dashboard
// no one watches. Load average: `uptime` beside.
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
	variants := []struct{ name, viewers string }{
		{"none", ""}, {"watched-by-none", "read 0"}, {"stalled", "stall 1"}, {"ten", "read 10"},
	}
	rps, cpu := map[string][]float64{}, map[string][]float64{}
	round := 0
	for b.Loop() {
		for k := range variants {
			v := variants[(k+round)%len(variants)]
			r, c := run(v.name, v.viewers)
			rps[v.name] = append(rps[v.name], r)
			cpu[v.name] = append(cpu[v.name], c)
		}
		round++
	}
	median := func(vs []float64) float64 {
		vs = slices.Clone(vs)
		slices.Sort(vs)
		if n := len(vs); n%2 == 0 {
			return (vs[n/2-1] + vs[n/2]) / 2
		}
		return vs[len(vs)/2]
	}
	spread := func(vs []float64) float64 { return (slices.Max(vs) - slices.Min(vs)) / median(vs) * 100 }
	for _, v := range variants {
		b.ReportMetric(median(rps[v.name]), v.name+"-req/s")
		b.ReportMetric(median(cpu[v.name]), v.name+"-cpu-µs/req")
	}
	b.ReportMetric(spread(rps["none"]), "none-spread-req/s-%")
	b.ReportMetric(spread(cpu["none"]), "none-spread-cpu-%")
	b.ReportMetric((median(rps["stalled"])/median(rps["none"])-1)*100, "stalled-vs-none-req/s-%")
	b.ReportMetric((median(cpu["ten"])/median(cpu["watched-by-none"])-1)*100, "ten-vs-unwatched-cpu-%")
	b.ReportMetric((median(cpu["watched-by-none"])/median(cpu["none"])-1)*100, "unwatched-vs-none-cpu-%")
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
