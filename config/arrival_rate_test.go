package config

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/zclconf/go-cty/cty"
)

// openScenario wraps the executor attributes of one scenario in a minimal
// valid test.
func openScenario(attrs string) string {
	return `
target "shop" { base_url = "http://127.0.0.1:8080" }
scenario "s" {
` + attrs + `
  request "r" { path = "/" }
}
`
}

func TestArrivalRateExecutors(t *testing.T) {
	tests := []struct {
		name  string
		attrs string
		want  Executor
	}{
		{"constant defaults", `
  executor = "constant-arrival-rate"
  rate     = 100
  duration = "1m"`,
			// 100/s: 100 VUs keep up with 1 s iterations, 1 with 10 ms.
			ConstantArrivalRate{Rate: 100, TimeUnit: time.Second, Duration: time.Minute, PreAllocatedVUs: 1, MaxVUs: 100, MaxVUsDefault: true}},
		{"constant time unit", `
  executor  = "constant-arrival-rate"
  rate      = 1
  time_unit = "100ms"
  duration  = 30`,
			ConstantArrivalRate{Rate: 1, TimeUnit: 100 * time.Millisecond, Duration: 30 * time.Second, PreAllocatedVUs: 1, MaxVUs: 10, MaxVUsDefault: true}},
		{"constant slow rate", `
  executor  = "constant-arrival-rate"
  rate      = 1.5
  time_unit = "1m"
  duration  = "10m"`,
			ConstantArrivalRate{Rate: 1.5, TimeUnit: time.Minute, Duration: 10 * time.Minute, PreAllocatedVUs: 1, MaxVUs: 1, MaxVUsDefault: true}},
		{"constant fractional peak rounds up", `
  executor = "constant-arrival-rate"
  rate     = 255.5
  duration = "1m"`,
			ConstantArrivalRate{Rate: 255.5, TimeUnit: time.Second, Duration: time.Minute, PreAllocatedVUs: 3, MaxVUs: 256, MaxVUsDefault: true}},
		{"constant with a queue", `
  executor       = "constant-arrival-rate"
  rate           = 10
  duration       = "1m"
  max_queue_wait = "2s"`,
			ConstantArrivalRate{Rate: 10, TimeUnit: time.Second, Duration: time.Minute, PreAllocatedVUs: 1, MaxVUs: 10, MaxVUsDefault: true, MaxQueueWait: 2 * time.Second}},
		{"constant pre-allocated only raises max", `
  executor          = "constant-arrival-rate"
  rate              = 10
  duration          = "1m"
  pre_allocated_vus = 50`,
			ConstantArrivalRate{Rate: 10, TimeUnit: time.Second, Duration: time.Minute, PreAllocatedVUs: 50, MaxVUs: 50, MaxVUsDefault: true}},
		{"constant max only caps pre-allocated", `
  executor = "constant-arrival-rate"
  rate     = 1000
  duration = "1m"
  max_vus  = 4`,
			ConstantArrivalRate{Rate: 1000, TimeUnit: time.Second, Duration: time.Minute, PreAllocatedVUs: 4, MaxVUs: 4}},
		{"constant both set", `
  executor          = "constant-arrival-rate"
  rate              = 1000
  duration          = "1m"
  pre_allocated_vus = 5
  max_vus           = 5`,
			ConstantArrivalRate{Rate: 1000, TimeUnit: time.Second, Duration: time.Minute, PreAllocatedVUs: 5, MaxVUs: 5}},
		{"ramping defaults from the peak stage", `
  executor = "ramping-arrival-rate"
  stages   = [{ duration = "10s", target = 200 }, { duration = "1m", target = 50 }]`,
			RampingArrivalRate{TimeUnit: time.Second, Stages: []RateStage{{10 * time.Second, 200}, {time.Minute, 50}},
				PreAllocatedVUs: 2, MaxVUs: 200, MaxVUsDefault: true}},
		{"ramping peak at the start", `
  executor   = "ramping-arrival-rate"
  start_rate = 300
  time_unit  = "1m"
  stages     = [{ duration = "5m", target = 0.5 }, { duration = 0, target = 0 }]`,
			RampingArrivalRate{StartRate: 300, TimeUnit: time.Minute, Stages: []RateStage{{5 * time.Minute, 0.5}, {0, 0}},
				PreAllocatedVUs: 1, MaxVUs: 5, MaxVUsDefault: true}},
		{"ramping pool set", `
  executor          = "ramping-arrival-rate"
  stages            = [{ duration = "1m", target = 10 }]
  pre_allocated_vus = 2
  max_vus           = 8`,
			RampingArrivalRate{TimeUnit: time.Second, Stages: []RateStage{{time.Minute, 10}}, PreAllocatedVUs: 2, MaxVUs: 8}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			test := mustParse(t, openScenario(tt.attrs), testOptions())
			if got := test.Scenarios[0].Executor; !reflect.DeepEqual(got, tt.want) {
				t.Errorf("executor = %#v\nwant       %#v", got, tt.want)
			}
		})
	}
}

func TestArrivalRateInvalid(t *testing.T) {
	tests := []struct {
		name, attrs, want string
	}{
		{"rate text", `
  executor = "constant-arrival-rate"
  rate     = "fast"
  duration = "1m"`, "Incorrect attribute value type"},
		{"zero time unit", `
  executor  = "constant-arrival-rate"
  rate      = 10
  time_unit = 0
  duration  = "1m"`, "time_unit must be longer than zero"},
		{"zero duration", `
  executor = "constant-arrival-rate"
  rate     = 10
  duration = 0`, "duration must be longer than zero"},
		{"null rate", `
  executor = "constant-arrival-rate"
  rate     = null
  duration = "1m"`, "rate must not be null"},
		{"null executor", `
  executor = null`, "Missing executor"},
		{"null vus", `
  executor = "constant-vus"
  vus      = null
  duration = "1m"`, "vus must not be null"},
		{"missing rate", `
  executor = "constant-arrival-rate"
  duration = "1m"`, "Missing rate for the constant-arrival-rate executor"},
		{"vus with an open executor", `
  executor = "constant-arrival-rate"
  rate     = 10
  duration = "1m"
  vus      = 10`, "vus is not used by the constant-arrival-rate executor"},
		{"stages with constant rate", `
  executor = "constant-arrival-rate"
  rate     = 10
  duration = "1m"
  stages   = [{ duration = "1m", target = 1 }]`, "stages is not used by the constant-arrival-rate executor"},
		{"rate with a closed executor", `
  executor = "constant-vus"
  vus      = 1
  duration = "1m"
  rate     = 10`, `rate is used by "constant-arrival-rate"`},
		{"duration with ramping rate", `
  executor = "ramping-arrival-rate"
  duration = "1m"
  stages   = [{ duration = "1m", target = 1 }]`, "duration is not used by the ramping-arrival-rate executor"},
		{"think time with ramping rate", `
  executor   = "ramping-arrival-rate"
  think_time = uniform("1s", "2s")
  stages     = [{ duration = "1m", target = 1 }]`, "think_time is not used by the ramping-arrival-rate executor"},
		{"zero pre-allocated", `
  executor          = "constant-arrival-rate"
  rate              = 10
  duration          = "1m"
  pre_allocated_vus = 0`, "pre_allocated_vus must be a whole number from 1 to 2147483648"},
		{"fractional max", `
  executor = "constant-arrival-rate"
  rate     = 10
  duration = "1m"
  max_vus  = 2.5`, "max_vus must be a whole number from 1 to 2147483648"},
		{"negative start rate", `
  executor   = "ramping-arrival-rate"
  start_rate = -1
  stages     = [{ duration = "1m", target = 1 }]`, "start_rate is the number of iterations started per time_unit"},
		{"all rates zero", `
  executor = "ramping-arrival-rate"
  stages   = [{ duration = "1m", target = 0 }]`, "no iteration would ever start"},
		{"stages take no time", `
  executor = "ramping-arrival-rate"
  stages   = [{ duration = 0, target = 10 }]`, "Stages take no time"},
		{"rate too high", `
  executor  = "constant-arrival-rate"
  rate      = 1000000
  time_unit = "1us"
  duration  = "1m"`, "Rate too high"},
		{"stage without target", `
  executor = "ramping-arrival-rate"
  stages   = [{ duration = "1m" }]`, `such as { duration = "1m", target = 100 }`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			test, diags := parseString(t, openScenario(tt.attrs), testOptions())
			if !diags.HasErrors() {
				t.Fatalf("no error, want one mentioning %q", tt.want)
			}
			if text := render(t, test, diags); !strings.Contains(text, tt.want) {
				t.Fatalf("errors do not mention %q:\n%s", tt.want, text)
			}
		})
	}
}

func TestLoadOpenModel(t *testing.T) {
	test, diags := Load([]string{filepath.Join("testdata", "valid", "open.hcl")}, testOptions())
	if diags.HasErrors() {
		t.Fatalf("unexpected errors:\n%s", render(t, test, diags))
	}
	orders, browse := test.Scenarios[0], test.Scenarios[1]
	// 50 per 100ms is 500/s: max_vus keeps up with 1 s iterations.
	wantOrders := ConstantArrivalRate{Rate: 50, TimeUnit: 100 * time.Millisecond, Duration: 2 * time.Minute, PreAllocatedVUs: 20, MaxVUs: 500, MaxVUsDefault: true}
	if orders.Executor != wantOrders {
		t.Errorf("orders executor = %#v, want %#v", orders.Executor, wantOrders)
	}
	wantBrowse := RampingArrivalRate{StartRate: 10, TimeUnit: time.Second,
		Stages:          []RateStage{{30 * time.Second, 200}, {time.Minute, 200}, {10 * time.Second, 0.5}},
		PreAllocatedVUs: 2, MaxVUs: 200, MaxVUsDefault: true}
	if !reflect.DeepEqual(browse.Executor, wantBrowse) {
		t.Errorf("browse executor = %#v, want %#v", browse.Executor, wantBrowse)
	}
	if orders.ThinkTime != (ThinkTime{}) {
		t.Errorf("think time = %+v, want none", orders.ThinkTime)
	}
	if len(test.Feeders) != 2 || test.Feeders[0].Name != "users" || test.Feeders[0].Mode != modeUnique ||
		test.Feeders[1].Name != "products" || test.Feeders[1].Mode != modeSequential {
		t.Fatalf("feeders = %+v", test.Feeders)
	}
	users, products := test.Feeders[0], test.Feeders[1]
	if got := feederNames(orders.Requests[0].Feeders()); got != "users" {
		t.Errorf("login feeders = %s", got)
	}
	// Declaration order, whatever the order of use.
	if got := feederNames(browse.Requests[0].Feeders()); got != "users,products" {
		t.Errorf("product feeders = %s", got)
	}
	if got := browse.Requests[1].Feeders(); len(got) != 0 || browse.Requests[1].Dynamic() {
		t.Errorf("home feeders = %v, dynamic %v", got, browse.Requests[1].Dynamic())
	}
	v, d := browse.Requests[0].Value(Iteration{VU: 1, Scenario: "browse", Data: map[string]cty.Value{
		"users": users.Row(1), "products": products.Row(1),
	}})
	if d.HasErrors() {
		t.Fatal(d)
	}
	if got := v.GetAttr("path").AsString(); got != "/products/B-2" {
		t.Errorf("path = %q", got)
	}
	q := v.GetAttr("query")
	if q.Index(cty.StringVal("name")).AsString() != "Blue hat, large" || q.Index(cty.StringVal("user")).AsString() != `Bob "the builder", Jr.` {
		t.Errorf("query = %#v", q)
	}
}

func feederNames(fs []*Feeder) string {
	names := make([]string, len(fs))
	for i, f := range fs {
		names[i] = f.Name
	}
	return strings.Join(names, ",")
}
