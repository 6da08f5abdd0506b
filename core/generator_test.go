package core

import (
	"strings"
	"testing"
	"time"
)

// TestJudge: one stretch's verdict from the process's counters against its
// wall time and the cores it may use.
func TestJudge(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		name  string
		u     usage
		cores int
		want  saturation
		util  float64
		wait  float64
	}{
		{"idle", usage{wall: time.Second, processTimes: processTimes{cpu: 100 * ms, cpuKnown: true, waitKnown: true}}, 1, notSaturated, 0.1, 0},
		{"one core used", usage{wall: time.Second, processTimes: processTimes{cpu: 950 * ms, cpuKnown: true}}, 1, saturatedCPU, 0.95, 0},
		{"one of two cores used", usage{wall: time.Second, processTimes: processTimes{cpu: 950 * ms, cpuKnown: true}}, 2, notSaturated, 0.475, 0},
		{"two cores used", usage{wall: 2 * time.Second, processTimes: processTimes{cpu: 3700 * ms, cpuKnown: true}}, 2, saturatedCPU, 0.925, 0},
		{"just under", usage{wall: time.Second, processTimes: processTimes{cpu: 899 * ms, cpuKnown: true}}, 1, notSaturated, 0.899, 0},
		{"half used, the rest waited for", usage{wall: time.Second, processTimes: processTimes{cpu: 500 * ms, cpuKnown: true, wait: 450 * ms, waitKnown: true}}, 1, saturatedRunQueue, 0.5, 0.45},
		{"half used, some waited for", usage{wall: time.Second, processTimes: processTimes{cpu: 500 * ms, cpuKnown: true, wait: 300 * ms, waitKnown: true}}, 1, notSaturated, 0.5, 0.3},
		// A closed model that also waits on its calls: it wanted 65 %
		// of the core, and got only half of that.
		{"waited as long as it ran", usage{wall: time.Second, processTimes: processTimes{cpu: 300 * ms, cpuKnown: true, wait: 350 * ms, waitKnown: true}}, 1, saturatedContended, 0.3, 0.35},
		{"waited as long as it ran, lightly", usage{wall: time.Second, processTimes: processTimes{cpu: 100 * ms, cpuKnown: true, wait: 150 * ms, waitKnown: true}}, 1, notSaturated, 0.1, 0.15},
		{"half used, wait unknown", usage{wall: time.Second, processTimes: processTimes{cpu: 500 * ms, cpuKnown: true}}, 1, notSaturated, 0.5, 0},
		{"late while busy", usage{wall: time.Second, late: 12, processTimes: processTimes{cpu: 300 * ms, cpuKnown: true, wait: 250 * ms, waitKnown: true}}, 1, saturatedLate, 0.3, 0.25},
		{"late while idle: short of VUs", usage{wall: time.Second, late: 12, processTimes: processTimes{cpu: 100 * ms, cpuKnown: true, waitKnown: true}}, 1, notSaturated, 0.1, 0},
		{"late, CPU unknown", usage{wall: time.Second, late: 12}, 1, saturatedLate, 0, 0},
		{"on time, CPU unknown", usage{wall: time.Second, late: lateStart}, 1, notSaturated, 0, 0},
		// The hypervisor took 25 % of the machine: the 700 ms hload ran
		// were 700/0.75 ms on a CPU, 233 ms of them stolen.
		{"used, waited for and stolen", usage{wall: time.Second, processTimes: processTimes{cpu: 700 * ms, cpuKnown: true, wait: 50 * ms, waitKnown: true,
			steal: 500 * ms, machine: 2000 * ms, stealKnown: true}}, 1, saturatedRunQueue, 0.7, 0.05},
		{"used and stolen, not enough", usage{wall: time.Second, processTimes: processTimes{cpu: 500 * ms, cpuKnown: true, wait: 50 * ms, waitKnown: true,
			steal: 500 * ms, machine: 2000 * ms, stealKnown: true}}, 1, notSaturated, 0.5, 0.05},
		{"no wall time", usage{processTimes: processTimes{cpu: time.Second, cpuKnown: true}}, 1, notSaturated, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := judge(tc.u, tc.cores)
			if j.kind != tc.want || !same(j.utilization, tc.util) || !same(j.waitShare, tc.wait) {
				t.Errorf("judge = kind %d, utilization %.4f, wait %.4f; want kind %d, %.4f, %.4f",
					j.kind, j.utilization, j.waitShare, tc.want, tc.util, tc.wait)
			}
		})
	}
}

func same(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }

// scriptedMeter plays back counters: each read advances by the next step.
type scriptedMeter struct {
	now   processTimes
	steps []processTimes
}

func (m *scriptedMeter) read() processTimes {
	if len(m.steps) > 0 {
		s := m.steps[0]
		m.steps = m.steps[1:]
		m.now.cpu += s.cpu
		m.now.wait += s.wait
		m.now.steal += s.steal
		m.now.machine += s.machine
		m.now.cpuKnown, m.now.waitKnown, m.now.stealKnown = s.cpuKnown, s.waitKnown, s.stealKnown
	}
	return m.now
}

// interval is one synthetic interval: its length, the CPU used and waited
// for in it, and its worst p99 start lateness.
type interval struct {
	wall, cpu, wait time.Duration
	late            float64
	// steal is the share of the machine's CPU time the hypervisor took.
	steal float64
}

// watchIntervals runs a watch over the intervals, the last one final, and
// returns the live warnings it gave at each (by index) and the watch.
func watchIntervals(cores int, every time.Duration, waitKnown bool, ivs ...interval) (map[int]string, *generatorWatch) {
	// The first read, as the watch starts, is the counters as they are.
	m := &scriptedMeter{now: processTimes{cpuKnown: true, waitKnown: waitKnown, stealKnown: true},
		steps: []processTimes{{cpuKnown: true, waitKnown: waitKnown, stealKnown: true}}}
	for _, iv := range ivs {
		// A machine of two CPUs.
		machine := 2 * iv.wall
		m.steps = append(m.steps, processTimes{cpu: iv.cpu, cpuKnown: true, wait: iv.wait, waitKnown: waitKnown,
			steal: time.Duration(iv.steal * float64(machine)), machine: machine, stealKnown: true})
	}
	at := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	g := newGeneratorWatch(m, func() time.Time { return at }, cores, every)
	said := map[int]string{}
	for i, iv := range ivs {
		at = at.Add(iv.wall)
		if w := g.observe(iv.late, i == len(ivs)-1); w != "" {
			said[i] = w
		}
	}
	return said, g
}

// TestGeneratorWatch: the run is saturated once two judged intervals in a
// row, a second or more, were (or every interval of a shorter run); it is
// said live once, when it first holds; a lone busy interval is counted but
// does not mark the run.
func TestGeneratorWatch(t *testing.T) {
	s, ms := time.Second, time.Millisecond
	idle := interval{wall: s, cpu: 50 * ms, wait: 5 * ms}
	busy := interval{wall: s, cpu: 980 * ms, wait: 10 * ms}
	starved := interval{wall: s, cpu: 520 * ms, wait: 470 * ms}
	for _, tc := range []struct {
		name       string
		cores      int
		every      time.Duration
		ivs        []interval
		saidAt     int // -1: never
		saturated  bool
		judged     int
		saturatedN int
		utilMax    float64
		reason     []string
	}{
		{"headroom", 1, s, []interval{idle, idle, idle}, -1, false, 3, 0, 0.05, nil},
		{"busy from the second interval", 1, s, []interval{idle, busy, busy, busy}, 2, true, 4, 3, 0.98,
			[]string{"hload may use 1 CPU core", "saturated in 3 of 4 intervals (3 used at least 90 % of it)", "used up to 98 %", "waited for a CPU up to 1 %"}},
		{"starved by another process", 1, s, []interval{starved, starved, idle}, 1, true, 3, 2, 0.52,
			[]string{"saturated in 2 of 3 intervals (2 used or waited on the run queue for at least 90 % of it", "waited for a CPU up to 47 %"}},
		// 750 ms ran, 25 ms waited: 97.5 % of the core with the 250 ms
		// the hypervisor took while hload ran.
		{"starved by the hypervisor", 1, s, []interval{
			{wall: s, cpu: 750 * ms, wait: 25 * ms, steal: 0.25}, {wall: s, cpu: 750 * ms, wait: 25 * ms, steal: 0.25}}, 1, true, 2, 2, 0.75,
			[]string{"2 used, waited on the run queue for, or lost to the hypervisor at least 90 % of it", "the hypervisor took up to 25 % of the machine's CPU time"}},
		{"stolen while idle is no saturation", 1, s, []interval{
			{wall: s, cpu: 100 * ms, steal: 0.5}, {wall: s, cpu: 100 * ms, steal: 0.5}}, -1, false, 2, 0, 0.1, nil},
		{"one busy interval is no saturation", 1, s, []interval{idle, busy, idle, busy, idle}, -1, false, 5, 2, 0.98, nil},
		{"busy on one of two cores", 2, s, []interval{busy, busy, busy}, -1, false, 3, 0, 0.49, nil},
		{"late starts while busy", 1, s, []interval{
			{wall: s, cpu: 400 * ms, wait: 200 * ms, late: 30}, {wall: s, cpu: 400 * ms, wait: 200 * ms, late: 45}}, 1, true, 2, 2, 0.4,
			[]string{"2 started open-model iterations more than 5 ms late (p99, up to 45.0 ms) while busy"}},
		{"late starts while idle: short of VUs", 1, s, []interval{
			{wall: s, cpu: 100 * ms, late: 30}, {wall: s, cpu: 100 * ms, late: 45}}, -1, false, 2, 0, 0.1, nil},
		// Snapshots every 25 ms are judged in stretches of 100 ms: two
		// intervals of 25 ms, however busy, are no sustained saturation.
		{"short intervals are carried", 1, 25 * ms, []interval{
			{wall: 25 * ms, cpu: 25 * ms}, {wall: 25 * ms, cpu: 25 * ms}, {wall: 25 * ms, cpu: 25 * ms}, {wall: 25 * ms, cpu: 25 * ms},
			{wall: 25 * ms, cpu: 1 * ms}, {wall: 25 * ms, cpu: 1 * ms}, {wall: 25 * ms, cpu: 1 * ms}, {wall: 25 * ms, cpu: 1 * ms}}, -1, false, 2, 1, 1, nil},
		{"a run shorter than an interval is judged whole", 1, s, []interval{{wall: 300 * ms, cpu: 295 * ms}}, 0, true, 1, 1, 0.9833, nil},
		{"a run of a few milliseconds is not judged", 1, s, []interval{{wall: 50 * ms, cpu: 50 * ms}}, -1, false, 0, 0, 0, nil},
		// The final interval, a few ms long, is not judged on its own.
		{"a short final interval", 1, s, []interval{idle, idle, {wall: 20 * ms, cpu: 20 * ms}}, -1, false, 2, 0, 0.05, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			said, g := watchIntervals(tc.cores, tc.every, true, tc.ivs...)
			if tc.saidAt < 0 && len(said) > 0 || tc.saidAt >= 0 && (len(said) != 1 || said[tc.saidAt] == "") {
				t.Errorf("live warnings %v, want one at interval %d (-1: none)", said, tc.saidAt)
			}
			f := g.figures()
			if f.Saturated != tc.saturated || f.Intervals != tc.judged || f.SaturatedIntervals != tc.saturatedN ||
				!same(f.CPUUtilizationMax, tc.utilMax) || f.CPUCoresAvailable != tc.cores {
				t.Errorf("figures %+v; want saturated %v, %d of %d intervals, utilization max %v, %d cores",
					*f, tc.saturated, tc.saturatedN, tc.judged, tc.utilMax, tc.cores)
			}
			if (f.Reason != "") != tc.saturated {
				t.Errorf("reason %q with saturated %v", f.Reason, f.Saturated)
			}
			for _, want := range tc.reason {
				if !strings.Contains(f.Reason, want) {
					t.Errorf("reason %q lacks %q", f.Reason, want)
				}
			}
			if f.RunQueueWaitShareMax == nil {
				t.Error("run-queue wait measured but not reported")
			}
		})
	}
}

// TestGeneratorFigures: the mean is the run's CPU over its whole length,
// short intervals included; CPU seconds add up; a wait that is not
// measured is left out, not reported as 0.
func TestGeneratorFigures(t *testing.T) {
	s, ms := time.Second, time.Millisecond
	_, g := watchIntervals(2, s, false,
		interval{wall: s, cpu: 400 * ms}, interval{wall: s, cpu: 1200 * ms}, interval{wall: 500 * ms, cpu: 900 * ms})
	f := g.figures()
	if f.CPUSeconds != 2.5 || f.CPUUtilizationMean != 0.5 || f.CPUUtilizationMax != 0.9 {
		t.Errorf("cpu %v s, mean %v, max %v; want 2.5 s, 0.5 (2.5 of 2 cores over 2.5 s), 0.9", f.CPUSeconds, f.CPUUtilizationMean, f.CPUUtilizationMax)
	}
	if f.RunQueueWaitShareMax != nil {
		t.Errorf("run-queue wait share %v where it is not measured, want nil", *f.RunQueueWaitShareMax)
	}
	if strings.Contains(g.because(), "waited") {
		t.Errorf("reason %q speaks of a wait not measured", g.because())
	}
	var none *generatorWatch
	if none.figures() != nil || none.observe(0, true) != "" {
		t.Error("a run never watched has generator figures")
	}
}

// BenchmarkGeneratorObserve measures what the watch costs once per
// interval with the real meter: getrusage and, on Linux, one schedstat
// file per thread. It is never on a request's path.
func BenchmarkGeneratorObserve(b *testing.B) {
	g := newGeneratorWatch(newSelfMeter(), time.Now, availableCores(), time.Second)
	b.ReportAllocs()
	for b.Loop() {
		g.observe(0, false)
	}
}
