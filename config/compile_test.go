package config

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"github.com/hload/hload/bench/benchreq"
)

// diffEnv evaluates one expression both ways, HCL and compiled, each with
// its own generator seeded alike, so that both draw the same values.
type diffEnv struct {
	base     *hcl.EvalContext // var, local and the HCL functions
	hclDraws draws
	r        *Request
	compiled draws
}

func newDiffEnv(seed uint64) *diffEnv {
	hclDraws := rand.New(rand.NewPCG(seed, seed))
	funcs := functions(".", Options{}, nil)
	for name, f := range randomFunctions(hclDraws) {
		funcs[name] = f
	}
	base := &hcl.EvalContext{
		Variables: map[string]cty.Value{
			"var": cty.ObjectVal(map[string]cty.Value{
				"s":    cty.StringVal("shop"),
				"n":    cty.NumberIntVal(3),
				"f":    cty.NumberFloatVal(1.5),
				"list": cty.TupleVal([]cty.Value{cty.StringVal("a"), cty.StringVal("b"), cty.StringVal("c")}),
				"nums": cty.ListVal([]cty.Value{cty.NumberIntVal(10), cty.NumberIntVal(20)}),
			}),
			"local": cty.ObjectVal(map[string]cty.Value{
				"prefix": cty.StringVal("/api"),
				"big":    cty.MustParseNumberVal("12345678901234567890.25"),
			}),
		},
		Functions: funcs,
	}
	r := &Request{
		Name: "r", scenario: "browse", scenarioVal: scenarioValue("browse"), base: base,
		usesVU: true, usesVars: true, feeders: []*Feeder{{Name: "users"}},
	}
	r.extra.let = &hclsyntax.LiteralValueExpr{Val: cty.EmptyObjectVal}
	r.extra.letDynamic = true
	return &diffEnv{base: base, hclDraws: hclDraws, r: r, compiled: rand.New(rand.NewPCG(seed, seed))}
}

// state is one call's per-iteration values.
type state struct {
	it  Iteration
	let cty.Value
}

// hclValue is the reference: expr evaluated by HCL in the context Eval
// built before compile.go, written out again here.
func (e *diffEnv) hclValue(expr hcl.Expression, s state) (cty.Value, hcl.Diagnostics) {
	ctx := e.base.NewChild()
	name := s.it.Scenario
	if name == "" {
		name = e.r.scenario
	}
	vars := cty.EmptyObjectVal
	if len(s.it.Vars) > 0 {
		vars = cty.ObjectVal(s.it.Vars)
	}
	ctx.Variables = map[string]cty.Value{
		rootScenario: scenarioValue(name),
		rootVU: cty.ObjectVal(map[string]cty.Value{
			"id":        cty.NumberUIntVal(s.it.VU),
			"iteration": cty.NumberUIntVal(s.it.Iteration),
			vuVars:      vars,
		}),
		rootData: cty.ObjectVal(s.it.Data),
		rootLet:  s.let,
	}
	return expr.Value(ctx)
}

func (e *diffEnv) compile(expr hcl.Expression) node {
	return (&compiler{r: e.r, base: e.base, draws: e.compiled}).compile(expr)
}

// diffStates are the VU states of the differential tests: rows with
// non-ASCII text (one not in NFC), captures of every primitive kind.
func diffStates(n int) []state {
	emails := []string{"ada@example.com", "bob@example.com", "zoë@example.com", "e\u0301@example.com", ""}
	var states []state
	for i := range n {
		row := cty.ObjectVal(map[string]cty.Value{
			"email": cty.StringVal(emails[i%len(emails)]),
			"id":    cty.StringVal(fmt.Sprint(1000 + i)),
		})
		scenario := ""
		if i%3 == 1 {
			scenario = "checkout"
		}
		states = append(states, state{
			it: Iteration{
				VU: uint64(i%7 + 1), Iteration: uint64(i * 13), Scenario: scenario,
				Data: map[string]cty.Value{"users": row},
				Vars: map[string]cty.Value{
					"token": cty.StringVal(fmt.Sprintf("tok-%d", i)),
					"count": cty.NumberFloatVal(float64(i) / 4),
					"flag":  cty.BoolVal(i%2 == 0),
					"item":  cty.ObjectVal(map[string]cty.Value{"id": cty.NumberIntVal(int64(i))}),
				},
			},
			let: cty.ObjectVal(map[string]cty.Value{
				"uid": cty.NumberIntVal(int64(i * 3)),
				"tag": cty.StringVal(fmt.Sprintf("t%d", i)),
			}),
		})
	}
	return states
}

// compiledExpressions are compiled; each must give HCL's value and type.
var compiledExpressions = []string{
	`"/orders/${random_string(8)}"`,
	`"${vu.id}"`,
	`"u${vu.id}-${vu.iteration}"`,
	`vu.iteration`,
	`(vu.id)`,
	`"${data.users.email}"`,
	`data.users.email`,
	`data.users`,
	`{ sku = "A-100", quantity = random_int(1, 9), price = 19.99, gift = false, tags = ["red", "small"], user = data.users.email, vu = vu.id, iteration = vu.iteration }`,
	`[vu.id, "x", random_int(-5, 5), [data.users.id, 2]]`,
	`"${local.prefix}/${var.s}/${var.n}/${var.f}/${local.big}/${vu.id}"`,
	`"${random_int(1, 1000000)}"`,
	`random_int("2", 7)`,
	`random_int(-9223372036854775808, 9223372036854775807)`,
	`random_string(0)`,
	`random_choice(["a", "b", "c"])`,
	`"${random_choice([1, 2.5, true])}"`,
	`random_choice(var.list)`,
	`random_choice(var.nums)`,
	`uuid()`,
	`"id-${uuid()}"`,
	`vu.vars.token`,
	`"Bearer ${vu.vars.token}"`,
	`"${vu.vars.count}/${vu.vars.flag}"`,
	`vu.vars.item`,
	`{ item = vu.vars.item, token = vu.vars.token }`,
	`scenario.name`,
	`"${scenario.name}/x"`,
	`let.uid`,
	`"${let.uid}-${let.tag}"`,
	`{ "quoted key" = vu.id, nested = { a = vu.iteration, b = [data.users.email, 1] }, (var.s) = let.tag }`,
	`{ a = vu.id, a = vu.iteration }`,
	`"${"inner ${vu.id}"} and ${"e\u0301"}${data.users.email}"`,
	"<<EOT\nhello ${vu.id}\n  ${data.users.email}\nEOT\n",
	`"${upper(var.s)}-${vu.id}"`,
	`{ fixed = { a = 1, b = [true, null] }, n = null, id = vu.id }`,
}

// interpretedExpressions keep HCL: their shapes are not compiled.
var interpretedExpressions = []string{
	`vu.id + 1`,
	`vu.id > 3 ? "big" : "small"`,
	`upper(data.users.email)`,
	`[for x in var.list : "${x}${vu.id}"]`,
	`"%{ if vu.id > 1 }big%{ endif }"`,
	`vu.vars["token"]`,
	`{ (data.users.email) = 1 }`,
	`random_int(1, vu.id)`,
	`random_int(5, 1)`,
	`random_string(-1)`,
	`random_choice([])`,
	`"${vu.id}${[1]}"`,
	`"${vu.id}${null}"`,
	`vu`,
	`data.users.email.x`,
	`jsonencode({ id = vu.id })`,
}

func parseExpr(t testing.TB, src string) hcl.Expression {
	t.Helper()
	expr, diags := hclsyntax.ParseExpression([]byte(src), "test.hcl", hcl.InitialPos)
	if diags.HasErrors() {
		t.Fatalf("%s: %s", src, diags.Error())
	}
	return expr
}

// sameValue fails t unless got is want, type included.
func sameValue(t testing.TB, what string, got, want cty.Value) {
	t.Helper()
	if !got.Type().Equals(want.Type()) {
		t.Fatalf("%s: compiled type %s, HCL type %s", what, got.Type().FriendlyName(), want.Type().FriendlyName())
	}
	if !got.RawEquals(want) || !got.Equals(want).True() {
		t.Fatalf("%s: compiled %#v, HCL %#v", what, got, want)
	}
}

// TestCompiledMatchesHCL evaluates each compiled expression both ways over
// many VU states and compares the values and their types.
func TestCompiledMatchesHCL(t *testing.T) {
	states := diffStates(60)
	for _, src := range compiledExpressions {
		t.Run(src, func(t *testing.T) {
			e := newDiffEnv(7)
			expr := parseExpr(t, src)
			n := e.compile(expr)
			if n == nil {
				t.Fatal("not compiled")
			}
			for i, s := range states {
				want, diags := e.hclValue(expr, s)
				if diags.HasErrors() {
					t.Fatalf("state %d: HCL: %s", i, diags.Error())
				}
				got, ok := n.value(&call{r: e.r, it: s.it, let: s.let})
				if !ok {
					t.Fatalf("state %d: the compiled form gave up", i)
				}
				sameValue(t, fmt.Sprintf("state %d", i), got, want)
			}
		})
	}
}

// TestInterpretedShapes checks that what the compiler does not know is
// left to HCL, whole.
func TestInterpretedShapes(t *testing.T) {
	for _, src := range interpretedExpressions {
		e := newDiffEnv(7)
		if n := e.compile(parseExpr(t, src)); n != nil {
			t.Errorf("%s compiled to %#v; want HCL", src, n)
		}
	}
}

// TestCompiledGivesUp: at run time, a value the compiled form does not
// expect sends the call to HCL, whose message the user gets, as before.
func TestCompiledGivesUp(t *testing.T) {
	s := diffStates(1)[0]
	s.it.Vars["nothing"] = cty.NullVal(cty.String)
	cases := []struct{ src, message string }{
		{`vu.vars.missing`, `This object does not have an attribute named "missing".`},
		{`"Bearer ${vu.vars.missing}"`, `This object does not have an attribute named "missing".`},
		{`"a${vu.vars.nothing}"`, `The expression result is null. Cannot include a null value in a string template.`},
		{`"a${vu.vars.item}"`, `Cannot include the given value in a string template: string required`},
		{`{ a = vu.id, b = vu.vars.missing }`, `This object does not have an attribute named "missing".`},
		{`"${data.users}b"`, `Cannot include the given value in a string template: string required`},
	}
	for _, tc := range cases {
		e := newDiffEnv(7)
		expr := parseExpr(t, tc.src)
		n := e.compile(expr)
		if n == nil {
			t.Fatalf("%s: not compiled", tc.src)
		}
		c := &call{r: e.r, it: s.it}
		if v, ok := n.value(c); ok {
			t.Errorf("%s: the compiled form gave %#v; want it to give up", tc.src, v)
		}
		_, diags := c.eval(expr, n)
		if !diags.HasErrors() || !strings.Contains(diags.Error(), tc.message) {
			t.Errorf("%s: got %v; want HCL's error %q", tc.src, diags, tc.message)
		}
	}
}

// TestCompiledUnixMicros: unix_micros is the clock's, both ways.
func TestCompiledUnixMicros(t *testing.T) {
	e := newDiffEnv(7)
	n := e.compile(parseExpr(t, `"t${unix_micros()}"`))
	m := e.compile(parseExpr(t, `unix_micros()`))
	if n == nil || m == nil {
		t.Fatal("not compiled")
	}
	before := time.Now().UnixMicro()
	s, _ := n.value(&call{r: e.r})
	v, _ := m.value(&call{r: e.r})
	after := time.Now().UnixMicro()
	for _, got := range []string{strings.TrimPrefix(s.AsString(), "t"), v.AsBigFloat().Text('f', -1)} {
		var us int64
		if _, err := fmt.Sscan(got, &us); err != nil || us < before || us > after {
			t.Errorf("unix_micros gave %s; want a time in [%d, %d]", got, before, after)
		}
	}
	if v.Type() != cty.Number || s.Type() != cty.String {
		t.Errorf("types %s, %s", v.Type().FriendlyName(), s.Type().FriendlyName())
	}
}

// FuzzCompiledMatchesHCL: whatever expression compiles gives HCL's value
// for any VU state, or gives up.
func FuzzCompiledMatchesHCL(f *testing.F) {
	for i, src := range compiledExpressions {
		f.Add(src, uint64(i), uint64(i*7), "ada@example.com", "tok")
	}
	for _, src := range interpretedExpressions {
		f.Add(src, uint64(1), uint64(0), "e\u0301", "")
	}
	f.Fuzz(func(t *testing.T, src string, vu, iteration uint64, email, token string) {
		expr, diags := hclsyntax.ParseExpression([]byte(src), "fuzz.hcl", hcl.InitialPos)
		if diags.HasErrors() {
			return
		}
		e := newDiffEnv(vu)
		n := e.compile(expr)
		if n == nil {
			return
		}
		s := diffStates(1)[0]
		s.it.VU, s.it.Iteration = vu, iteration
		s.it.Data["users"] = cty.ObjectVal(map[string]cty.Value{
			"email": cty.StringVal(strings.ToValidUTF8(email, "?")),
			"id":    cty.StringVal("1"),
		})
		s.it.Vars["token"] = cty.StringVal(strings.ToValidUTF8(token, "?"))
		got, ok := n.value(&call{r: e.r, it: s.it, let: s.let})
		want, diags := e.hclValue(expr, s)
		if !ok {
			return // HCL's to evaluate
		}
		if diags.HasErrors() {
			// The compiled form must give up wherever HCL fails.
			t.Fatalf("%s: compiled %#v, HCL failed: %s", src, got, diags.Error())
		}
		if strings.Contains(src, "unix_micros") {
			return // the clock moved between the two
		}
		sameValue(t, src, got, want)
	})
}

// interpretOnly drops the compiled forms of test's requests, so that
// every per-call expression goes through HCL, as before compile.go.
func interpretOnly(test *Test) {
	for _, s := range test.Scenarios {
		for _, r := range s.Requests {
			for i := range r.dynamic {
				r.dynamic[i].node = nil
			}
			r.extra.letNode, r.extra.deliveryNode = nil, nil
		}
	}
}

// compiledFiles are requests of every compiled shape, and one attribute
// (form) that HCL keeps, beside compiled ones.
var compiledFiles = map[string]string{
	"users.csv": "email,id\nada@example.com,1\nzoë@example.com,2\ne\u0301@example.com,3\n",
	"test.hcl": `
variable "sku" { default = "A-100" }
locals { prefix = "/api" }
data "csv" "users" { path = "users.csv" }
target "shop" { base_url = "http://127.0.0.1:8080" }
scenario "shop" {
  executor = "constant-vus"
  vus      = 1
  duration = "1s"
  setup {
    request "login" {
      capture { token = json("token") }
    }
  }
  flow "order" {
    request "post" {
      method = "POST"
      path   = "${local.prefix}/orders/${random_string(8)}"
      query  = { page = "1", user = data.users.id, n = vu.iteration }
      json = {
        sku       = var.sku
        quantity  = random_int(1, 9)
        price     = 19.99
        tags      = ["red", random_choice(["small", "big"])]
        user      = data.users.email
        vu        = vu.id
        iteration = vu.iteration
        id        = uuid()
      }
      headers = { Authorization = "Bearer ${vu.vars.token}", X-Scenario = scenario.name }
      form    = { big = vu.id > 3 ? "yes" : "no" }
    }
    request "let" {
      let      = { uid = random_int(1, 1000000), tag = "t-${vu.id}" }
      path     = "/users/${let.uid}"
      json     = { userId = let.uid, tag = let.tag }
      delivery = { key = "user-${let.uid}", id = "${scenario.name}-${vu.id}-${vu.iteration}" }
    }
  }
}
`,
}

// loadFixed loads compiledFiles with fixed draws: two loads draw alike.
func loadFixed(t *testing.T) *Test {
	t.Helper()
	dir := t.TempDir()
	for name, content := range compiledFiles {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	opts := testOptions()
	opts.FixedDraws = true
	test, diags := Load([]string{filepath.Join(dir, "test.hcl")}, opts)
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	return test
}

// fixedIteration is the i-th of a sequence of iterations of compiledFiles'
// shop scenario: VUs 1 to 5 in turn, a row of the users feeder, a token.
func fixedIteration(i int, users *Feeder) Iteration {
	return Iteration{
		VU: uint64(i%5 + 1), Iteration: uint64(i), Scenario: "shop",
		Data: map[string]cty.Value{"users": users.Row(i % 3)},
		Vars: map[string]cty.Value{"token": cty.StringVal(fmt.Sprintf("tok%d", i))},
	}
}

// TestEvalCompiledMatchesInterpreted: Eval gives the same requests and
// deliveries, compiled or through HCL, for the same draws.
func TestEvalCompiledMatchesInterpreted(t *testing.T) {
	compiled, interpreted := loadFixed(t), loadFixed(t)
	interpretOnly(interpreted)
	want := map[string][]string{"post": {"headers", "json", "path", "query"}, "let": {"json", "path"}}
	for _, r := range compiled.Scenarios[0].Requests[1:] {
		var got []string
		for _, a := range r.dynamic {
			if a.node != nil {
				got = append(got, a.key)
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(want[r.Name]) {
			t.Errorf("request %s: compiled %v, want %v", r.Name, got, want[r.Name])
		}
		if r.Name == "let" && (r.extra.letNode == nil || r.extra.deliveryNode == nil) {
			t.Errorf("let or delivery not compiled")
		}
	}
	feeder := compiled.Feeders[0]
	for i := range 200 {
		it := fixedIteration(i, feeder)
		for j, r := range compiled.Scenarios[0].Requests[1:] {
			v, d, diags := r.Eval(it)
			w, wd, wdiags := interpreted.Scenarios[0].Requests[j+1].Eval(it)
			if diags.HasErrors() || wdiags.HasErrors() {
				t.Fatalf("%s: %v / %v", r.Name, diags, wdiags)
			}
			sameValue(t, fmt.Sprintf("%s, iteration %d", r.Name, i), v, w)
			if d != wd {
				t.Fatalf("%s, iteration %d: delivery %+v, HCL's %+v", r.Name, i, d, wd)
			}
		}
	}
	// A missing capture reads as HCL says, both ways.
	post := compiled.Scenarios[0].Requests[1]
	_, _, diags := post.Eval(Iteration{VU: 1, Data: map[string]cty.Value{"users": feeder.Row(0)}})
	if want := `This object does not have an attribute named "token".`; !strings.Contains(diags.Error(), want) {
		t.Errorf("missing capture: %v; want %q", diags, want)
	}
}

// BenchmarkEval measures Eval of the dynamic POST of protocols/http's
// BenchmarkRequests, compiled and all through HCL (as before compile.go),
// in one run.
func BenchmarkEval(b *testing.B) {
	dir := b.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "users.csv"), []byte("email\nada@example.com\nbob@example.com\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	src := []byte(`
data "csv" "users" { path = "users.csv" }
target "t" { base_url = "http://127.0.0.1:9" }
scenario "s" {
  executor = "constant-vus"
  vus      = 1
  duration = "1s"
` + benchreq.PostDynamic + "}\n")
	for _, mode := range []string{"compiled", "hcl"} {
		b.Run(mode, func(b *testing.B) {
			test, diags := Parse(map[string][]byte{"test.hcl": src}, dir, testOptions())
			if diags.HasErrors() {
				b.Fatal(diags.Error())
			}
			if mode == "hcl" {
				interpretOnly(test)
			}
			r := test.Scenarios[0].Requests[0]
			it := Iteration{VU: 1, Scenario: "s", Data: map[string]cty.Value{"users": test.Feeders[0].Row(0)}}
			b.ReportAllocs()
			for b.Loop() {
				it.Iteration++
				if _, _, diags := r.Eval(it); diags.HasErrors() {
					b.Fatal(diags.Error())
				}
			}
		})
	}
}

// TestCompiledEvalConcurrent: VUs share a request's compiled form (run it
// with -race).
func TestCompiledEvalConcurrent(t *testing.T) {
	test := mustLoadFiles(t, compiledFiles)
	feeder := test.Feeders[0]
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for vu := range 4 {
		wg.Go(func() {
			for i := range 200 {
				it := Iteration{
					VU: uint64(vu + 1), Iteration: uint64(i), Scenario: "shop",
					Data: map[string]cty.Value{"users": feeder.Row(i % 3)},
					Vars: map[string]cty.Value{"token": cty.StringVal("tok")},
				}
				for _, r := range test.Scenarios[0].Requests[1:] {
					v, _, diags := r.Eval(it)
					if diags.HasErrors() {
						errs <- diags
						return
					}
					if r.Name != "post" {
						continue
					}
					if n, _ := v.GetAttr("json").GetAttr("iteration").AsBigFloat().Int64(); n != int64(i) {
						errs <- fmt.Errorf("vu %d iteration %d: json.iteration %d", vu+1, i, n)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestCompiledVUIDs checks vu.id, whose values the compiled form keeps for
// the first ids, against the VU's own id, for ids in any order, kept or
// not, from VUs at once (run it with -race), in two requests sharing the
// kept values.
func TestCompiledVUIDs(t *testing.T) {
	test := mustLoadFiles(t, map[string]string{"test.hcl": `
target "shop" { base_url = "http://127.0.0.1:8080" }
scenario "browse" {
  executor = "constant-vus"
  vus      = 1
  duration = "1s"
  request "a" {
    path = "/${vu.iteration}"
    json = { vu = vu.id, n = vu.iteration }
  }
  request "b" {
    path = "/b"
    json = { id = vu.id }
  }
}
`})
	a, b := test.Scenarios[0].Requests[0], test.Scenarios[0].Requests[1]
	ids := []uint64{1, 2, 3, 0, maxSharedIDs - 1, maxSharedIDs, maxSharedIDs + 7, 2, 1}
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for g := range 4 {
		wg.Go(func() {
			for i := range 200 {
				id := ids[(i+g)%len(ids)]
				for _, r := range []*Request{a, b} {
					v, _, diags := r.Eval(Iteration{VU: id, Iteration: uint64(i), Scenario: "browse"})
					if diags.HasErrors() {
						errs <- diags
						return
					}
					j := v.GetAttr("json")
					name := "vu"
					if r == b {
						name = "id"
					}
					if got, _ := j.GetAttr(name).AsBigFloat().Uint64(); got != id {
						errs <- fmt.Errorf("request %s, VU %d: vu.id = %d", r.Name, id, got)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}
