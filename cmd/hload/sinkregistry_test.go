package main

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/zclconf/go-cty/cty"

	"github.com/hload/hload/core"
	"github.com/hload/hload/metrics"
	"github.com/hload/hload/sinks"
)

// probeTest runs 2 VUs for 1.5 s, so the run has an interval of 1 s and a
// shorter final one, into a `sink "probe"` block on line 13.
const probeTest = `variable "base_url" {}
target "t" {
  base_url = var.base_url
}
scenario "s" {
  executor = "constant-vus"
  vus      = 2
  duration = "1500ms"
  request "r" {
    path = "/r"
  }
}
sink "probe" {
  label = "seen"
}
`

// probe is a sink that keeps what the run hands it.
type probe struct {
	label string

	mu        sync.Mutex
	started   bool
	snapshots []metrics.Snapshot
	summaries []metrics.Summary
}

var _ core.Sink = (*probe)(nil)

func (p *probe) Start(context.Context, metrics.RunInfo) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.started = true
	return nil
}

func (p *probe) Write(s metrics.Snapshot) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.snapshots = append(p.snapshots, s)
	return nil
}

func (p *probe) Close(sum metrics.Summary) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.summaries = append(p.summaries, sum)
	return nil
}

// probeType is the sink type "probe": each sink it builds is appended to
// *made.
func probeType(made *[]*probe) sinks.Type {
	return sinks.Type{
		Name: "probe",
		Spec: hcldec.ObjectSpec{"label": &hcldec.AttrSpec{Name: "label", Type: cty.String, Required: true}},
		New: func(b sinks.Block) (core.Sink, error) {
			p := &probe{label: b.Config.GetAttr("label").AsString()}
			*made = append(*made, p)
			return p, nil
		},
	}
}

// TestSinkAddedThroughRegistry: a sink type added to the registry, and
// nowhere else, is one that validate, plan and apply know; apply hands it
// every interval and the summary, whose count is the server's own.
func TestSinkAddedThroughRegistry(t *testing.T) {
	srv, served := okServer(t)
	file := writeFile(t, t.TempDir(), "test.hcl", probeTest)
	var made []*probe
	withProbe := sinkTypes().With(probeType(&made))

	for _, tc := range []struct {
		name  string
		types *sinks.Registry
		cmd   string
		code  int
		want  []string // in stderr
	}{
		{name: "validate knows it", types: withProbe, cmd: "validate", code: exitOK},
		{name: "plan knows it", types: withProbe, cmd: "plan", code: exitOK},
		{name: "the built-in types do not", types: sinkTypes(), cmd: "validate", code: exitUsage,
			want: []string{`Unknown sink type "probe"`, `Known sink types: "csv", "html" and "influxdb".`, "test.hcl:13:6; nothing was run"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := runWith(tc.types, []string{tc.cmd, "--var", "base_url=" + srv.URL, file}, &stdout, &stderr)
			if code != tc.code {
				t.Errorf("exit %d, want %d; stderr:\n%s", code, tc.code, stderr.String())
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr.String(), w) {
					t.Errorf("stderr does not say %q:\n%s", w, stderr.String())
				}
			}
		})
	}
	if n := served.Load(); n != 0 {
		t.Fatalf("validate and plan sent %d calls", n)
	}

	made = nil
	var stdout, stderr bytes.Buffer
	if code := runWith(withProbe, []string{"apply", "--quiet", "--var", "base_url=" + srv.URL, file}, &stdout, &stderr); code != exitOK {
		t.Fatalf("apply: exit %d\nstderr:\n%s", code, stderr.String())
	}
	if len(made) != 1 {
		t.Fatalf("apply built %d probe sinks, want 1", len(made))
	}
	p := made[0]
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.label != "seen" || !p.started {
		t.Errorf("label %q, started %v: want the block's label, started", p.label, p.started)
	}
	var counted int64
	for _, s := range p.snapshots {
		for _, f := range s.Series {
			if f.Scenario == "s" && f.Request == "r" {
				counted += f.Count
			}
		}
	}
	if n := len(p.snapshots); n < 2 || !p.snapshots[n-1].Final {
		t.Errorf("%d snapshots, want 2 or more, the last one final", n)
	}
	if len(p.summaries) != 1 {
		t.Fatalf("closed %d times, want once", len(p.summaries))
	}
	server := served.Load()
	var summarised int64
	if sc := p.summaries[0].Scenarios["s"]; sc != nil && sc.Requests["r"] != nil {
		summarised = sc.Requests["r"].Count
	}
	t.Logf("the server counted %d calls; the probe got %d snapshots adding up to %d, and a summary of %d", server, len(p.snapshots), counted, summarised)
	if server == 0 || counted != server || summarised != server {
		t.Errorf("the server counted %d calls; the probe's intervals %d, its summary %d", server, counted, summarised)
	}
}
