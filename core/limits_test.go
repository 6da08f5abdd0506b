package core

import (
	"strings"
	"testing"
	"testing/fstest"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/hload/hload/config"
)

// limitsTarget is a target for the limit tests; nothing is sent to it.
const limitsTarget = `
target "t" {
  base_url = "http://127.0.0.1:1"
}
target "u" {
  base_url           = "http://127.0.0.1:2"
  connections_per_vu = 3
}
`

// TestEstimate: the VUs a test may run at once are each scenario's most,
// added, an open-model scenario counting the max_vus its pool grows to;
// each VU holds a connection per target it uses, connections_per_vu of
// them for an HTTP target that sets it; a segment counts its share.
func TestEstimate(t *testing.T) {
	tests := []struct {
		name      string
		scenarios string
		seg       Segment
		vus       int
		conns     int
	}{
		{"constant-vus", `
scenario "s" {
  target = "t"
  executor = "constant-vus"
  vus      = 250
  duration = "1m"
  request "r" { path = "/" }
}`, Segment{}, 250, 250},
		{"ramping-vus peaks mid-way", `
scenario "s" {
  target = "t"
  executor = "ramping-vus"
  stages   = [{ duration = "1m", target = 700 }, { duration = "1m", target = 10 }]
  request "r" { path = "/" }
}`, Segment{}, 700, 700},
		{"open model: the default pool is the rate for 1 s", `
scenario "s" {
  target = "t"
  executor = "constant-arrival-rate"
  rate     = 5000
  duration = "1m"
  request "r" { path = "/" }
}`, Segment{}, 5000, 5000},
		{"open model: max_vus", `
scenario "s" {
  target = "t"
  executor = "constant-arrival-rate"
  rate     = 5000
  duration = "1m"
  max_vus  = 300
  request "r" { path = "/" }
}`, Segment{}, 300, 300},
		{"two targets, one with 3 connections per VU", `
scenario "s" {
  target = "t"
  executor = "constant-vus"
  vus      = 100
  duration = "1m"
  request "r" { path = "/" }
  request "q" {
    target = "u"
    path   = "/"
  }
}`, Segment{}, 100, 400},
		{"a setup's target counts", `
scenario "s" {
  target = "t"
  executor = "constant-vus"
  vus      = 10
  duration = "1m"
  setup {
    request "login" {
      target = "u"
      path   = "/"
    }
  }
  request "r" { path = "/" }
}`, Segment{}, 10, 40},
		{"scenarios run together", `
scenario "a" {
  target = "t"
  executor = "constant-vus"
  vus      = 100
  duration = "1m"
  request "r" { path = "/" }
}
scenario "b" {
  target = "t"
  executor   = "iterations"
  vus        = 50
  iterations = 3
  request "r" { path = "/" }
}`, Segment{}, 150, 150},
		{"a segment counts its share", `
scenario "s" {
  target = "t"
  executor = "constant-vus"
  vus      = 1000
  duration = "1m"
  request "r" { path = "/" }
}`, Segment{Index: 0, Count: 3}, 333, 333},
		{"closed capacity search: its last step", `
scenario "s" {
  target = "t"
  executor      = "capacity-search"
  model         = "closed"
  step_duration = "10s"
  steps         = [10, 50, 400]
  request "r" { path = "/" }
}`, Segment{}, 400, 400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			test := loadTest(t, limitsTarget+tt.scenarios, nil)
			need := Estimate(test, tt.seg)
			if need.VUs != tt.vus || need.Connections != tt.conns {
				t.Errorf("VUs %d, connections %d; want %d and %d", need.VUs, need.Connections, tt.vus, tt.conns)
			}
			if got, want := need.Of(LimitMemory), uint64(tt.vus)*MemoryPerVU; got != want {
				t.Errorf("memory %d, want %d", got, want)
			}
			if got, want := need.Of(LimitFiles), uint64(tt.conns)+FilesReserve; got != want {
				t.Errorf("files %d, want %d", got, want)
			}
		})
	}
}

// TestSocketsPerVU: AMQP shares one connection per target among all VUs;
// any other protocol holds one per VU, or connections_per_vu.
func TestSocketsPerVU(t *testing.T) {
	tests := []struct {
		target *config.Target
		perVU  int
		one    bool
	}{
		{&config.Target{Protocol: "amqp", Config: cty.EmptyObjectVal}, 0, true},
		{&config.Target{Protocol: "sse", Config: cty.EmptyObjectVal}, 1, false},
		{&config.Target{Protocol: "http", Config: cty.ObjectVal(map[string]cty.Value{"connections_per_vu": cty.NumberIntVal(4)})}, 4, false},
		{&config.Target{Protocol: "http", Config: cty.ObjectVal(map[string]cty.Value{"connections_per_vu": cty.NullVal(cty.Number)})}, 1, false},
		{&config.Target{Protocol: "myplugin", Config: cty.NilVal}, 1, false},
	}
	for _, tt := range tests {
		t.Run(tt.target.Protocol, func(t *testing.T) {
			perVU, one := socketsPerVU(tt.target)
			if perVU != tt.perVU || one != tt.one {
				t.Errorf("got %d, %v; want %d, %v", perVU, one, tt.perVU, tt.one)
			}
		})
	}
}

// TestCheckLimits: a test is refused when its estimate exceeds 80 % of the
// free memory or address space of the tightest limit, or the open files
// left; each refusal names the figure, the limit and where the VUs are set.
func TestCheckLimits(t *testing.T) {
	const vus = 1000 // 20,000 KiB of memory, 96,000 KiB of address space, 1,064 files
	test := loadTest(t, limitsTarget+`
scenario "s" {
  target = "t"
  executor = "constant-vus"
  vus      = 1000
  duration = "1m"
  request "r" { path = "/" }
}`, nil)
	mem := func(free uint64) Limit {
		return Limit{Kind: LimitMemory, Name: "MemAvailable in /proc/meminfo", Max: free}
	}
	const need = vus * MemoryPerVU
	tests := []struct {
		name    string
		limits  []Limit
		summary string   // of the one error; "" for none
		detail  []string // in its detail
	}{
		{"no limits known", nil, "", nil},
		{"memory: the estimate is 80 % of what is free", []Limit{mem(need * 5 / 4)}, "", nil},
		{"memory: just above 80 %", []Limit{mem(need*5/4 - 8)}, "Not enough memory for this test",
			[]string{"1000 VUs at once", "about 20 MiB of memory", "24 MiB free (MemAvailable in /proc/meminfo)", "at most 80%"}},
		{"memory: the tightest of two limits decides", []Limit{
			mem(100 * need),
			{Kind: LimitMemory, Name: "the memory limit of cgroup /sys/fs/cgroup/box/memory.max", Max: 2 * need, Used: need},
		}, "Not enough memory for this test", []string{"20 MiB free (the memory limit of cgroup /sys/fs/cgroup/box/memory.max)"}},
		{"address space", []Limit{{Kind: LimitAddressSpace, Name: "the address-space limit (ulimit -v, RLIMIT_AS)", Max: 4 << 30, Used: 4<<30 - 100<<20}},
			"Not enough address space for this test", []string{"about 94 MiB", "RLIMIT_AS) is 4 GiB, of which hload already takes 3.9 GiB"}},
		{"address space fits", []Limit{{Kind: LimitAddressSpace, Name: "RLIMIT_AS", Max: 4 << 30, Used: 1 << 30}}, "", nil},
		{"open files: 1,064 fit in 1,064", []Limit{{Kind: LimitFiles, Name: "the open-file limit", Max: 1074, Used: 10}}, "", nil},
		{"open files: one short", []Limit{{Kind: LimitFiles, Name: "the open-file limit (ulimit -n, RLIMIT_NOFILE)", Max: 1073, Used: 10}},
			"Too many connections for the open-file limit", []string{"1000 connections", "1064 open files", "RLIMIT_NOFILE) is 1073, of which 10 are open", "ulimit -n"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			diags := CheckLimits(test, Segment{}, Machine{Limits: tt.limits})
			if tt.summary == "" {
				if len(diags) != 0 {
					t.Fatalf("refused: %s", diags.Error())
				}
				return
			}
			if len(diags) != 1 || diags[0].Summary != tt.summary {
				t.Fatalf("got %s, want one error %q", diags.Error(), tt.summary)
			}
			d := diags[0]
			if d.Subject == nil || d.Subject.Start.Line != 13 || !strings.Contains(d.Detail, "--segment i/n") {
				t.Errorf("subject %v, detail %q: want line 13, the vus, and --segment", d.Subject, d.Detail)
			}
			for _, want := range tt.detail {
				if !strings.Contains(d.Detail, want) {
					t.Errorf("detail %q\nwant it to contain %q", d.Detail, want)
				}
			}
		})
	}
}

// TestReadMachine reads the limits from a /proc and /sys of cgroup v2 and
// of cgroup v1, with the process limits as getrlimit gives them.
func TestReadMachine(t *testing.T) {
	proc := fstest.MapFS{
		"proc/meminfo":     {Data: []byte("MemTotal:       24683784 kB\nMemFree:        22021988 kB\nMemAvailable:   1000 kB\n")},
		"proc/self/status": {Data: []byte("Name:\thload\nVmPeak:\t 3000 kB\nVmSize:\t 2000 kB\nVmData:\t 500 kB\n")},
		"proc/self/fd/0":   {},
		"proc/self/fd/1":   {},
		"proc/self/fd/2":   {},
		"proc/self/cgroup": {Data: []byte("0::/box/job\n")},
		// The job sets no limit; its parent does, and has cache to give back.
		"sys/fs/cgroup/box/job/memory.max":     {Data: []byte("max\n")},
		"sys/fs/cgroup/box/job/memory.current": {Data: []byte("4096\n")},
		"sys/fs/cgroup/box/memory.max":         {Data: []byte("1048576\n")},
		"sys/fs/cgroup/box/memory.current":     {Data: []byte("524288\n")},
		"sys/fs/cgroup/box/memory.stat":        {Data: []byte("anon 100\ninactive_file 262144\nactive_file 5\n")},
	}
	rlimit := func(r rlimitResource) (uint64, bool) {
		switch r {
		case rlimitAS:
			return 1 << 32, true
		case rlimitNofile:
			return 1024, true
		}
		return 0, false
	}
	got := readMachine(proc, rlimit).Limits
	want := []Limit{
		{Kind: LimitMemory, Name: "MemAvailable in /proc/meminfo", Max: 1000 << 10},
		{Kind: LimitMemory, Name: "the memory limit of cgroup /sys/fs/cgroup/box/memory.max", Max: 1048576, Used: 524288 - 262144},
		{Kind: LimitAddressSpace, Name: "the address-space limit (ulimit -v, RLIMIT_AS)", Max: 1 << 32, Used: 2000 << 10},
		{Kind: LimitFiles, Name: "the open-file limit (ulimit -n, RLIMIT_NOFILE)", Max: 1024, Used: 3},
	}
	if len(got) != len(want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("limit %d: got %+v\nwant %+v", i, got[i], want[i])
		}
	}

	// cgroup v1, in a container whose cgroup path is not under its /sys:
	// the root's files are its own; about 2^63 means no limit.
	v1 := fstest.MapFS{
		"proc/self/cgroup":                           {Data: []byte("5:cpu,cpuacct:/\n4:memory:/docker/abc\n")},
		"sys/fs/cgroup/memory/memory.limit_in_bytes": {Data: []byte("2097152\n")},
		"sys/fs/cgroup/memory/memory.usage_in_bytes": {Data: []byte("1048576\n")},
		"sys/fs/cgroup/memory/memory.stat":           {Data: []byte("cache 9\ntotal_inactive_file 48576\n")},
	}
	none := func(rlimitResource) (uint64, bool) { return 0, false }
	got = readMachine(v1, none).Limits
	if len(got) != 1 || got[0].Max != 2097152 || got[0].Used != 1000000 || !strings.Contains(got[0].Name, "memory.limit_in_bytes") {
		t.Errorf("cgroup v1: got %+v", got)
	}
	v1["sys/fs/cgroup/memory/memory.limit_in_bytes"] = &fstest.MapFile{Data: []byte("9223372036854771712\n")}
	if got = readMachine(v1, none).Limits; len(got) != 0 {
		t.Errorf("cgroup v1 without a limit: got %+v", got)
	}
}

// TestFitDefaults: at 20,000/s the default max_vus is 20,000, one
// connection each; with 10,000 open files free it is lowered to the most
// that fit (10,000 less hload's reserve), with a warning on the scenario,
// and the test then passes CheckLimits. A max_vus the file sets is left
// for CheckLimits to refuse, and a default that fits is left alone.
func TestFitDefaults(t *testing.T) {
	files := Machine{Limits: []Limit{{Kind: LimitFiles, Name: "the open-file limit", Max: 10000}}}
	open := func(pool string) *config.Test {
		return loadTest(t, limitsTarget+`
scenario "s" {
  target   = "t"
  executor = "constant-arrival-rate"
  rate     = 20000
  duration = "1m"
`+pool+`
  request "r" { path = "/" }
}`, nil)
	}

	test := open("")
	diags := FitDefaults(test, Segment{}, files)
	e := test.Scenarios[0].Executor.(config.ConstantArrivalRate)
	if len(diags) != 1 || diags[0].Severity != hcl.DiagWarning || !strings.Contains(diags[0].Detail, "default (20000") {
		t.Fatalf("diagnostics %v, want one warning about the default of 20000", diags)
	}
	if fit := 10000 - FilesReserve; e.MaxVUs > fit || e.MaxVUs < fit-20 || e.PreAllocatedVUs != 200 {
		t.Errorf("max_vus %d, pre_allocated_vus %d; want just under %d, and 200", e.MaxVUs, e.PreAllocatedVUs, fit)
	}
	if d := CheckLimits(test, Segment{}, files); len(d) != 0 {
		t.Errorf("the lowered pool is refused: %s", d.Error())
	}

	test = open("  max_vus = 20000")
	if diags := FitDefaults(test, Segment{}, files); len(diags) != 0 || test.Scenarios[0].Executor.(config.ConstantArrivalRate).MaxVUs != 20000 {
		t.Errorf("an explicit max_vus was changed: %v", diags)
	}
	if d := CheckLimits(test, Segment{}, files); len(d) != 1 {
		t.Errorf("an explicit max_vus over the limit: %v, want one error", d)
	}

	test = open("")
	if diags := FitDefaults(test, Segment{}, Machine{}); len(diags) != 0 || test.Scenarios[0].Executor.(config.ConstantArrivalRate).MaxVUs != 20000 {
		t.Errorf("a default that fits was changed: %v", diags)
	}

	// 100 open files do not hold even the 200 pre-allocated VUs: no
	// warning of a lowering, the default stands for CheckLimits to refuse.
	test = open("")
	few := Machine{Limits: []Limit{{Kind: LimitFiles, Name: "the open-file limit", Max: 100}}}
	if diags := FitDefaults(test, Segment{}, few); len(diags) != 0 || test.Scenarios[0].Executor.(config.ConstantArrivalRate).MaxVUs != 20000 {
		t.Errorf("a pool that cannot fit was lowered: %v", diags)
	}
	if d := CheckLimits(test, Segment{}, few); len(d) != 1 {
		t.Errorf("a pool that cannot fit: %v, want one error", d)
	}
}
