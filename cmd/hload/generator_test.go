package main

import (
	"bytes"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hload/hload/metrics"
)

const generatorClosed = `
variable "base_url" {}
target "t" {
  base_url = var.base_url
}
scenario "closed" {
  executor = "constant-vus"
  vus      = 8
  duration = "3s"
  request "r" {
    path = "/r"
  }
}
`

const generatorOpen = `
variable "base_url" {}
target "t" {
  base_url = var.base_url
}
scenario "open" {
  executor          = "constant-arrival-rate"
  rate              = 50
  duration          = "3s"
  pre_allocated_vus = 4
  request "r" {
    path = "/r"
  }
}
`

// TestGeneratorSaturation: hload pinned to one core that a busy loop also
// spins on is saturated, says so live once and in its summary, and its
// console summary says the figures measured hload; pinned to the same
// core without the busy loop, at a light open-model rate, it is not. The
// CPU time hload reports is checked against the kernel's count of the
// process, which the test reads when the process ends.
func TestGeneratorSaturation(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the run-queue wait and taskset are Linux's")
	}
	if testing.Short() {
		// In the race pass, other packages' tests run beside it on the
		// pinned core: a CI run there gave hload 10 % of the core and
		// the busy loop 61 %, and the saturated intervals were not in a
		// row. The full pass runs one package at a time.
		t.Skip("timing-sensitive: scripts/test.sh runs it in the full pass, without -short and -race")
	}
	taskset, core := tasksetLastCPU(t)
	srv := newPathCounter(t, nil)

	t.Run("pinned to a busy core", func(t *testing.T) {
		busy := exec.Command(taskset, "-c", core, "sh", "-c", "while :; do :; done")
		if err := busy.Start(); err != nil {
			t.Fatal(err)
		}
		busyStart := time.Now()
		busyDone := false
		stopBusy := func() time.Duration {
			if busyDone {
				return 0
			}
			busyDone = true
			busy.Process.Kill()
			busy.Wait()
			return busy.ProcessState.UserTime() + busy.ProcessState.SystemTime()
		}
		t.Cleanup(func() { stopBusy() })

		before := srv.count("/r")
		r, hloadCPU := pinnedHload(t, taskset, core, generatorClosed, srv.URL)
		busyCPU := stopBusy()
		busyShare := busyCPU.Seconds() / time.Since(busyStart).Seconds()
		if r.code != 0 {
			t.Fatalf("exit %d, want 0: a saturated generator does not fail the run\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
		}
		sum := exportedSummary(t, filepath.Join(r.dir, "summary.json"))
		g := sum.Generator
		if g == nil {
			t.Fatal("the summary has no generator figures")
		}
		t.Logf("%s; hload CPU by the kernel %v; busy loop had %.0f %% of its core\nlive warnings:\n%s",
			describeGenerator(g), hloadCPU, 100*busyShare, grepLines(r.stdout, "WARNING"))
		if busyShare < 0.2 {
			t.Fatalf("the busy loop got %.0f %% of core %s: the core was not busy, the test proves nothing", 100*busyShare, core)
		}
		if !g.Saturated || g.SaturatedIntervals == 0 || g.Reason == "" {
			t.Errorf("pinned to a busy core, %s: want saturated, with a reason", describeGenerator(g))
		}
		checkGeneratorFigures(t, g, hloadCPU)
		if g.RunQueueWaitShareMax == nil || *g.RunQueueWaitShareMax < 0.2 {
			t.Errorf("run-queue wait share max (%s) next to a busy loop that took %.0f %% of the core, want >= 0.2",
				describeGenerator(g), 100*busyShare)
		}
		if n := strings.Count(r.stdout, "WARNING: hload is saturated"); n != 1 {
			t.Errorf("said live %d times, want once:\n%s", n, r.stdout)
		}
		if !strings.Contains(r.stdout, "the figures measured hload as much as the server") {
			t.Errorf("the console summary does not say plainly that the figures measured hload:\n%s", r.stdout)
		}
		if got, served := sum.Scenarios["closed"].Requests["r"].Count, int64(srv.count("/r")-before); got != served {
			t.Errorf("summary counts %d calls, the server %d", got, served)
		}
	})

	t.Run("headroom", func(t *testing.T) {
		before := srv.count("/r")
		r, hloadCPU := pinnedHload(t, taskset, core, generatorOpen, srv.URL)
		if r.code != 0 {
			t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
		}
		sum := exportedSummary(t, filepath.Join(r.dir, "summary.json"))
		g := sum.Generator
		if g == nil {
			t.Fatal("the summary has no generator figures")
		}
		t.Logf("%s; hload CPU by the kernel %v", describeGenerator(g), hloadCPU)
		if g.Saturated || g.Reason != "" {
			t.Errorf("a light open-model run is saturated: %s", describeGenerator(g))
		}
		checkGeneratorFigures(t, g, hloadCPU)
		// On a machine busy with other work, a lone interval may be found
		// saturated (seen in CI: starts late while hload waited 76 % of it
		// on the run queue); the run is not, and its figures are shown.
		if !regexp.MustCompile(`saturated in \d+ of \d+`).MatchString(r.stdout) {
			t.Errorf("the console summary does not show the generator's figures:\n%s", r.stdout)
		}
		if strings.Contains(r.stdout, "SATURATED") || strings.Contains(r.stdout, "is saturated") ||
			strings.Contains(r.stdout, "was saturated") || strings.Contains(r.stdout, "measured hload") {
			t.Errorf("a run with headroom speaks of saturation:\n%s", r.stdout)
		}
		if got, served := sum.Scenarios["open"].Requests["r"].Count, int64(srv.count("/r")-before); got != served || got == 0 {
			t.Errorf("summary counts %d calls, the server %d", got, served)
		}
	})
}

// TestGeneratorCountsPluginProcesses: with the target isolated in a
// plugin process, hload and the plugin are one generator. Both pinned to
// one core and sending flat out, they saturate it together: the summary
// says so, names the plugin processes, and its CPU time is theirs
// together, as the kernel counted the whole process tree when it ended.
func TestGeneratorCountsPluginProcesses(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("hload reads its plugin processes' CPU from Linux's /proc")
	}
	taskset, core := tasksetLastCPU(t)
	srv := newPathCounter(t, nil)
	src := strings.Replace(generatorClosed, "base_url = var.base_url", "base_url = var.base_url\n  isolate  = true", 1)
	before := srv.count("/r")
	// The kernel's count covers the plugin process too: hload waits for
	// it before it exits, and wait4 adds a child's reaped children.
	r, treeCPU := pinnedHload(t, taskset, core, src, srv.URL)
	if r.code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	sum := exportedSummary(t, filepath.Join(r.dir, "summary.json"))
	g := sum.Generator
	if g == nil {
		t.Fatal("the summary has no generator figures")
	}
	plugin := 0.0
	if g.PluginCPUSeconds != nil {
		plugin = *g.PluginCPUSeconds
	}
	t.Logf("%s; plugin %.3f CPU-s; hload and its plugin by the kernel %v", describeGenerator(g), plugin, treeCPU)
	if plugin < 0.2*g.CPUSeconds {
		t.Errorf("plugin_cpu_seconds %.3f of cpu_seconds %.3f: the plugin process, which sends every request, is not counted", plugin, g.CPUSeconds)
	}
	// Without the plugin's share, cpu_seconds would be hload's alone,
	// about half of the tree's.
	if g.CPUSeconds < 0.7*treeCPU.Seconds() || g.CPUSeconds > treeCPU.Seconds()*1.01+0.005 {
		t.Errorf("cpu_seconds %.3f, the kernel counted %.3f s for hload and its plugin", g.CPUSeconds, treeCPU.Seconds())
	}
	if !g.Saturated || !strings.Contains(g.Reason, "its plugin processes included") {
		t.Errorf("hload and its plugin sending flat out on one core: want saturated, naming the plugin processes; %s", describeGenerator(g))
	}
	if got, served := sum.Scenarios["closed"].Requests["r"].Count, int64(srv.count("/r")-before); got != served || got == 0 {
		t.Errorf("summary counts %d calls, the server %d", got, served)
	}
}

// tasksetLastCPU returns taskset's path and the last CPU this test may
// run on, to pin hload to. taskset is util-linux's, on every Linux the
// tests run on: its absence is a broken machine, not a reason to skip.
func tasksetLastCPU(t *testing.T) (taskset, core string) {
	t.Helper()
	taskset, err := exec.LookPath("taskset")
	if err != nil {
		t.Fatalf("taskset (util-linux) is not on PATH: %v", err)
	}
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		t.Fatal(err)
	}
	cpu := -1
	for i := range 1024 {
		if set.IsSet(i) {
			cpu = i
		}
	}
	return taskset, strconv.Itoa(cpu)
}

// checkGeneratorFigures holds the generator figures against each other and
// against the kernel's count of the process's CPU time: the run is most of
// the process's life, never more.
func checkGeneratorFigures(t *testing.T, g *metrics.GeneratorFigures, kernelCPU time.Duration) {
	t.Helper()
	if g.CPUCoresAvailable != 1 {
		t.Errorf("pinned to one core, cpu_cores_available %d", g.CPUCoresAvailable)
	}
	if g.CPUSeconds > kernelCPU.Seconds()*1.01+0.005 || g.CPUSeconds < kernelCPU.Seconds()*0.5 {
		t.Errorf("cpu_seconds %.3f, the kernel counted %.3f s for the whole process", g.CPUSeconds, kernelCPU.Seconds())
	}
	if g.CPUUtilizationMean > g.CPUUtilizationMax+0.05 || g.CPUUtilizationMax > 1.2 || g.Intervals < 2 ||
		g.SaturatedIntervals > g.Intervals {
		t.Errorf("figures do not add up: %s", describeGenerator(g))
	}
}

// pinnedResult is a finished hload run in its directory.
type pinnedResult struct {
	result
	dir string
}

// pinnedHload runs hload apply on src under taskset on core, bounded in
// time, and returns what it printed and the CPU time the kernel counted
// for the process.
func pinnedHload(t *testing.T, taskset, core, src, url string) (pinnedResult, time.Duration) {
	t.Helper()
	dir := t.TempDir()
	writeFile(t, dir, "test.hcl", src)
	cmd := exec.Command(taskset, "-c", core, hloadBin, "apply", "test.hcl", "--var", "base_url="+url,
		"--summary-export", "summary.json", "--no-color")
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	timer := time.AfterFunc(time.Minute, func() { cmd.Process.Kill() })
	defer timer.Stop()
	r := wait(t, cmd, &stdout, &stderr)
	return pinnedResult{result: r, dir: dir}, cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
}

func grepLines(s, word string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, word) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// describeGenerator prints the figures for a test's log.
func describeGenerator(g *metrics.GeneratorFigures) string {
	wait := "not measured"
	if g.RunQueueWaitShareMax != nil {
		wait = strconv.FormatFloat(*g.RunQueueWaitShareMax, 'f', 4, 64)
	}
	return fmt.Sprintf("generator: saturated %v in %d of %d intervals, %d cores, %.3f CPU-s, utilization mean %.4f max %.4f, run-queue wait max %s; reason %q",
		g.Saturated, g.SaturatedIntervals, g.Intervals, g.CPUCoresAvailable, g.CPUSeconds, g.CPUUtilizationMean, g.CPUUtilizationMax, wait, g.Reason)
}
