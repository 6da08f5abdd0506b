//go:build unix

package dashboard

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hload/hload/metrics"
)

// bigSnapshot is interval i of a run of 20 requests, with the run so far:
// an event of about 20 KB, as a real run of that many requests sends.
func bigSnapshot(start time.Time, i int) metrics.Snapshot {
	snap := snapshot(start, i, 0)
	snap.Warnings = nil
	sum := &metrics.Summary{Scenarios: map[string]*metrics.ScenarioSummary{"s": {Requests: map[string]*metrics.RequestFigures{}}}}
	for r := range 20 {
		name := fmt.Sprintf("r%02d", r)
		lat := metrics.LatencyFigures{Min: 0.2, Mean: 2.6, Stdev: 1.4, P50: 2.6, P90: 4.7, P95: 4.9, P99: 5.15, P999: 5.19, Max: 5.2}
		f := metrics.RequestFigures{Count: int64(1000 * (i + 1)), RPS: 1000, Latency: lat,
			Status: map[string]int64{"200": int64(1000 * (i + 1))}, ErrorsByKind: map[string]int64{},
			Metrics: map[string]metrics.MetricFigures{"ttfb": {Count: int64(1000 * (i + 1)), LatencyFigures: lat}}}
		sum.Scenarios["s"].Requests[name] = &f
		snap.Series = append(snap.Series, metrics.SeriesFigures{Scenario: "s", Request: name, RequestFigures: f})
	}
	snap.SoFar = sum
	return snap
}

// BenchmarkViewers measures what viewers of /events cost per interval: a
// Write of a 20-request interval and its fan-out, until every viewer has
// read it, with no viewer and with ten. The CPU is the whole process's
// (getrusage), the ten viewers' reading included, so it overstates what
// hload pays for viewers in other processes. At the default 1 s interval,
// cpu-µs/interval divided by 10^4 is the percentage of one core.
func BenchmarkViewers(b *testing.B) {
	for _, viewers := range []int{0, 10} {
		b.Run(fmt.Sprintf("viewers=%d", viewers), func(b *testing.B) {
			s, err := Listen(Options{Addr: "127.0.0.1:0"})
			if err != nil {
				b.Fatal(err)
			}
			// Bounded as cmd/hload bounds it: a viewer's stream that
			// the server has not seen end holds srv.Shutdown, which then
			// closes the connections; with no bound a CI run hung here.
			defer shutdown(s)
			start := time.Now()
			s.Start(context.Background(), metrics.RunInfo{Started: start})
			// got carries 1 per event a viewer read, and 0 when its
			// stream ended: the dashboard drops a viewer that stalls for
			// its write deadline (a loaded machine can stall one), and
			// the loop must stop waiting for it rather than hang.
			got := make(chan int, 1024)
			for range viewers {
				resp, err := http.Get(s.URL() + "events")
				if err != nil {
					b.Fatal(err)
				}
				defer resp.Body.Close()
				go func() {
					sc := bufio.NewScanner(resp.Body)
					sc.Buffer(make([]byte, 1<<20), 1<<20)
					for sc.Scan() {
						if strings.HasPrefix(sc.Text(), "id: ") {
							got <- 1
						}
					}
					got <- 0
				}()
			}
			for s.Viewers() < viewers {
				time.Sleep(time.Millisecond)
			}
			size := 0
			before := cpu()
			i, reading, dropped := 0, viewers, 0
			for b.Loop() {
				snap := bigSnapshot(start, i)
				if i == 0 {
					data, _ := s.eventData(snap)
					size = len(data)
				}
				if err := s.Write(snap); err != nil {
					b.Fatal(err)
				}
				for n := reading; n > 0; n-- {
					select {
					case one := <-got:
						if one == 0 {
							reading--
							dropped++
						}
					case <-time.After(time.Minute):
						b.Fatalf("interval %d: a viewer neither read the event nor lost its stream in a minute", i)
					}
				}
				i++
			}
			used := cpu() - before
			b.ReportMetric(float64(used.Microseconds())/float64(b.N), "cpu-µs/interval")
			b.ReportMetric(float64(size), "event-bytes")
			b.ReportMetric(float64(dropped), "viewers-dropped")
		})
	}
}

// cpu is the process's user and system CPU time so far.
func cpu() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
