package config

import (
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
)

// The compiled form of a request's per-call expressions.
//
// Evaluating an expression through HCL on every call costs a new
// EvalContext holding vu, scenario and data as cty objects, a walk of the
// syntax tree, the function machinery's checks, and math/big to format each
// number of a template: about 100 allocations for a POST with a dynamic
// path and JSON body. So at load, each dynamic attribute (and a dynamic let
// and delivery) whose shape allows it is compiled into a tree of nodes that
// read the Iteration directly:
//
//   - a part that uses nothing per call (literals, var, local, a static
//     let, pure functions of those) is evaluated once, at load;
//   - vu.id, vu.iteration, vu.vars.NAME, data.FEEDER, data.FEEDER.COLUMN,
//     scenario.name and, when let is dynamic, let.NAME are read from the
//     Iteration and the call's let;
//   - random_int, random_string, random_choice, uuid and unix_micros with
//     constant arguments draw as their functions do, through the same
//     helpers and the same draws (see functions.go), so a compiled request
//     gives the values HCL gives for the same draws;
//   - a template writes its parts into one buffer, whole numbers with
//     strconv rather than math/big;
//   - an object or tuple constructor builds only its dynamic leaves per
//     call: its constant parts are values made at load.
//
// Anything else (conditionals, operators, other functions, for
// expressions, splats, index steps, dynamic keys) leaves the whole
// attribute to HCL, as before. A compiled node that meets a value it does
// not expect at run time (a capture missing or of another kind, a null in
// a template) gives up, and the attribute is evaluated through HCL for that
// call: the messages stay HCL's own. The differential tests in
// compile_test.go hold both paths to the same values and types.
//
// What is left per call is mostly cty.ObjectVal, for the request's object
// and each dynamic object in it: cty has no way to build an object of a
// type known in advance, so each call builds the type's maps again. The
// map each is built from comes from a pool, as ObjectVal copies it.

// node is a compiled expression.
type node interface {
	// value returns the expression's value in the call, or false when the
	// call needs HCL (see above).
	value(c *call) (cty.Value, bool)
}

// writer is a node that a template can write as text, without building
// a cty value: what convert gives for its value as a string.
type writer interface {
	node
	write(b *strings.Builder, c *call) bool
}

// call is one evaluation of a request's per-call expressions.
type call struct {
	r   *Request
	it  Iteration
	let cty.Value        // the call's let, when it is evaluated per call
	ctx *hcl.EvalContext // for HCL, built on first use
}

// eval returns expr's value in the call: n's when expr was compiled and n
// can, else HCL's, unmarked: a value that reads a sensitive variable is
// marked, and protocols get plain values. The nodes' values are plain.
func (c *call) eval(expr hcl.Expression, n node) (cty.Value, hcl.Diagnostics) {
	if n != nil {
		if v, ok := n.value(c); ok {
			return v, nil
		}
	}
	v, diags := expr.Value(c.context())
	if c.r.extra.mayMark && v.ContainsMarked() {
		v, _ = v.UnmarkDeep()
	}
	return v, diags
}

// setLet records the call's let, for the nodes and for HCL.
func (c *call) setLet(v cty.Value) {
	c.let = v
	if c.ctx != nil {
		c.ctx.Variables[rootLet] = v
	}
}

// context returns the HCL context of the call, built once: the request's
// base (var, local, functions) with scenario, and vu, data and let when
// the request's dynamic expressions use them.
func (c *call) context() *hcl.EvalContext {
	if c.ctx != nil {
		return c.ctx
	}
	r, it := c.r, c.it
	scenario := r.scenarioVal
	if it.Scenario != "" && it.Scenario != r.scenario {
		scenario = scenarioValue(it.Scenario)
	}
	ctx := r.base.NewChild()
	ctx.Variables = map[string]cty.Value{rootScenario: scenario}
	if r.usesVU {
		vu := map[string]cty.Value{
			"id":        cty.NumberUIntVal(it.VU),
			"iteration": cty.NumberUIntVal(it.Iteration),
		}
		if r.usesVars {
			vu[vuVars] = cty.EmptyObjectVal
			if len(it.Vars) > 0 {
				vu[vuVars] = cty.ObjectVal(it.Vars)
			}
		}
		ctx.Variables[rootVU] = cty.ObjectVal(vu)
	}
	if len(r.feeders) > 0 {
		ctx.Variables[rootData] = cty.ObjectVal(it.Data)
	}
	if c.let != cty.NilVal {
		ctx.Variables[rootLet] = c.let
	}
	c.ctx = ctx
	return ctx
}

// compiler compiles the dynamic expressions of one request.
type compiler struct {
	r       *Request         // says which expressions are dynamic
	base    *hcl.EvalContext // evaluates the constant parts at load
	draws   draws            // what the random functions draw from
	ids     *vuIDs           // the values of vu.id, shared by the test's requests
	secrets *secrets         // records the sensitive constants
}

// compile returns expr's compiled form, or nil when HCL must evaluate it.
func (k *compiler) compile(expr hcl.Expression) node {
	if !k.r.isDynamicIn(expr) {
		v, diags := expr.Value(k.base)
		if diags.HasErrors() || !v.IsWhollyKnown() {
			return nil
		}
		// Recorded as a secret if it is one, and plain: what a call
		// builds from it goes to a protocol.
		return constant{k.secrets.plain(v)}
	}
	switch e := expr.(type) {
	case *hclsyntax.ParenthesesExpr:
		return k.compile(e.Expression)
	case *hclsyntax.TemplateWrapExpr:
		return k.compile(e.Wrapped) // "${x}" is x, of x's type
	case *hclsyntax.TemplateExpr:
		return k.template(e)
	case *hclsyntax.ScopeTraversalExpr:
		return k.traversal(e.Traversal)
	case *hclsyntax.FunctionCallExpr:
		return k.function(e)
	case *hclsyntax.ObjectConsExpr:
		return k.object(e)
	case *hclsyntax.TupleConsExpr:
		return k.tuple(e)
	}
	return nil
}

func (k *compiler) template(e *hclsyntax.TemplateExpr) node {
	t := &template{}
	for _, p := range e.Parts {
		switch n := k.compile(p).(type) {
		case constant:
			s, ok := templateString(n.v)
			if !ok {
				return nil // HCL reports it per call
			}
			t.size += len(s)
			if last := len(t.parts) - 1; last >= 0 {
				if l, ok := t.parts[last].(literal); ok {
					t.parts[last] = l + literal(s)
					continue
				}
			}
			t.parts = append(t.parts, literal(s))
		case writer:
			t.size += 16
			t.parts = append(t.parts, n)
		default: // nil, or an object or tuple, which HCL refuses in a template
			return nil
		}
	}
	return t
}

// templateString is v as a template part: what HCL writes, or false when
// HCL refuses it.
func templateString(v cty.Value) (string, bool) {
	if v.IsNull() || !v.IsKnown() || v.IsMarked() {
		return "", false
	}
	s, err := convert.Convert(v, cty.String)
	if err != nil {
		return "", false
	}
	return s.AsString(), true
}

// traversal compiles the per-call references; the others are constant,
// or need HCL (an index step, vu as a whole).
func (k *compiler) traversal(t hcl.Traversal) node {
	names := make([]string, len(t))
	for i, step := range t {
		switch s := step.(type) {
		case hcl.TraverseRoot:
			names[i] = s.Name
		case hcl.TraverseAttr:
			names[i] = s.Name
		default:
			return nil
		}
	}
	switch {
	case names[0] == rootVU && len(names) == 2 && names[1] == "id":
		if k.ids == nil {
			k.ids = &vuIDs{}
		}
		return vuID{k.ids}
	case names[0] == rootVU && len(names) == 2 && names[1] == "iteration":
		return vuIteration{}
	case names[0] == rootVU && len(names) == 3 && names[1] == vuVars:
		return capturedValue(names[2])
	case names[0] == rootData && len(names) == 2:
		return dataRow(names[1])
	case names[0] == rootData && len(names) == 3:
		return dataField{feeder: names[1], column: names[2]}
	case names[0] == rootScenario && len(names) == 2 && names[1] == "name":
		return scenarioName{}
	case names[0] == rootLet && len(names) == 2:
		return letValue(names[1])
	}
	return nil
}

// function compiles the per-call functions when their arguments are
// constant and valid; HCL reports invalid ones.
func (k *compiler) function(e *hclsyntax.FunctionCallExpr) node {
	if e.ExpandFinal {
		return nil
	}
	args := make([]cty.Value, len(e.Args))
	for i, a := range e.Args {
		c, ok := k.compile(a).(constant)
		if !ok {
			return nil
		}
		args[i] = c.v
	}
	switch {
	case e.Name == "random_int" && len(args) == 2:
		lo, ok1 := wholeArg(args[0])
		hi, ok2 := wholeArg(args[1])
		if ok1 && ok2 && lo <= hi {
			return randomInt{d: k.draws, lo: lo, hi: hi, values: smallInts(lo, hi)}
		}
	case e.Name == "random_string" && len(args) == 1:
		if n, ok := wholeArg(args[0]); ok && n >= 0 && n <= maxRandomString {
			return randomString{d: k.draws, n: int(n)}
		}
	case e.Name == "random_choice" && len(args) == 1:
		list := args[0]
		ty := list.Type()
		if list.IsNull() || !(ty.IsListType() || ty.IsSetType() || ty.IsTupleType()) || list.LengthInt() == 0 {
			return nil
		}
		var elems []cty.Value
		for it := list.ElementIterator(); it.Next(); {
			_, v := it.Element()
			elems = append(elems, v)
		}
		return randomChoice{d: k.draws, elems: elems}
	case e.Name == "uuid" && len(args) == 0:
		return uuidNode{d: k.draws}
	case e.Name == "unix_micros" && len(args) == 0:
		return unixMicros{}
	}
	return nil
}

// wholeArg is a number argument as the function receives it, converted
// as HCL converts it: "5" is 5.
func wholeArg(v cty.Value) (int64, bool) {
	n, err := convert.Convert(v, cty.Number)
	if err != nil {
		return 0, false
	}
	return wholeNumber(n)
}

func (k *compiler) object(e *hclsyntax.ObjectConsExpr) node {
	o := &object{keys: make([]string, len(e.Items)), values: make([]node, len(e.Items))}
	for i, item := range e.Items {
		if k.r.isDynamicIn(item.KeyExpr) {
			return nil
		}
		key, diags := item.KeyExpr.Value(k.base)
		if diags.HasErrors() || key.IsNull() || !key.IsKnown() || key.IsMarked() {
			return nil
		}
		key, err := convert.Convert(key, cty.String)
		if err != nil {
			return nil
		}
		if o.values[i] = k.compile(item.ValueExpr); o.values[i] == nil {
			return nil
		}
		o.keys[i] = key.AsString()
	}
	return o
}

func (k *compiler) tuple(e *hclsyntax.TupleConsExpr) node {
	t := make(tuple, len(e.Exprs))
	for i, x := range e.Exprs {
		if t[i] = k.compile(x); t[i] == nil {
			return nil
		}
	}
	return t
}

// constant is a value computed at load.
type constant struct{ v cty.Value }

func (n constant) value(*call) (cty.Value, bool) { return n.v, true }

// literal is a constant part of a template.
type literal string

func (n literal) value(*call) (cty.Value, bool) { return cty.StringVal(string(n)), true }
func (n literal) write(b *strings.Builder, _ *call) bool {
	b.WriteString(string(n))
	return true
}

// template is a string template: its parts written in turn. The whole is
// normalized once, as HCL does.
type template struct {
	parts []writer
	size  int // a guess of the length, to size the buffer once
}

func (n *template) value(c *call) (cty.Value, bool) {
	var b strings.Builder
	b.Grow(n.size)
	if !n.write(&b, c) {
		return cty.NilVal, false
	}
	return cty.StringVal(b.String()), true
}

// write writes the parts straight into an enclosing template: normalizing
// the inner string first, as HCL does, gives the same outer string.
func (n *template) write(b *strings.Builder, c *call) bool {
	for _, p := range n.parts {
		if !p.write(b, c) {
			return false
		}
	}
	return true
}

// object is an object constructor; keys are constant.
type object struct {
	keys   []string
	values []node
	// maps holds the maps value builds the object from, for the next
	// call: cty.ObjectVal copies what it is given.
	maps sync.Pool
}

func (n *object) value(c *call) (cty.Value, bool) {
	// Every key is set below, so a map from the pool needs no clearing;
	// a call that gives up drops it.
	attrs, _ := n.maps.Get().(map[string]cty.Value)
	if attrs == nil {
		attrs = make(map[string]cty.Value, len(n.keys))
	}
	for i, e := range n.values {
		v, ok := e.value(c)
		if !ok {
			return cty.NilVal, false
		}
		attrs[n.keys[i]] = v // a repeated key keeps the last, as in HCL
	}
	o := cty.ObjectVal(attrs)
	n.maps.Put(attrs)
	return o, true
}

// tuple is a tuple constructor.
type tuple []node

func (n tuple) value(c *call) (cty.Value, bool) {
	elems := make([]cty.Value, len(n))
	for i, e := range n {
		v, ok := e.value(c)
		if !ok {
			return cty.NilVal, false
		}
		elems[i] = v
	}
	return cty.TupleVal(elems), true
}

// vuID is vu.id.
type vuID struct{ ids *vuIDs }

// vuIDs holds the values of the first VU ids, each made on first use: a
// VU's id is the same on every call, and the same value lets the protocol
// find it unchanged without reading it (a cty number is a *big.Float,
// made anew on each call otherwise).
type vuIDs [maxSharedIDs]atomic.Pointer[cty.Value]

// maxSharedIDs bounds the VU ids whose values are kept.
const maxSharedIDs = 4096

func (n vuID) value(c *call) (cty.Value, bool) {
	id := c.it.VU
	if id >= maxSharedIDs {
		return cty.NumberUIntVal(id), true
	}
	if v := n.ids[id].Load(); v != nil {
		return *v, true
	}
	v := cty.NumberUIntVal(id)
	n.ids[id].Store(&v) // two calls of one id would store equal values
	return v, true
}

func (vuID) write(b *strings.Builder, c *call) bool {
	return writeUint(b, c.it.VU)
}

// vuIteration is vu.iteration.
type vuIteration struct{}

func (vuIteration) value(c *call) (cty.Value, bool) { return cty.NumberUIntVal(c.it.Iteration), true }
func (vuIteration) write(b *strings.Builder, c *call) bool {
	return writeUint(b, c.it.Iteration)
}

// capturedValue is vu.vars.NAME. A missing one is HCL's to report.
type capturedValue string

func (n capturedValue) value(c *call) (cty.Value, bool) {
	v, ok := c.it.Vars[string(n)]
	if !ok || !v.IsKnown() || v.IsMarked() {
		return cty.NilVal, false
	}
	return v, true
}

func (n capturedValue) write(b *strings.Builder, c *call) bool { return writeValue(b, n, c) }

// dataRow is data.FEEDER, the whole row.
type dataRow string

func (n dataRow) value(c *call) (cty.Value, bool) {
	row, ok := c.it.Data[string(n)]
	if !ok || !row.IsKnown() || row.IsMarked() {
		return cty.NilVal, false
	}
	return row, true
}

func (n dataRow) write(b *strings.Builder, c *call) bool { return writeValue(b, n, c) }

// dataField is data.FEEDER.COLUMN.
type dataField struct{ feeder, column string }

func (n dataField) value(c *call) (cty.Value, bool) {
	row, ok := c.it.Data[n.feeder]
	if !ok || row.IsNull() || !row.IsKnown() || row.IsMarked() || !row.Type().IsObjectType() || !row.Type().HasAttribute(n.column) {
		return cty.NilVal, false
	}
	return row.GetAttr(n.column), true
}

func (n dataField) write(b *strings.Builder, c *call) bool { return writeValue(b, n, c) }

// scenarioName is scenario.name.
type scenarioName struct{}

func (scenarioName) name(c *call) string {
	if c.it.Scenario != "" {
		return c.it.Scenario
	}
	return c.r.scenario
}

func (n scenarioName) value(c *call) (cty.Value, bool) { return cty.StringVal(n.name(c)), true }
func (n scenarioName) write(b *strings.Builder, c *call) bool {
	b.WriteString(n.name(c)) // the template normalizes the whole
	return true
}

// letValue is let.NAME when let is evaluated per call.
type letValue string

func (n letValue) value(c *call) (cty.Value, bool) {
	l := c.let
	if l == cty.NilVal || l.IsNull() || !l.IsKnown() || l.IsMarked() || !l.Type().IsObjectType() || !l.Type().HasAttribute(string(n)) {
		return cty.NilVal, false // a map, say: HCL indexes it
	}
	return l.GetAttr(string(n)), true
}

func (n letValue) write(b *strings.Builder, c *call) bool { return writeValue(b, n, c) }

// randomInt is random_int(lo, hi).
type randomInt struct {
	d      draws
	lo, hi int64
	values []cty.Value // lo..hi made at load, when they are few
}

func (n randomInt) value(*call) (cty.Value, bool) {
	i := drawInt(n.d, n.lo, n.hi)
	if n.values != nil {
		return n.values[i-n.lo], true
	}
	return cty.NumberIntVal(i), true
}

// maxSmallInts bounds the values of a random_int made at load.
const maxSmallInts = 1024

// smallInts returns the numbers lo..hi as values, or nil when they are
// many: a cty number is a *big.Float, allocated on every call otherwise.
// Values are never modified, so the calls can share them.
func smallInts(lo, hi int64) []cty.Value {
	if uint64(hi)-uint64(lo) >= maxSmallInts {
		return nil
	}
	values := make([]cty.Value, hi-lo+1)
	for i := range values {
		values[i] = cty.NumberIntVal(lo + int64(i))
	}
	return values
}

func (n randomInt) write(b *strings.Builder, _ *call) bool {
	var buf [20]byte
	b.Write(strconv.AppendInt(buf[:0], drawInt(n.d, n.lo, n.hi), 10))
	return true
}

// randomString is random_string(n).
type randomString struct {
	d draws
	n int
}

func (n randomString) value(*call) (cty.Value, bool) {
	var b strings.Builder
	drawString(&b, n.d, n.n)
	return cty.StringVal(b.String()), true
}

func (n randomString) write(b *strings.Builder, _ *call) bool {
	drawString(b, n.d, n.n)
	return true
}

// randomChoice is random_choice(list), its elements listed at load in the
// order the function walks them.
type randomChoice struct {
	d     draws
	elems []cty.Value
}

func (n randomChoice) value(*call) (cty.Value, bool) { return n.elems[n.d.IntN(len(n.elems))], true }
func (n randomChoice) write(b *strings.Builder, c *call) bool {
	return writeValue(b, n, c)
}

// uuidNode is uuid().
type uuidNode struct{ d draws }

func (n uuidNode) value(*call) (cty.Value, bool) {
	id, err := drawUUID(n.d)
	if err != nil {
		return cty.NilVal, false // HCL draws again and reports
	}
	return cty.StringVal(id), true
}

func (n uuidNode) write(b *strings.Builder, _ *call) bool {
	id, err := drawUUID(n.d)
	b.WriteString(id)
	return err == nil
}

// unixMicros is unix_micros().
type unixMicros struct{}

func (unixMicros) value(*call) (cty.Value, bool) {
	return cty.NumberIntVal(time.Now().UnixMicro()), true
}
func (unixMicros) write(b *strings.Builder, _ *call) bool {
	var buf [20]byte
	b.Write(strconv.AppendInt(buf[:0], time.Now().UnixMicro(), 10))
	return true
}

// writeUint writes a whole number as convert would, without math/big.
func writeUint(b *strings.Builder, u uint64) bool {
	var buf [20]byte
	b.Write(strconv.AppendUint(buf[:0], u, 10))
	return true
}

// writeValue writes n's value as a template part, as convert does, or
// returns false for what HCL refuses in a template (null, a collection).
func writeValue(b *strings.Builder, n node, c *call) bool {
	v, ok := n.value(c)
	if !ok || v.IsNull() || !v.IsKnown() || v.IsMarked() {
		return false
	}
	switch v.Type() {
	case cty.String:
		b.WriteString(v.AsString())
	case cty.Bool:
		b.WriteString(strconv.FormatBool(v.True()))
	case cty.Number:
		b.WriteString(v.AsBigFloat().Text('f', -1))
	default:
		return false
	}
	return true
}
