package core

import (
	"fmt"
	"math/big"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/hload/hload/config"
)

// What a test needs at its peak is estimated from its plan and compared
// with what the machine allows before any load is sent: validate, plan and
// apply all call CheckLimits, so that a test too large for the machine is
// a config error (exit 2), never a Go runtime that runs out of memory
// half-way through the load.

// The estimates, measured on hload's HTTP protocol with every VU waiting on
// a response the server holds (docs/reference.md#limits has the figures).
const (
	// MemoryPerVU is the resident memory of a VU: 15 KB measured from
	// 1,000 to 15,000 VUs, 17.8 KB by bench's idle-vus case.
	MemoryPerVU = 20 << 10
	// AddressPerVU is the address space of a VU. Go reserves heap arenas
	// and stacks ahead of their use, so a VU's share of the process's size
	// is larger than its resident memory: 40 KB of data and 57-78 KB of
	// size per VU measured from 1,000 to 15,000 VUs.
	AddressPerVU = 96 << 10
	// FilesReserve is the open files hload keeps for itself beside the
	// VUs' connections: its standard streams, sink and data files, plugin
	// sockets.
	FilesReserve = 64
)

// memoryShare is the most of a limit's free memory or address space a
// test may be estimated to need: the rest is left for hload's figures,
// its sinks and the estimate's error.
const memoryShare = 0.8

// LimitKind is what a Limit bounds.
type LimitKind int

// The kinds of limits.
const (
	// LimitMemory bounds resident memory, in bytes.
	LimitMemory LimitKind = iota
	// LimitAddressSpace bounds the process's size, in bytes.
	LimitAddressSpace
	// LimitFiles bounds the files, sockets included, open at once.
	LimitFiles
)

// Limit is one bound the machine sets on hload.
type Limit struct {
	Kind LimitKind
	// Name is how a user knows the limit, such as "MemAvailable in
	// /proc/meminfo" or "ulimit -n (RLIMIT_NOFILE)".
	Name string
	Max  uint64 // the bound
	Used uint64 // what is taken already: by hload itself, or in its cgroup
}

// Free is what is left of the limit.
func (l Limit) Free() uint64 {
	if l.Used >= l.Max {
		return 0
	}
	return l.Max - l.Used
}

// Machine is the limits of the machine a test is checked on; ReadMachine
// reads them. A limit that is not set is not in it.
type Machine struct {
	Limits []Limit
}

// Need is what a test is estimated to need at its peak on one machine.
type Need struct {
	// VUs are the most VUs at once: each scenario's most, added, since
	// scenarios run together. An open-model scenario counts its max_vus,
	// which its pool grows to when the target slows down.
	VUs int
	// Connections are the sockets the VUs may hold open at once.
	Connections int
	// Scenarios are the scenarios' own figures, for messages.
	Scenarios []ScenarioNeed
}

// ScenarioNeed is one scenario's share of a Need.
type ScenarioNeed struct {
	Name        string
	VUs         int
	Connections int
	// Range is the attribute that sets the scenario's VUs.
	Range hcl.Range
}

// Of returns what n needs of a limit of kind k: bytes, or open files.
func (n Need) Of(k LimitKind) uint64 {
	switch k {
	case LimitMemory:
		return uint64(n.VUs) * MemoryPerVU
	case LimitAddressSpace:
		return uint64(n.VUs) * AddressPerVU
	}
	return uint64(n.Connections) + FilesReserve
}

// Estimate returns what test needs at its peak when run as segment seg.
func Estimate(test *config.Test, seg Segment) Need {
	var n Need
	targets := map[string]*config.Target{}
	for _, t := range test.Targets {
		targets[t.Name] = t
	}
	shared := map[string]bool{} // targets with one connection for all VUs
	for i, p := range Plan(test, seg) {
		s := test.Scenarios[i]
		sn := ScenarioNeed{Name: s.Name, VUs: p.MaxVUs, Range: s.VUsRange}
		if sn.Range.Filename == "" {
			sn.Range = s.DeclRange
		}
		for _, name := range planTargets(p) {
			t := targets[name]
			if t == nil {
				continue
			}
			perVU, one := socketsPerVU(t)
			sn.Connections += p.MaxVUs * perVU
			if one {
				shared[name] = true
			}
		}
		n.VUs += sn.VUs
		n.Connections += sn.Connections
		n.Scenarios = append(n.Scenarios, sn)
	}
	n.Connections += len(shared)
	return n
}

// planTargets returns the targets a scenario's iterations and setup use.
func planTargets(p ScenarioPlan) []string {
	var out []string
	flows := p.Mix
	if p.Setup != nil {
		flows = append(slices.Clone(flows), *p.Setup)
	}
	for _, f := range flows {
		for _, t := range f.Targets() {
			if !slices.Contains(out, t) {
				out = append(out, t)
			}
		}
	}
	return out
}

// socketsPerVU returns how many sockets each VU may hold open to t, or
// one, set, when all VUs share a single one. An HTTP VU keeps
// connections_per_vu keep-alive connections (docs/http.md), an SSE VU its
// stream, and a plugin's VU, by the plugins' convention, one connection;
// AMQP opens one connection per target, each call borrowing a channel of
// it (docs/amqp.md).
func socketsPerVU(t *config.Target) (perVU int, one bool) {
	if t.Protocol == "amqp" {
		return 0, true
	}
	c := t.Config
	if c.IsKnown() && !c.IsNull() && c.Type().IsObjectType() && c.Type().HasAttribute("connections_per_vu") {
		if v := c.GetAttr("connections_per_vu"); v.IsKnown() && !v.IsNull() && v.Type() == cty.Number {
			if n, acc := v.AsBigFloat().Int64(); acc == big.Exact && n >= 1 {
				return int(n), false
			}
		}
	}
	return 1, false
}

// CheckLimits returns an error for each kind of limit of m that the test,
// run as segment seg, is estimated to exceed: its VUs' memory or address
// space beyond memoryShare of what is free, or its connections beyond the
// open files left. Each names the figure, the limit and what to change,
// on the attribute that sets the most VUs. It is empty when the test fits.
func CheckLimits(test *config.Test, seg Segment, m Machine) hcl.Diagnostics {
	need := Estimate(test, seg)
	if need.VUs == 0 {
		return nil
	}
	var diags hcl.Diagnostics
	for _, kind := range []LimitKind{LimitMemory, LimitAddressSpace, LimitFiles} {
		if l, over := tightest(m, kind, need.Of(kind)); over {
			diags = append(diags, limitDiag(need, l, seg))
		}
	}
	return diags
}

// tightest returns the limit of kind k with the least room, and whether
// want exceeds what the test may take of it.
func tightest(m Machine, k LimitKind, want uint64) (Limit, bool) {
	l, ok := m.Tightest(k)
	return l, ok && want > allowed(l)
}

// Tightest returns the limit of kind k with the least room left, or false
// when m sets none.
func (m Machine) Tightest(k LimitKind) (Limit, bool) {
	var best Limit
	found := false
	for _, l := range m.Limits {
		if l.Kind == k && (!found || l.Free() < best.Free()) {
			best, found = l, true
		}
	}
	return best, found
}

// allowed is how much of l a test may be estimated to need.
func allowed(l Limit) uint64 {
	if l.Kind == LimitFiles {
		return l.Free()
	}
	return uint64(float64(l.Free()) * memoryShare)
}

// limitDiag says that need exceeds l.
func limitDiag(need Need, l Limit, seg Segment) *hcl.Diagnostic {
	largest := need.Scenarios[0]
	for _, s := range need.Scenarios {
		if s.VUs > largest.VUs {
			largest = s
		}
	}
	vus := fmt.Sprintf("This test may run %d VUs at once (%s)", need.VUs, scenarioVUs(need))
	if seg.Count > 1 {
		vus = fmt.Sprintf("Its share %s may run %d VUs at once (%s)", seg, need.VUs, scenarioVUs(need))
	}
	fewer := "Lower the VUs (vus or stages; for an arrival rate, max_vus, which its pool grows to when the target slows down), " +
		"or spread the test over several machines with --segment i/n, each running its share of the VUs."
	d := &hcl.Diagnostic{Severity: hcl.DiagError, Subject: largest.Range.Ptr()}
	switch l.Kind {
	case LimitMemory:
		d.Summary = "Not enough memory for this test"
		d.Detail = fmt.Sprintf("%s. At about %s each, they need about %s of memory, and this machine has %s free (%s); "+
			"hload takes at most %d%% of it. %s See Limits in docs/reference.md.",
			vus, FormatBytes(MemoryPerVU), FormatBytes(need.Of(l.Kind)), FormatBytes(l.Free()), l.Name, int(memoryShare*100), fewer)
	case LimitAddressSpace:
		d.Summary = "Not enough address space for this test"
		d.Detail = fmt.Sprintf("%s. At about %s of address space each, they need about %s, and %s is %s, of which hload already takes %s; "+
			"hload takes at most %d%% of the rest. Raise the limit, or: %s See Limits in docs/reference.md.",
			vus, FormatBytes(AddressPerVU), FormatBytes(need.Of(l.Kind)), l.Name, FormatBytes(l.Max), FormatBytes(l.Used),
			int(memoryShare*100), lowerFirst(fewer))
	default:
		d.Summary = "Too many connections for the open-file limit"
		d.Detail = fmt.Sprintf("%s, which may hold %d connections open; with %d files for hload itself that is %d open files, and %s is %d, of which %d are open. "+
			"Raise the limit (ulimit -n, LimitNOFILE= in a systemd unit, --ulimit nofile= for a container), or: %s See Limits in docs/reference.md.",
			vus, need.Connections, FilesReserve, need.Of(l.Kind), l.Name, l.Max, l.Used, lowerFirst(fewer))
	}
	return d
}

// scenarioVUs names the scenario, or lists each scenario's most VUs, such
// as `scenario "browse": 100, scenario "buy": 20; scenarios run together`.
func scenarioVUs(need Need) string {
	if len(need.Scenarios) == 1 {
		return fmt.Sprintf("scenario %q", need.Scenarios[0].Name)
	}
	parts := make([]string, len(need.Scenarios))
	for i, s := range need.Scenarios {
		parts[i] = fmt.Sprintf("scenario %q: %d", s.Name, s.VUs)
	}
	return strings.Join(parts, ", ") + "; scenarios run together"
}

// lowerFirst lower-cases the first letter of s.
func lowerFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToLower(s[:1]) + s[1:]
}

// FormatBytes formats a number of bytes in binary units, such as "20 KiB" or
// "2.3 GiB".
func FormatBytes(b uint64) string {
	units := []string{"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}
	v, i := float64(b), 0
	for v >= 1024 && i < len(units)-1 {
		v, i = v/1024, i+1
	}
	switch {
	case i == 0:
		return fmt.Sprintf("%d bytes", b)
	case v < 10 && v != float64(int64(v)):
		return fmt.Sprintf("%.1f %s", v, units[i])
	}
	return fmt.Sprintf("%.0f %s", v, units[i])
}

// FitDefaults lowers the max_vus that open-model scenarios did not set,
// when the test would not fit m with them: a default is hload's guess, and
// a guess must not refuse a test that fits with a smaller pool. Every such
// scenario keeps the same share of its default, the largest that fits,
// and never less than its pre_allocated_vus. An explicit max_vus is left
// as set, for CheckLimits to judge. It returns a warning per lowered pool.
func FitDefaults(test *config.Test, seg Segment, m Machine) hcl.Diagnostics {
	defaults := map[int]int{} // scenario index: its default max_vus
	for i, s := range test.Scenarios {
		if n, ok := defaultMaxVUs(s.Executor); ok {
			defaults[i] = n
		}
	}
	if len(defaults) == 0 || len(CheckLimits(test, seg, m)) == 0 {
		return nil
	}
	scale := func(share float64) {
		for i, n := range defaults {
			s := test.Scenarios[i]
			s.Executor = withMaxVUs(s.Executor, int(float64(n)*share))
		}
	}
	// The largest share of the defaults that fits, to a thousandth.
	lo, hi := 0.0, 1.0
	for hi-lo > 0.001 {
		mid := (lo + hi) / 2
		scale(mid)
		if len(CheckLimits(test, seg, m)) == 0 {
			lo = mid
		} else {
			hi = mid
		}
	}
	scale(lo)
	if len(CheckLimits(test, seg, m)) != 0 {
		// Not even the pre-allocated VUs fit: the defaults stand, and
		// CheckLimits says why, with no warning of a lowering that did
		// not help.
		scale(1)
		return nil
	}
	var diags hcl.Diagnostics
	for i, s := range test.Scenarios {
		n, ok := defaults[i]
		if got, _ := defaultMaxVUs(s.Executor); ok && got < n {
			r := s.DeclRange
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagWarning, Subject: &r,
				Summary: "max_vus lowered to fit this machine",
				Detail: fmt.Sprintf("Scenario %q sets no max_vus, and its default (%d: the peak rate x 1 s) does not fit this machine's limits; "+
					"its pool grows to at most %d VUs instead. Set max_vus to choose.", s.Name, n, got)})
		}
	}
	return diags
}

// defaultMaxVUs returns an open-model executor's max_vus when it is the
// default.
func defaultMaxVUs(e config.Executor) (int, bool) {
	switch e := e.(type) {
	case config.ConstantArrivalRate:
		return e.MaxVUs, e.MaxVUsDefault
	case config.RampingArrivalRate:
		return e.MaxVUs, e.MaxVUsDefault
	case config.CapacitySearch:
		return e.MaxVUs, e.MaxVUsDefault && e.Model != config.ModelClosed
	}
	return 0, false
}

// withMaxVUs returns e with max_vus n, never below its pre_allocated_vus.
func withMaxVUs(e config.Executor, n int) config.Executor {
	switch e := e.(type) {
	case config.ConstantArrivalRate:
		e.MaxVUs = max(n, e.PreAllocatedVUs)
		return e
	case config.RampingArrivalRate:
		e.MaxVUs = max(n, e.PreAllocatedVUs)
		return e
	case config.CapacitySearch:
		e.MaxVUs = max(n, e.PreAllocatedVUs)
		return e
	}
	return e
}
