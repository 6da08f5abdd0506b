package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/hload/hload/bench/benchreq"
)

// A benchCase is one kind of load the harness measures, with the tools
// that can make it. Each case's results print as a table of their own,
// and the goals of docs/performance.md read the medians of every case.
type benchCase struct {
	name  string
	about string
	tools []*tool
	// needs are tools of other cases whose figures this case's goals
	// compare against; selecting the case runs them too.
	needs []string
}

// hloadGetTest is the test hload runs in the get case: constant VUs
// against the server, each on its own keep-alive connection, in-process
// or isolated. The variables it does not use are there because the
// harness passes the same ones to every test.
const hloadGetTest = `variable "base_url" {}
variable "echo_address" {}
variable "isolate" {}
variable "vus" {}
variable "duration" {}

target "server" {
  protocol = "http"
  base_url = var.base_url
  isolate  = var.isolate
}

scenario "s" {
  executor = "constant-vus"
  vus      = var.vus
  duration = var.duration

  request "r" {
    path = "/"
  }
}
`

// hloadFlowTest is hloadGetTest with each iteration a flow of three
// constant steps instead of one request: the same calls, so its requests
// per CPU-second against hload's shows what running a journey costs.
var hloadFlowTest = strings.Replace(hloadGetTest, `  request "r" {
    path = "/"
  }
`, `  flow "f" {
    request "a" {
      path = "/"
    }
    request "b" {
      path = "/"
    }
    request "c" {
      path = "/"
    }
  }
`, 1)

// postQuery and postBody are the constant POST's query and JSON body, as
// the peers send them; hload's post.hcl encodes the same object.
const (
	postQuery = "page=1&sort=price"
	postBody  = `{"gift":false,"price":19.99,"quantity":2,"sku":"A-100","tags":["red","small"]}`
)

// hloadPostTest is a POST with a query and a small constant JSON body.
var hloadPostTest = strings.Replace(hloadGetTest, `  request "r" {
    path = "/"
  }
`, `  request "r" {
    method = "POST"
    path   = "/orders"
    query  = { page = "1", sort = "price" }
    json   = { sku = "A-100", quantity = 2, price = 19.99, gift = false, tags = ["red", "small"] }
  }
`, 1)

// hloadPostDynamicTest is the same POST with dynamic values: a random
// path segment, a field of a CSV row and per-iteration numbers.
var hloadPostDynamicTest = `data "csv" "users" {
  path = "users.csv"
  mode = "sequential"
}

` + strings.Replace(hloadGetTest, `  request "r" {
    path = "/"
  }
`, benchreq.PostDynamic, 1)

// usersCSV is the dynamic POST's data file.
var usersCSV = func() string {
	var b strings.Builder
	b.WriteString("email\n")
	for i := 1; i <= 100; i++ {
		fmt.Fprintf(&b, "user%d@example.com\n", i)
	}
	return b.String()
}()

// hloadOpenTest is the get case's request at a constant arrival rate, with
// the pool of VUs hload sizes by default for the rate.
const hloadOpenTest = `variable "base_url" {}
variable "echo_address" {}
variable "isolate" {}
variable "vus" {}
variable "duration" {}
variable "rate" {}

target "server" {
  protocol = "http"
  base_url = var.base_url
  isolate  = var.isolate
}

scenario "s" {
  executor = "constant-arrival-rate"
  rate     = var.rate
  duration = var.duration

  request "r" {
    path = "/"
  }
}
`

// The explicit pool of each open case's second hload run: smaller than
// the default at 10,000/s (100 pre-allocated), so that the tables show
// what the default pool costs the server in connections against one that
// has to grow.
const (
	poolPreAllocatedVUs = 50
	poolMaxVUs          = 200
)

// hloadOpenPoolTest is hloadOpenTest with that pool, from variables whose
// defaults the harness does not override; hloadOpenTest has none, so it
// keeps the pool hload sizes for the rate.
var hloadOpenPoolTest = strings.Replace(strings.Replace(hloadOpenTest, `variable "rate" {}
`, fmt.Sprintf(`variable "rate" {}
variable "pre_allocated_vus" {
  default = %d
}
variable "max_vus" {
  default = %d
}
`, poolPreAllocatedVUs, poolMaxVUs), 1), `  duration = var.duration
`, `  duration = var.duration

  pre_allocated_vus = var.pre_allocated_vus
  max_vus           = var.max_vus
`, 1)

// hloadIdleTest starts var.vus VUs over half the run, each sending one
// request that the server holds for the whole run: at the end of the ramp
// every VU waits on a response at once, which is when hload's RSS peaks.
// The target's timeout is above any -duration the harness is run with,
// where the default 60s would fail a hold of a minute or more.
const hloadIdleTest = `variable "base_url" {}
variable "echo_address" {}
variable "isolate" {}
variable "vus" {}
variable "duration" {}
variable "ramp_up" {}
variable "hold_ms" {}

target "server" {
  protocol = "http"
  base_url = var.base_url
  isolate  = var.isolate
  timeout  = "1h"
}

scenario "s" {
  executor     = "iterations"
  vus          = var.vus
  iterations   = 1
  ramp_up      = var.ramp_up
  max_duration = "5m"

  request "r" {
    path  = "/slow"
    query = { ms = var.hold_ms }
  }
}
`

// hloadEchoTest sends the dynamic POST's values through the external echo
// plugin (examples/plugins/echo) to the server's echo port.
const hloadEchoTest = `variable "base_url" {}
variable "echo_address" {}
variable "isolate" {}
variable "vus" {}
variable "duration" {}

data "csv" "users" {
  path = "users.csv"
  mode = "sequential"
}

plugin "echo" {}

target "echo" {
  protocol = "echo"
  address  = var.echo_address
  timeout  = "5s"
}

scenario "s" {
  executor = "constant-vus"
  vus      = var.vus
  duration = var.duration

  request "r" {
    payload = "order/${random_string(8)} ${data.users.email} ${random_int(1, 9)} ${vu.id} ${vu.iteration}"
  }
}
`

// bigBodySize is the length of each body of the big-body case: 200 MB.
const bigBodySize = 200 << 20

// hloadBigBodyTest has one VU GET 200 MB bodies, which hload reads off
// the connection and drops; hloadBigBodyCheckedTest also checks each for
// the "THE END" the server writes last, and fails the run (exit 99) unless
// every check held.
const hloadBigBodyTest = `variable "base_url" {}
variable "echo_address" {}
variable "isolate" {}
variable "vus" {}
variable "duration" {}

target "server" {
  protocol = "http"
  base_url = var.base_url
  isolate  = var.isolate
  timeout  = "5m"
}

scenario "s" {
  executor = "constant-vus"
  vus      = var.vus
  duration = var.duration

  request "r" {
    path  = "/big"
    query = { size = "209715200" }
  }
}
`

var hloadBigBodyCheckedTest = strings.Replace(hloadBigBodyTest, `    query = { size = "209715200" }
  }
`, `    query = { size = "209715200" }
    check {
      body_contains = "THE END"
    }
  }
}

threshold {
  metric    = "checks"
  condition = "count == 0"
`, 1)

// testFiles are the files buildHload writes beside hload.
var testFiles = map[string]string{
	"get.hcl":          hloadGetTest,
	"flow.hcl":         hloadFlowTest,
	"post.hcl":         hloadPostTest,
	"post-dynamic.hcl": hloadPostDynamicTest,
	"open.hcl":         hloadOpenTest,
	"open-pool.hcl":    hloadOpenPoolTest,
	"idle.hcl":         hloadIdleTest,
	"echo.hcl":         hloadEchoTest,
	"big.hcl":          hloadBigBodyTest,
	"big-checked.hcl":  hloadBigBodyCheckedTest,
	"users.csv":        usersCSV,
	"post-body.json":   postBody,
	"post.lua": `wrk.method = "POST"
wrk.body = '` + postBody + `'
wrk.headers["Content-Type"] = "application/json"
`,
}

const (
	wrkInstall    = "apt-get install -y wrk (or scripts/peers.sh)"
	heyInstall    = "apt-get install -y hey (or scripts/peers.sh)"
	vegetaInstall = "GOBIN=~/.cache/hload/bin go install github.com/tsenart/vegeta/v12@v12.13.0 (or scripts/peers.sh)"
)

// openRates are the rates of the open-model cases, open-N.
var openRates = []int{10000, 20000}

// defaultSweepRates are -sweep-rates' default: from a rate a sleeping
// pacer idles between starts at to 4x the highest open case, so that a
// tool's limit on a 2-core machine is likely among them.
const defaultSweepRates = "2000,5000,10000,15000,20000,25000,30000,35000,40000"

// hloadOpen is hload at the run's rate, from the test file.
func hloadOpen(name, file, note string) *tool {
	t := hloadTool(name, file, false, note)
	base := t.args
	t.args = func(r toolRun) []string {
		args := base(r)
		return append(args[:len(args)-1], "--var", "rate="+strconv.Itoa(r.rate), args[len(args)-1])
	}
	return t
}

// vegetaOpen is vegeta attack at the run's rate, with its default workers.
func vegetaOpen(name string) *tool {
	return &tool{name: name, program: "vegeta", install: vegetaInstall, figures: vegetaFigures,
		note: "vegeta -rate, its default workers",
		args: func(r toolRun) []string {
			return []string{"attack", fmt.Sprintf("-rate=%d/1s", r.rate), "-duration=" + r.duration.String(), "-output=" + r.files + ".bin"}
		},
		stdin: func(r toolRun) string { return "GET " + r.url + "\n" }}
}

// idleVUs are the two VU counts of the idle-VU case: the slope of peak RSS
// between them is the memory one more waiting VU costs, without what any
// process costs with no VU at all.
var idleVUs = [2]int{2000, 10000}

// cases are the cases the harness runs, in the order each round runs them.
func cases() []*benchCase {
	wrkFigures := func(_ context.Context, _ toolRun, out []byte) (figures, error) { return parseWrk(out) }
	heyFigures := func(_ context.Context, _ toolRun, out []byte) (figures, error) { return parseHey(out) }
	secs := func(r toolRun) string { return fmt.Sprintf("-d%ds", int(r.duration.Seconds())) }
	vegetaClosed := func(r toolRun) []string {
		n := strconv.Itoa(r.connections)
		return []string{"attack", "-rate=0", "-max-workers=" + n, "-workers=" + n,
			"-duration=" + r.duration.String(), "-output=" + r.files + ".bin"}
	}
	postURL := func(r toolRun) string { return r.url + "orders?" + postQuery }

	get := &benchCase{name: "get", about: "keep-alive GET of a 60-byte body, closed model", tools: []*tool{
		hloadTool("hload", "get.hcl", false, ""),
		hloadTool("hload-flow", "flow.hcl", false, "each iteration a flow of 3 constant steps: the same requests as hload's"),
		hloadTool("hload-isolated", "get.hcl", true, "isolate = true on the target: CPU is hload's and its plugin process's"),
		{name: "wrk", program: "wrk", install: wrkInstall, figures: wrkFigures,
			args: func(r toolRun) []string { return []string{"-t1", "-c" + strconv.Itoa(r.connections), secs(r), r.url} }},
		{name: "hey", program: "hey", install: heyInstall, figures: heyFigures,
			args: func(r toolRun) []string {
				return []string{"-z", r.duration.String(), "-c", strconv.Itoa(r.connections), r.url}
			}},
		{name: "vegeta", program: "vegeta", install: vegetaInstall, figures: vegetaFigures, args: vegetaClosed,
			stdin: func(r toolRun) string { return "GET " + r.url + "\n" },
			note:  "the attack alone is measured; vegeta report reads its results afterwards"},
	}}

	post := &benchCase{name: "post", about: "POST with a query and a constant JSON body, closed model", needs: []string{"hload"}, tools: []*tool{
		hloadTool("hload-post", "post.hcl", false, ""),
		{name: "wrk-post", program: "wrk", install: wrkInstall, figures: wrkFigures, note: "a Lua script sets the method, body and Content-Type",
			args: func(r toolRun) []string {
				return []string{"-t1", "-c" + strconv.Itoa(r.connections), secs(r), "-s", "post.lua", postURL(r)}
			}},
		{name: "hey-post", program: "hey", install: heyInstall, figures: heyFigures,
			args: func(r toolRun) []string {
				return []string{"-z", r.duration.String(), "-c", strconv.Itoa(r.connections),
					"-m", "POST", "-T", "application/json", "-d", postBody, postURL(r)}
			}},
		{name: "vegeta-post", program: "vegeta", install: vegetaInstall, figures: vegetaFigures, args: vegetaClosed,
			stdin: func(r toolRun) string {
				return "POST " + postURL(r) + "\nContent-Type: application/json\n@post-body.json\n"
			}},
	}}

	dynamic := &benchCase{name: "post-dynamic", about: "the same POST with a random path segment, a CSV field and per-iteration numbers", needs: []string{"hload-post"},
		tools: []*tool{hloadTool("hload-post-dynamic", "post-dynamic.hcl", false,
			"the peers have no per-request values of this kind (vegeta's and wrk's need a script or a pre-generated file), so only hload runs")}}

	open := func(rate int) *benchCase {
		name := fmt.Sprintf("open-%d", rate)
		c := &benchCase{name: name, about: fmt.Sprintf("open model: GET at %d/s", rate), needs: []string{"hload"}, tools: []*tool{
			hloadOpen("hload-"+name, "open.hcl", "constant-arrival-rate, hload's default VU pool for the rate"),
			hloadOpen("hload-"+name+"-pool", "open-pool.hcl",
				fmt.Sprintf("constant-arrival-rate, pre_allocated_vus = %d, max_vus = %d", poolPreAllocatedVUs, poolMaxVUs)),
			vegetaOpen("vegeta-" + name),
			floorOpen("floor-" + name),
		}}
		for _, t := range c.tools {
			t.rate = rate
		}
		return c
	}
	sweep := &benchCase{name: "open-sweep", about: "open model: the GET at each rate of -sweep-rates, up to the first a tool does not send in full", tools: []*tool{
		hloadOpen("hload-open-sweep", "open.hcl", "each rate of -sweep-rates for -duration, hload's default VU pool, up to the first rate it does not send in full"),
		vegetaOpen("vegeta-open-sweep"),
		floorOpen("floor-open-sweep"),
	}}
	for _, t := range sweep.tools {
		t.sweep = true
	}

	idle := &benchCase{name: "idle-vus", about: "VUs each waiting on a response the server holds: peak RSS per added VU"}
	for _, n := range idleVUs {
		t := hloadTool(fmt.Sprintf("hload-idle-%d", n), "idle.hcl", false, "")
		t.vus = n
		base := t.args
		t.args = func(r toolRun) []string {
			r.connections = n
			args := base(r)
			// Half the run to start the VUs, then the whole run holding:
			// every VU waits at once from the end of the ramp.
			return append(args[:len(args)-1],
				"--var", "ramp_up="+(r.duration/2).String(),
				"--var", "hold_ms="+strconv.FormatInt(r.duration.Milliseconds(), 10), args[len(args)-1])
		}
		idle.tools = append(idle.tools, t)
	}
	idle.tools[1].note = "the VUs start over half of -duration and each request is held -duration; the run takes about 1.5x -duration"

	echo := hloadTool("hload-echo", "echo.hcl", false,
		"the external echo plugin: the dynamic POST's values as its payload, one TCP connection per call to the server's echo port")
	echo.counted = "echo"
	plugin := &benchCase{name: "plugin", about: "the dynamic POST through a plugin process, against in-process", needs: []string{"hload-post-dynamic"}, tools: []*tool{
		hloadTool("hload-post-dynamic-isolated", "post-dynamic.hcl", true, "isolate = true: the dynamic POST through hload's own HTTP plugin process"),
		echo,
	}}

	big := &benchCase{name: "big-body", about: "one VU reading 200 MB bodies, unchecked and with body_contains: time per call and peak RSS"}
	for _, name := range []string{"hload-big-body", "hload-big-body-checked"} {
		file := "big.hcl"
		if strings.HasSuffix(name, "checked") {
			file = "big-checked.hcl"
		}
		t := hloadTool(name, file, false, "")
		t.vus = 1
		base := t.args
		t.args = func(r toolRun) []string {
			r.connections = 1
			return base(r)
		}
		big.tools = append(big.tools, t)
	}
	big.tools[1].note = "body_contains looks for the last 7 bytes of each body; the run fails unless every check held"

	all := []*benchCase{get, post, dynamic}
	for _, rate := range openRates {
		all = append(all, open(rate))
	}
	all = append(all, sweep, idle, plugin, big)
	for _, c := range all {
		for _, t := range c.tools {
			t.caseName = c.name
		}
	}
	return all
}
