package amqp

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hload/hload/config"
	"github.com/hload/hload/plugins/protocoltest"
	"github.com/hload/hload/protocols"
)

func loadExample(t *testing.T, path string, vars map[string]string) *config.Test {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	test, diags := config.Parse(map[string][]byte{path: src}, filepath.Dir(path), config.Options{
		Protocols: protocols.NewRegistry(New()),
		Vars:      vars,
	})
	if diags.HasErrors() {
		t.Fatalf("%s: %s", path, diags.Error())
	}
	return test
}

// TestExamples keeps examples/amqp-*.hcl valid and, with a broker and
// without -short, runs each on both paths: every call succeeds.
func TestExamples(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "examples", "amqp-*.hcl"))
	if err != nil || len(files) < 2 {
		t.Fatalf("examples: %v %v; want at least a publish/consume and an rpc one", files, err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			// Checking the targets stays in-process: it calls the unexported parseTarget.
			test := loadExample(t, file, nil)
			for _, tg := range test.Targets {
				if _, err := parseTarget(tg.Config); err != nil {
					t.Fatalf("target %q: %v", tg.Name, err)
				}
			}
			url := brokerURL(t)
			if testing.Short() {
				t.Skip("slow: runs the example for its full length")
			}
			protocoltest.Run(t, New(), func(t *testing.T, path protocoltest.Path, p protocols.Protocol) {
				sum := runOn(t, loadExample(t, file, map[string]string{"amqp_url": url}), 3*time.Minute, path, p)
				for name, sc := range sum.Scenarios {
					for req, f := range sc.Requests {
						t.Logf("%s/%s: count=%d errors=%v p50=%.2fms p99=%.2fms rps=%.0f", name, req, f.Count, f.ErrorsByKind, f.Latency.P50, f.Latency.P99, f.RPS)
						if f.Count == 0 || f.Errors != 0 {
							t.Errorf("%s/%s: count=%d errors=%v; want calls and no errors", name, req, f.Count, f.ErrorsByKind)
						}
					}
				}
				for _, th := range sum.Thresholds {
					t.Logf("threshold %s %s: value %.2f passed=%v", th.Metric, th.Condition, th.Value, th.Passed)
				}
				if m, ok := sum.Metrics[MetricConsumed]; ok {
					t.Logf("%s: count=%d p50=%.2fms p99=%.2fms", MetricConsumed, m.Count, m.P50, m.P99)
				}
			})
		})
	}
}
