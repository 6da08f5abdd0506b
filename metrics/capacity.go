package metrics

// CapacitySummary is what a capacity-search scenario found: every step it
// took, and its saturation point.
type CapacitySummary struct {
	Model string `json:"model"` // open: loads are arrival rates; closed: VUs
	// Unit says what a load counts: "iterations/s" (or per the scenario's
	// time_unit, such as "iterations/1m0s") or "vus".
	Unit       string             `json:"unit"`
	Steps      []CapacityStep     `json:"steps"`
	Saturation CapacitySaturation `json:"saturation"`
}

// CapacityStep is one step of a capacity search, measured over the time
// it held its load: the calls that ended then.
type CapacityStep struct {
	Load      float64 `json:"load"`
	DurationS float64 `json:"duration_s"`
	Count     int64   `json:"count"`
	// RPS is every call that ended per second; OKRPS only the ones that
	// succeeded, the throughput the saturation point is judged on.
	RPS       float64 `json:"rps"`
	OKRPS     float64 `json:"ok_rps"`
	ErrorRate float64 `json:"error_rate"`
	P50       float64 `json:"p50_ms"`
	P95       float64 `json:"p95_ms"`
	P99       float64 `json:"p99_ms"`
}

// CapacitySaturation is the last step that held, with its figures, and why
// the search stopped. Step is its number from 1, or 0 when no step held
// (the first one already broke a bound); its figures are then zero.
type CapacitySaturation struct {
	Step int `json:"step"`
	CapacityStep
	// Reason is why the search stopped: "saturated", "max_error_rate",
	// "max_p95", "no_calls", "last_step" (every step held) or
	// "interrupted"; Detail says it with the figures.
	Reason string `json:"reason"`
	Detail string `json:"detail"`
}

// CapacityProgress is where a capacity search stands, for live progress.
type CapacityProgress struct {
	Step  int     `json:"step"`  // from 1
	Steps int     `json:"steps"` // how many the search may take
	Load  float64 `json:"load"`  // the current step's load
	Unit  string  `json:"unit"`
}
