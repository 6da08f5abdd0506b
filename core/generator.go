package core

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/hload/hload/metrics"
)

// A load generator that runs out of CPU measures itself: its calls leave
// late, their responses are read late, and the figures blame the server.
// So hload reads its own counters once per interval (never per request)
// and judges whether it was the bottleneck, from what the process did
// against the wall clock of the same run.

const (
	// saturatedDemand is the share of the CPU time hload may use that it
	// must have used, or used and waited for on a run queue, for an
	// interval to count as saturated: it wanted at least all it could get.
	saturatedDemand = 0.9
	// lateDemand is the share hload must have used or waited for for
	// late open-model starts to count as saturation. Starts that are late
	// while hload idles come from a shortage of VUs or a slow setup, which
	// the start-lateness warning names, not from hload's CPU.
	lateDemand = 0.5
	// shortestJudged is the shortest stretch judged on its own: CPU time
	// over a few milliseconds is noise. Shorter intervals are carried into
	// the next.
	shortestJudged = 100 * time.Millisecond
	// sustainedFor is the least time in a row, over at least two judged
	// stretches, that hload must be saturated for the run to be: with the
	// CLI's 1 s snapshots, two intervals in a row.
	sustainedFor = time.Second
	// maxSteal bounds the steal share an estimate is made from: beyond
	// it, the estimate of what hload lost would be mostly noise.
	maxSteal = 0.9
	// minStealSaid is the least steal share worth naming in a reason:
	// /proc/stat counts in ticks of 10 ms, so less is rounding.
	minStealSaid = 0.01
)

// processTimes are the process's own counters at one moment, or their
// growth over a stretch.
type processTimes struct {
	// cpu is the user and system time of every thread of the process.
	cpu      time.Duration
	cpuKnown bool
	// wait is the time its threads spent runnable on a run queue without
	// running: they wanted a CPU and did not get one (Linux only).
	wait      time.Duration
	waitKnown bool
	// plugins is the part of cpu that hload's plugin processes used; it
	// is in cpu too, and their threads' wait in wait: the generator is
	// hload and its plugins, on the same cores.
	plugins time.Duration
	// steal and machine are the whole machine's CPU time taken by the
	// hypervisor for other guests, and all its CPU time, from /proc/stat
	// (Linux only). Time stolen while a thread ran is neither in its CPU
	// time nor in its run-queue wait: on a busy virtual machine a
	// generator that wanted a whole core can seem to have used 75 % of it
	// and waited for none of the rest.
	steal, machine time.Duration
	stealKnown     bool
}

// processMeter reads the process's counters; its values only grow.
// selfMeter is the real one; tests give synthetic ones.
type processMeter interface {
	read() processTimes
}

// usage is what the process did over one stretch of wall time.
type usage struct {
	wall time.Duration
	processTimes
	// late is the worst p99 start lateness of the stretch's open-model
	// series, in ms; 0 without any.
	late float64
}

// add folds the next stretch into u.
func (u *usage) add(v usage) {
	u.wall += v.wall
	u.cpu += v.cpu
	u.wait += v.wait
	u.plugins += v.plugins
	u.steal += v.steal
	u.machine += v.machine
	u.cpuKnown, u.waitKnown, u.stealKnown = v.cpuKnown, v.waitKnown, v.stealKnown
	u.late = max(u.late, v.late)
}

// saturation is what, if anything, made a stretch saturated.
type saturation int

const (
	notSaturated       saturation = iota
	saturatedCPU                  // it used nearly all the CPU it may use
	saturatedRunQueue             // it used, waited for, or had stolen nearly all of it
	saturatedContended            // it waited for a CPU as long as it ran, while busy
	saturatedLate                 // open-model starts were late while it was busy
	saturationKinds
)

// judgement is one stretch's verdict, with the figures it rests on.
type judgement struct {
	utilization float64 // CPU used, as a fraction of the cores' time
	waitShare   float64 // run-queue wait, the same way; 0 when unknown
	stolenShare float64 // CPU time the hypervisor took while it ran, the same way
	steal       float64 // the share of the whole machine's CPU time stolen
	late        float64 // p99 start lateness, ms
	kind        saturation
}

// judge decides whether hload was saturated over u, when it may use cores
// CPU cores.
func judge(u usage, cores int) judgement {
	j := judgement{late: u.late}
	if u.wall <= 0 || cores <= 0 {
		return j
	}
	capacity := float64(u.wall) * float64(cores)
	if u.cpuKnown {
		j.utilization = float64(u.cpu) / capacity
	}
	if u.waitKnown {
		j.waitShare = float64(u.wait) / capacity
	}
	if u.stealKnown && u.machine > 0 {
		// The hypervisor took a share s of every CPU's time; a thread
		// that ran for c got c of the c/(1-s) it was on a CPU. The share
		// is the machine's, spread evenly over its CPUs: hload's own
		// part of it is not counted anywhere.
		j.steal = min(float64(u.steal)/float64(u.machine), maxSteal)
		j.stolenShare = j.utilization * j.steal / (1 - j.steal)
	}
	demand := j.utilization + j.waitShare + j.stolenShare
	switch {
	case u.cpuKnown && j.utilization >= saturatedDemand:
		j.kind = saturatedCPU
	case u.cpuKnown && demand >= saturatedDemand:
		j.kind = saturatedRunQueue
	case u.cpuKnown && u.waitKnown && j.waitShare >= j.utilization && demand >= lateDemand:
		// A process that also waits on the network (each VU's call
		// in flight) wants less than all of the CPU even when starved
		// of it; but one that waited for a CPU as long as it ran had
		// every stretch of its work, its timings included, doubled.
		j.kind = saturatedContended
	case u.late > lateStart && (!u.cpuKnown || demand >= lateDemand):
		// Without CPU figures (Windows) late starts are all there is.
		j.kind = saturatedLate
	}
	return j
}

// generatorWatch follows hload's own use of the CPU over a run, one
// interval at a time.
type generatorWatch struct {
	meter processMeter
	// clock is read with the meter, not taken from the snapshot: the run
	// goroutine may be descheduled between the two on a busy core, and
	// the CPU it used meanwhile must fall in the same interval as the
	// wall time.
	clock    func() time.Time
	cores    int
	shortest time.Duration // an interval shorter than this is carried over

	last    processTimes
	lastAt  time.Time
	pending usage // short intervals carried into the next
	total   usage // the whole run

	judged, saturated int
	kinds             [saturationKinds]int
	streak            time.Duration // saturated wall time in a row
	streakLen         int           // and in how many stretches
	sustained         bool
	utilizationMax    float64
	waitShareMax      float64
	stealMax          float64 // the machine's steal share, over judged stretches
	lateMax           float64 // ms, over saturated stretches
	said              bool
	// intervalCPU is the last interval's CPU as a fraction of the
	// cores' time, NaN when unknown: the live view's generator line.
	intervalCPU float64
}

// newGeneratorWatch starts watching now, with the counters as they are,
// for a run whose snapshots come every interval.
func newGeneratorWatch(m processMeter, clock func() time.Time, cores int, interval time.Duration) *generatorWatch {
	return &generatorWatch{
		meter:    m,
		clock:    clock,
		cores:    max(1, cores),
		shortest: max(interval/2, shortestJudged),
		last:     m.read(),
		lastAt:   clock(),
		// No interval yet.
		intervalCPU: math.NaN(),
	}
}

// observe takes in the interval that ends now, whose open-model series
// started late by up to late ms at p99. It returns the live warning the
// first time the run is found saturated, else "".
func (g *generatorWatch) observe(late float64, final bool) string {
	if g == nil {
		return ""
	}
	now := g.meter.read()
	at := g.clock()
	u := usage{wall: at.Sub(g.lastAt), late: late, processTimes: processTimes{
		cpu: now.cpu - g.last.cpu, cpuKnown: now.cpuKnown && g.last.cpuKnown,
		wait: now.wait - g.last.wait, waitKnown: now.waitKnown && g.last.waitKnown,
		plugins: now.plugins - g.last.plugins,
		steal:   now.steal - g.last.steal, machine: now.machine - g.last.machine,
		stealKnown: now.stealKnown && g.last.stealKnown,
	}}
	g.last, g.lastAt = now, at
	if u.wall <= 0 {
		return ""
	}
	g.intervalCPU = math.NaN()
	if u.cpuKnown {
		g.intervalCPU = float64(u.cpu) / (float64(u.wall) * float64(g.cores))
	}
	g.total.add(u)
	g.pending.add(u)
	// A run shorter than one judged stretch is judged whole.
	if g.pending.wall >= g.shortest || (final && g.judged == 0 && g.pending.wall >= shortestJudged) {
		g.record(judge(g.pending, g.cores), g.pending.wall)
		g.pending = usage{}
	}
	if g.said || !g.isSaturated(final) {
		return ""
	}
	g.said = true
	return g.liveWarning()
}

// lastCPU is the CPU of the interval observe last took in, as a fraction
// of the cores' time; NaN when unknown.
func (g *generatorWatch) lastCPU() float64 {
	if g == nil {
		return math.NaN()
	}
	return g.intervalCPU
}

// record counts one judged stretch.
func (g *generatorWatch) record(j judgement, wall time.Duration) {
	g.judged++
	g.utilizationMax = max(g.utilizationMax, j.utilization)
	g.waitShareMax = max(g.waitShareMax, j.waitShare)
	g.stealMax = max(g.stealMax, j.steal)
	if j.kind == notSaturated {
		g.streak, g.streakLen = 0, 0
		return
	}
	g.saturated++
	g.kinds[j.kind]++
	g.lateMax = max(g.lateMax, j.late)
	g.streak += wall
	g.streakLen++
	if g.streak >= sustainedFor && g.streakLen >= 2 {
		g.sustained = true
	}
}

// isSaturated is the run's verdict so far: saturated for a sustained
// stretch, or, once the run has ended, in every stretch judged (a run
// too short to sustain anything).
func (g *generatorWatch) isSaturated(ended bool) bool {
	return g.sustained || (ended && g.judged > 0 && g.saturated == g.judged)
}

// utilizationMean is the CPU the run used over its whole length, as a
// fraction of the cores' time.
func (g *generatorWatch) utilizationMean() float64 {
	if g.total.wall <= 0 || !g.total.cpuKnown {
		return 0
	}
	return float64(g.total.cpu) / (float64(g.total.wall) * float64(g.cores))
}

// liveWarning says that hload is saturated, with the figures of the
// stretches that made it so.
func (g *generatorWatch) liveWarning() string {
	return fmt.Sprintf("hload is saturated: %s; from here the figures measure hload as much as the server", g.because())
}

// because says what was seen: in how many of the stretches judged hload
// was saturated and why, and the most CPU it used and waited for.
func (g *generatorWatch) because() string {
	var what []string
	if n := g.kinds[saturatedCPU]; n > 0 {
		what = append(what, fmt.Sprintf("%d used at least %s of it", n, percent(saturatedDemand)))
	}
	if n := g.kinds[saturatedRunQueue]; n > 0 {
		what = append(what, fmt.Sprintf("%d used or waited on the run queue for at least %s of it: something else had the CPU hload wanted", n, percent(saturatedDemand)))
		if g.stealMax >= minStealSaid {
			what[len(what)-1] = fmt.Sprintf("%d used, waited on the run queue for, or lost to the hypervisor at least %s of it: something else had the CPU hload wanted", n, percent(saturatedDemand))
		}
	}
	if n := g.kinds[saturatedContended]; n > 0 {
		what = append(what, fmt.Sprintf("%d waited on the run queue at least as long as it ran, while busy: something else had the CPU hload wanted", n))
	}
	if n := g.kinds[saturatedLate]; n > 0 {
		what = append(what, fmt.Sprintf("%d started open-model iterations more than %.0f ms late (p99, up to %.1f ms) while busy", n, lateStart, g.lateMax))
	}
	plugins := ""
	if g.total.plugins > 0 {
		plugins = fmt.Sprintf(", its plugin processes included (they used %s of its CPU time, %.1f s)",
			percent(float64(g.total.plugins)/float64(max(1, g.total.cpu))), g.total.plugins.Seconds())
	}
	s := fmt.Sprintf("hload may use %s%s; it was saturated in %d of %d intervals (%s); in an interval it used up to %s of it",
		coresText(g.cores), plugins, g.saturated, g.judged, strings.Join(what, "; "), percent(g.utilizationMax))
	if g.total.waitKnown {
		s += fmt.Sprintf(", and its threads waited for a CPU up to %s (several threads may wait at once)", percent(g.waitShareMax))
	}
	if g.stealMax >= minStealSaid {
		s += fmt.Sprintf("; the hypervisor took up to %s of the machine's CPU time (steal) for other guests", percent(g.stealMax))
	}
	return s
}

// figures are the run's generator figures for the summary, once it has
// ended; nil when the run was not watched.
func (g *generatorWatch) figures() *metrics.GeneratorFigures {
	if g == nil {
		return nil
	}
	f := &metrics.GeneratorFigures{
		Saturated:          g.isSaturated(true),
		CPUCoresAvailable:  g.cores,
		CPUSeconds:         round4(g.total.cpu.Seconds()),
		CPUUtilizationMax:  round4(g.utilizationMax),
		CPUUtilizationMean: round4(g.utilizationMean()),
		Intervals:          g.judged,
		SaturatedIntervals: g.saturated,
	}
	if g.total.plugins > 0 {
		secs := round4(g.total.plugins.Seconds())
		f.PluginCPUSeconds = &secs
	}
	if g.total.waitKnown {
		share := round4(g.waitShareMax)
		f.RunQueueWaitShareMax = &share
	}
	if f.Saturated {
		f.Reason = g.because()
	}
	return f
}

// saturationWarning is the summary's warning for a saturated run.
func saturationWarning(f *metrics.GeneratorFigures) string {
	if f == nil || !f.Saturated {
		return ""
	}
	return "hload was saturated, so the figures measured hload as much as the server: " + f.Reason
}

// worstLateness is the highest p99 start lateness among a snapshot's
// series, in ms.
func worstLateness(series []metrics.SeriesFigures) float64 {
	worst := 0.0
	for i := range series {
		if m, ok := series[i].Metrics[metrics.MetricStartLateness]; ok {
			worst = max(worst, m.P99)
		}
	}
	return worst
}

func coresText(n int) string {
	if n == 1 {
		return "1 CPU core"
	}
	return fmt.Sprintf("%d CPU cores", n)
}

func percent(f float64) string { return fmt.Sprintf("%.0f %%", 100*f) }

// round4 keeps four decimals: a fraction to a hundredth of a percent.
func round4(f float64) float64 { return float64(int64(f*1e4+0.5)) / 1e4 }
