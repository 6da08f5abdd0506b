package metrics

import (
	"encoding/json"
	"testing"
)

// TestCapacityJSON pins the summary JSON of a capacity search: the names
// docs/capacity.md documents, the saturation point's figures beside its
// step, reason and detail.
func TestCapacityJSON(t *testing.T) {
	st := CapacityStep{Load: 195.31, DurationS: 1.5, Count: 291, RPS: 194, OKRPS: 194, ErrorRate: 0, P50: 21.6, P95: 23.8, P99: 26.2}
	sc := ScenarioSummary{Executor: "capacity-search", Model: "open", Capacity: &CapacitySummary{
		Model: "open", Unit: "iterations/s", Steps: []CapacityStep{st},
		Saturation: CapacitySaturation{Step: 1, CapacityStep: st, Reason: "saturated", Detail: "why"}}}
	b, err := json.Marshal(sc)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Capacity struct {
			Model, Unit string
			Steps       []map[string]any
			Saturation  map[string]any
		}
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"load": 195.31, "duration_s": 1.5, "count": 291.0, "rps": 194.0, "ok_rps": 194.0,
		"error_rate": 0.0, "p50_ms": 21.6, "p95_ms": 23.8, "p99_ms": 26.2}
	for k, v := range want {
		if got.Capacity.Steps[0][k] != v || got.Capacity.Saturation[k] != v {
			t.Errorf("%s: step %v, saturation %v; want %v\n%s", k, got.Capacity.Steps[0][k], got.Capacity.Saturation[k], v, b)
		}
	}
	if s := got.Capacity.Saturation; s["step"] != 1.0 || s["reason"] != "saturated" || s["detail"] != "why" || got.Capacity.Unit != "iterations/s" {
		t.Errorf("saturation %v, unit %q", s, got.Capacity.Unit)
	}
}
