package config

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"

	"github.com/hload/hload/protocols"
)

// blockCheck is the type of the check blocks inside a request.
const blockCheck = "check"

// The attributes every request has, whatever its protocol.
const (
	requestTarget    = "target"
	requestWeight    = "weight"
	requestLet       = "let"
	requestDelivery  = "delivery"
	requestOnFailure = "on_failure"
	requestMaxBody   = "max_body"
)

// The values of on_failure: what a flow does when this step fails.
const (
	onFailureStop     = "stop"
	onFailureContinue = "continue"
)

// rootLet is the root under which a request's other attributes see its let
// values, as in let.uid.
const rootLet = "let"

// deliveryAttributes are the attributes of a request's delivery object.
var deliveryAttributes = []string{"key", "id"}

// requestWhere names the static attributes of a request in messages.
const requestWhere = "This request attribute"

// requestCoreSchema is the schema of a request whose protocol is unknown:
// its protocol attributes cannot be checked, and the reason is already
// reported.
var requestCoreSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: requestTarget}, {Name: requestWeight}, {Name: requestLet}, {Name: requestDelivery}, {Name: requestOnFailure},
		{Name: requestMaxBody},
	},
	Blocks: []hcl.BlockHeaderSchema{{Type: blockCheck}, {Type: blockCapture}},
}

// requestExtras are the protocol-independent attributes of a request that
// are evaluated per call: let, whose values the other attributes share,
// and delivery, which the core records in the run's ledger of sent ids.
type requestExtras struct {
	let        hcl.Expression // nil when the request has no let
	letNode    node           // let compiled, when it is dynamic and can be
	letDynamic bool           // let is evaluated per call
	letValue   cty.Value      // let's value when static, else its sample value
	letNames   []string       // let's attribute names, for messages

	delivery        hcl.Expression // set when delivery is evaluated per call
	deliveryNode    node           // delivery compiled, when it can be
	deliveryStatic  Delivery       // the delivery when it is static
	deliveryDecl    hcl.Range      // the delivery attribute, for run-time messages
	hasLetReference bool           // a dynamic expression uses let
	// mayMark is set when a per-call value may be marked sensitive
	// (see loader.mayMark): call.eval then unmarks it.
	mayMark bool

	// attrMaps holds the maps Eval builds a request's object from, for
	// the next call: cty.ObjectVal copies what it is given, and a map of
	// every attribute is most of a call's garbage otherwise.
	attrMaps *sync.Pool
	// calls holds Eval's call states for the next call; nil leaves Eval
	// to allocate one per call.
	calls *sync.Pool
	// shape is the request's shape and holes, for EvalHoles (holes.go).
	shape shape
}

// Delivery is what a request's delivery attribute says about one call: the
// key subscribers watch, and the id of the event the call sends. Set is
// false when the request has no delivery attribute.
type Delivery struct {
	Set bool
	Key string
	ID  string
}

// requestTargetSchema picks the target attribute out first, because the
// target's protocol decides the rest of the schema.
var requestTargetSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: requestTarget}},
}

// checkSchema is the schema of a check block.
var checkSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "status"}, {Name: "body_contains"}},
}

// vuAttributes and scenarioAttributes are the per-iteration values.
var (
	vuAttributes       = []string{"id", "iteration", vuVars}
	scenarioAttributes = []string{"name"}
)

// vuVars is the attribute of vu that holds the VU's captured values.
const vuVars = "vars"

// specAttr is one protocol attribute of a request: key in the result
// object, and the spec that names and types it in HCL.
type specAttr struct {
	key  string
	spec *hcldec.AttrSpec
}

// sampleContext evaluates a per-iteration expression once at load, with
// the values of the first iteration of the first VU, so that type errors
// and unknown functions show up before the run. decodeSteps adds, for each
// request, vu (see sampleVU) and the random functions, drawn from a fixed
// seed, so that the verdict is the same on every load.
func (l *loader) sampleContext(scenario string) *hcl.EvalContext {
	ctx := l.base.NewChild()
	ctx.Variables = map[string]cty.Value{
		rootScenario: scenarioValue(scenario),
		rootData:     l.sampleData(),
	}
	return ctx
}

// sampleVU is vu in a request's sample context: the first iteration of the
// first VU, with an unknown value for each name in vars, the names the
// request may read as vu.vars. A captured value is known only at run
// time, so the type checks of an expression that reads one wait for it.
func sampleVU(vars []string) cty.Value {
	values := cty.EmptyObjectVal
	if len(vars) > 0 {
		m := make(map[string]cty.Value, len(vars))
		for _, n := range vars {
			m[n] = cty.DynamicVal
		}
		values = cty.ObjectVal(m)
	}
	return cty.ObjectVal(map[string]cty.Value{
		"id":        cty.NumberUIntVal(1),
		"iteration": cty.NumberUIntVal(0),
		"vars":      values,
	})
}

// sampleData is data for sampleContext: row 0 of each feeder, or an unknown
// value for a feeder that could not be loaded, as that is reported.
func (l *loader) sampleData() cty.Value {
	rows := make(map[string]cty.Value, len(l.feeders))
	for name, e := range l.feeders {
		if e.ok {
			rows[name] = e.feeder.Row(0)
		} else {
			rows[name] = cty.DynamicVal
		}
	}
	return cty.ObjectVal(rows)
}

func scenarioValue(name string) cty.Value {
	return cty.ObjectVal(map[string]cty.Value{"name": cty.StringVal(name)})
}

// decodeRequest decodes a request block; scope says where it sits in its
// scenario and which captured values it may read.
func (l *loader) decodeRequest(scenario string, b *hcl.Block, def scenarioTarget, sample *hcl.EvalContext, scope *varScope) (*Request, hcl.Diagnostics) {
	r := &Request{
		Name:        b.Labels[0],
		Weight:      1,
		DeclRange:   b.DefRange,
		base:        l.base,
		scenario:    scenario,
		scenarioVal: scenarioValue(scenario),
		vars:        scope,
	}
	defer func() { r.vars = nil }() // only loading needs it
	var diags hcl.Diagnostics

	// The second Content call below reports any problem of this first pass.
	first, _, _ := b.Body.PartialContent(requestTargetSchema)
	entry, d := l.resolveTarget(r, first.Attributes[requestTarget], def)
	diags = append(diags, d...)

	var content *hcl.BodyContent
	var attrs []specAttr
	if entry != nil && entry.info != nil {
		r.Target, r.Protocol = entry.target.Name, entry.target.Protocol
		var schema *hcl.BodySchema
		schema, attrs = requestSchema(entry.info.RequestSpec)
		content, d = b.Body.Content(schema)
	} else {
		content, _, d = b.Body.PartialContent(requestCoreSchema)
	}
	diags = append(diags, d...)
	contentOK := !d.HasErrors() // no attribute missing or unknown

	if attr := content.Attributes[requestWeight]; attr != nil {
		if d := stepWeightDiag(scope, attr); d != nil {
			diags = append(diags, d)
		} else {
			w, ok, d := l.intAttr(attr, 1, "the request's share of the scenario's mix", requestWhere)
			diags = append(diags, d...)
			if ok {
				r.Weight = w
			}
		}
	}
	if attr := content.Attributes[requestOnFailure]; attr != nil {
		diags = append(diags, l.decodeOnFailure(r, attr)...)
	}
	r.MaxBody = DefaultMaxBody
	if entry != nil && entry.target.MaxBody > 0 {
		r.MaxBody = entry.target.MaxBody
	}
	if attr := content.Attributes[requestMaxBody]; attr != nil {
		n, ok, d := l.byteSizeAttr(attr, requestWhere)
		diags = append(diags, d...)
		if ok {
			r.MaxBody = n
		}
	}
	for _, cb := range content.Blocks {
		if cb.Type != blockCheck {
			continue
		}
		c, d := l.decodeCheck(cb)
		diags = append(diags, d...)
		r.Checks = append(r.Checks, c)
	}
	diags = append(diags, l.decodeCaptures(r, content.Blocks)...)
	if entry != nil && entry.info != nil {
		diags = append(diags, l.decodeLet(r, content.Attributes[requestLet], sample)...)
		base, sample := r.letContexts(l.base, sample)
		r.base = base
		samples, d := l.decodeRequestAttributes(r, content, attrs, sample)
		diags = append(diags, d...)
		diags = append(diags, l.decodeDelivery(r, content.Attributes[requestDelivery], sample)...)
		if contentOK && !d.HasErrors() {
			// A value already reported would be reported again.
			diags = append(diags, l.validateRequest(r, content, attrs, samples)...)
		}
	}
	return r, diags
}

// DefaultMaxBody is the most of a response body kept for the captures
// that read it (json, regex) when neither the request nor its target sets
// max_body: 1 MiB holds the JSON or HTML a journey captures from, and
// bounds what a VU holds while it reads a body.
const DefaultMaxBody = 1 << 20

// maxMaxBody bounds max_body: a body kept whole above it belongs in no
// load test's memory, times its VUs.
const maxMaxBody = 1 << 30

// byteSizeAttr evaluates a static size in bytes: a whole number of
// bytes, or a string with a unit, such as "512KiB" or "4MiB" (KiB, MiB
// and GiB count in 1024s; kB, MB and GB in 1000s), from 1 byte to 1 GiB.
func (l *loader) byteSizeAttr(attr *hcl.Attribute, where string) (int64, bool, hcl.Diagnostics) {
	v, diags := l.evalStatic(attr.Expr, where)
	if diags.HasErrors() || !v.IsWhollyKnown() || v.IsNull() {
		return 0, false, diags
	}
	n, err := byteSize(v)
	if err != nil {
		return 0, false, append(diags, errorDiag(attr.Expr.Range(), "Invalid "+attr.Name,
			"%s is a size in bytes, such as 1048576, \"512KiB\" or \"4MiB\", from 1 byte to 1GiB: %s.", attr.Name, err))
	}
	return n, true, diags
}

// byteUnits are the units of a size, lower-cased.
var byteUnits = map[string]float64{
	"": 1, "b": 1,
	"kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30,
	"kb": 1e3, "mb": 1e6, "gb": 1e9,
}

// byteSize reads a size: a number of bytes, or a string of a number and
// a unit.
func byteSize(v cty.Value) (int64, error) {
	var f float64
	switch v.Type() {
	case cty.Number:
		f, _ = v.AsBigFloat().Float64()
		if n, whole := wholeNumber(v); !whole {
			return 0, fmt.Errorf("got %s, which is not a whole number of bytes", numberString(v))
		} else if n < 1 || n > maxMaxBody {
			return 0, fmt.Errorf("got %s", numberString(v))
		}
		return int64(f), nil
	case cty.String:
		s := strings.TrimSpace(v.AsString())
		i := strings.IndexFunc(s, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
		if i < 0 {
			i = len(s)
		}
		unit, ok := byteUnits[strings.ToLower(strings.TrimSpace(s[i:]))]
		num, err := strconv.ParseFloat(s[:i], 64)
		if !ok || err != nil || s[:i] == "" {
			return 0, fmt.Errorf("got %q; write a number and one of the units B, KiB, MiB, GiB, kB, MB, GB", v.AsString())
		}
		f = math.Floor(num * unit)
		if f < 1 || f > maxMaxBody {
			return 0, fmt.Errorf("got %q", v.AsString())
		}
		return int64(f), nil
	}
	return 0, fmt.Errorf("got %s", friendlyValue(v))
}

// stepWeightDiag returns a diagnostic when a step of a setup or a flow
// has a weight, or nil: the flow is picked by weight, not its steps.
func stepWeightDiag(scope *varScope, attr *hcl.Attribute) *hcl.Diagnostic {
	if scope == nil {
		return nil
	}
	switch g := scope.step.group; g.kind {
	case groupSetup:
		return errorDiag(attr.NameRange, "weight in a setup step",
			"The steps of a setup run once per virtual user, each in turn, before its first iteration; none is picked by weight. Remove weight.")
	case groupFlow:
		return errorDiag(attr.NameRange, "weight in a flow step",
			"A flow's steps all run, in order, each time the flow is picked, so a step has no weight of its own: the flow has it. Remove weight here, and set it on flow %q (weight = N in the flow block; the default is 1).",
			g.flow.Name)
	}
	return nil
}

// decodeOnFailure reads on_failure: "stop" (the default) ends the flow at
// this step when it fails, "continue" goes on to the next step.
func (l *loader) decodeOnFailure(r *Request, attr *hcl.Attribute) hcl.Diagnostics {
	s, ok, diags := l.stringAttr(attr, requestWhere)
	if !ok {
		return diags
	}
	switch s {
	case onFailureStop:
	case onFailureContinue:
		r.ContinueOnFailure = true
	default:
		options := []string{onFailureStop, onFailureContinue}
		diags = append(diags, errorDiag(attr.Expr.Range(), "Invalid on_failure",
			`on_failure says what a flow does when this step fails: %q (the default) ends the flow here, %q goes on to the next step. Got %q.%s`,
			onFailureStop, onFailureContinue, s, didYouMean(s, options)))
	}
	return diags
}

// decodeLet decodes a request's let attribute: an object whose values the
// request's other attributes read as let.<name>, evaluated once per call,
// so that two attributes can share one random value.
func (l *loader) decodeLet(r *Request, attr *hcl.Attribute, sample *hcl.EvalContext) hcl.Diagnostics {
	if attr == nil {
		return nil
	}
	for _, t := range attr.Expr.Variables() {
		if t.RootName() == rootLet {
			return hcl.Diagnostics{errorDiag(t.SourceRange(), "let cannot use let",
				"The values of let are evaluated before the request's other attributes, so they cannot refer to each other. Compute each one from vu, scenario, data, var, local or functions.")}
		}
	}
	// In the loader's base: r's own base, which sees let, comes after.
	v, dynamic, diags := l.evalAtLoad(r, attr.Expr, l.base, sample)
	if diags.HasErrors() {
		return diags
	}
	// An object is known even when some of its values read captured
	// values, which are known only at run time.
	if !v.IsWhollyKnown() && !(v.IsKnown() && dynamic) {
		if !v.IsKnown() && readsVars(attr.Expr) {
			diags = append(diags, errorDiag(attr.Expr.Range(), "Invalid let",
				"let must be an object of named values, such as let = { token = vu.vars.token }; a captured value on its own is not one."))
		}
		return diags
	}
	if v.IsNull() || !(v.Type().IsObjectType() || v.Type().IsMapType()) {
		return append(diags, errorDiag(attr.Expr.Range(), "Invalid let",
			"let must be an object of named values, such as let = { uid = random_int(1, 5) }; got %s.", friendlyValue(v)))
	}
	x := &r.extra
	// The contexts keep let as it is, marks and all, so that a message
	// about an expression that reads let.x does not print a sensitive x.
	x.let, x.letDynamic, x.letValue = attr.Expr, dynamic, v
	x.mayMark = x.mayMark || v.ContainsMarked()
	for it := l.secrets.plain(v).ElementIterator(); it.Next(); {
		k, _ := it.Element()
		x.letNames = append(x.letNames, k.AsString())
	}
	sort.Strings(x.letNames)
	if dynamic {
		l.noteDynamic(r, attr.Expr)
		x.letNode = l.compiler(r, l.base).compile(attr.Expr)
	}
	return diags
}

// compiler returns the compiler of r's dynamic expressions, whose constant
// parts are evaluated in base.
func (l *loader) compiler(r *Request, base *hcl.EvalContext) *compiler {
	if l.vuIDs == nil {
		l.vuIDs = &vuIDs{}
	}
	return &compiler{r: r, base: base, draws: l.draws, ids: l.vuIDs, secrets: l.secrets}
}

// letContexts returns the contexts a request's attributes are evaluated
// in at load: base for static ones, which sees a static let, and sample
// for dynamic ones, which sees let's sample value.
func (r *Request) letContexts(base, sample *hcl.EvalContext) (*hcl.EvalContext, *hcl.EvalContext) {
	x := &r.extra
	if x.let == nil {
		return base, sample
	}
	if !x.letDynamic {
		base = base.NewChild()
		base.Variables = map[string]cty.Value{rootLet: x.letValue}
	}
	sample = sample.NewChild()
	sample.Variables = map[string]cty.Value{rootLet: x.letValue}
	return base, sample
}

// evalAtLoad checks the references of one of r's expressions and
// evaluates it at load: in base when it is static, and with sample values,
// to catch mistakes, when it must be evaluated per call (dynamic).
func (l *loader) evalAtLoad(r *Request, expr hcl.Expression, base, sample *hcl.EvalContext) (v cty.Value, dynamic bool, diags hcl.Diagnostics) {
	if d := l.checkRequestReferences(r, expr); d.HasErrors() {
		return cty.NilVal, false, d
	}
	dynamic = r.isDynamicIn(expr)
	ctx := base
	if dynamic {
		ctx = sample
	}
	v, diags = expr.Value(ctx)
	return v, dynamic, diags
}

// isDynamicIn reports whether expr must be evaluated per call in r: it is
// dynamic itself, or it uses a let that is.
func (r *Request) isDynamicIn(expr hcl.Expression) bool {
	return isDynamic(expr) || (r.extra.letDynamic && usesRoot(expr, rootLet))
}

// noteDynamic records what a dynamic expression of r needs per call: the
// vu object, and the rows of the data blocks it reads.
func (l *loader) noteDynamic(r *Request, expr hcl.Expression) {
	l.recordSensitiveParts(r, expr)
	r.extra.mayMark = r.extra.mayMark || l.mayMark(expr)
	r.usesVU = r.usesVU || usesRoot(expr, rootVU)
	r.usesVars = r.usesVars || readsVars(expr)
	r.extra.hasLetReference = r.extra.hasLetReference || usesRoot(expr, rootLet)
	used := map[string]bool{}
	for _, t := range expr.Variables() {
		if t.RootName() == rootData && len(t) > 1 {
			used[stepName(t[1])] = true
		}
	}
	if len(used) == 0 {
		return
	}
	// The feeders stay in declaration order, whatever the order of use.
	var feeders []*Feeder
	for _, f := range l.test.Feeders {
		if used[f.Name] || slices.Contains(r.feeders, f) {
			feeders = append(feeders, f)
		}
	}
	r.feeders = feeders
}

// decodeDelivery decodes a request's delivery attribute, { key, id }: the
// core records each successful call's id under its key in the run's
// ledger, so that subscribers to the key can count what they missed.
func (l *loader) decodeDelivery(r *Request, attr *hcl.Attribute, sample *hcl.EvalContext) hcl.Diagnostics {
	if attr == nil {
		return nil
	}
	v, dynamic, diags := l.evalAtLoad(r, attr.Expr, r.base, sample)
	if diags.HasErrors() || !v.IsWhollyKnown() && !dynamic {
		return diags
	}
	d, err := deliveryFromValue(v)
	if err != nil {
		return append(diags, errorDiag(attr.Expr.Range(), "Invalid delivery", "%s.", err))
	}
	x := &r.extra
	x.deliveryDecl = attr.Expr.Range()
	if dynamic {
		x.delivery = attr.Expr
		x.deliveryNode = l.compiler(r, r.base).compile(attr.Expr)
		l.noteDynamic(r, attr.Expr)
	} else {
		x.deliveryStatic = d
	}
	return diags
}

// deliveryFromValue reads a delivery object.
func deliveryFromValue(v cty.Value) (Delivery, error) {
	const form = `delivery is an object with a key and an id, such as delivery = { key = "user-${let.uid}", id = "${vu.id}-${vu.iteration}" }`
	v, _ = v.UnmarkDeep()
	if v.IsNull() || !(v.Type().IsObjectType() || v.Type().IsMapType()) {
		return Delivery{}, fmt.Errorf("%s; got %s", form, friendlyValue(v))
	}
	d := Delivery{Set: true}
	for it := v.ElementIterator(); it.Next(); {
		k, e := it.Element()
		name := k.AsString()
		if !slices.Contains(deliveryAttributes, name) {
			return Delivery{}, fmt.Errorf("delivery has no attribute %q.%s It has \"key\" and \"id\"", name, didYouMean(name, deliveryAttributes))
		}
		s, err := convert.Convert(e, cty.String)
		if err == nil && !s.IsKnown() {
			continue // it reads a captured value, checked per call
		}
		if err != nil || s.IsNull() || s.AsString() == "" {
			return Delivery{}, fmt.Errorf("delivery's %s must be a non-empty string; got %s", name, friendlyValue(e))
		}
		if name == "key" {
			d.Key = s.AsString()
		} else {
			d.ID = s.AsString()
		}
	}
	if !v.IsWhollyKnown() {
		return d, nil // a value that reads a captured value is checked per call
	}
	if d.Key == "" || d.ID == "" {
		return Delivery{}, fmt.Errorf("%s; both are required", form)
	}
	return d, nil
}

// validateRequest asks r's protocol, when it can, to check r's values with
// the decoder its client uses per call. Dynamic attributes are checked
// with their sample values, the ones decodeRequestAttributes computed.
func (l *loader) validateRequest(r *Request, content *hcl.BodyContent, attrs []specAttr, samples map[string]cty.Value) hcl.Diagnostics {
	p, ok := l.opts.Protocols.Lookup(r.Protocol)
	if !ok {
		return nil
	}
	v, ok := p.(protocols.RequestValidator)
	if !ok {
		return nil
	}
	values := make(map[string]cty.Value, len(r.types))
	maps.Copy(values, r.static)
	for _, a := range r.dynamic {
		key := a.key
		s, ok := samples[key]
		if !ok {
			return nil // reported when the attribute was decoded
		}
		if !s.IsWhollyKnown() {
			// It reads a captured value: the protocol checks it per call.
			s = cty.NullVal(r.types[key])
		}
		values[key] = s
	}
	name, err := v.ValidateRequest(cty.ObjectVal(values))
	if err == nil {
		return nil
	}
	rng := r.DeclRange
	for _, sa := range attrs {
		if a := content.Attributes[sa.spec.Name]; sa.key == name && a != nil {
			rng = a.Expr.Range()
		}
	}
	return hcl.Diagnostics{validatorDiag(rng, name, "request", err)}
}

// requestSchema returns the schema of a request to a protocol: the core
// attributes, the check block and the protocol's attributes in key order.
// Entries that are not attributes, or that reuse a core name, are skipped:
// the protocols package documents that they are not allowed.
func requestSchema(spec hcldec.ObjectSpec) (*hcl.BodySchema, []specAttr) {
	schema := &hcl.BodySchema{
		Attributes: append([]hcl.AttributeSchema{}, requestCoreSchema.Attributes...),
		Blocks:     requestCoreSchema.Blocks,
	}
	keys := make([]string, 0, len(spec))
	for k := range spec {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var attrs []specAttr
	used := map[string]bool{}
	for _, a := range requestCoreSchema.Attributes {
		used[a.Name] = true
	}
	for _, k := range keys {
		as, ok := spec[k].(*hcldec.AttrSpec)
		if !ok || as == nil || used[as.Name] {
			continue
		}
		used[as.Name] = true
		schema.Attributes = append(schema.Attributes, hcl.AttributeSchema{Name: as.Name, Required: as.Required})
		attrs = append(attrs, specAttr{key: k, spec: as})
	}
	return schema, attrs
}

// resolveTarget finds the target of a request: its own target attribute,
// else its scenario's, else the only target of the test.
func (l *loader) resolveTarget(r *Request, attr *hcl.Attribute, def scenarioTarget) (*targetEntry, hcl.Diagnostics) {
	switch {
	case attr != nil:
		name, ok, diags := l.stringAttr(attr, requestWhere)
		if !ok {
			return nil, diags
		}
		e, d := l.lookupTarget(name, attr.Expr.Range())
		return e, append(diags, d...)
	case def.set:
		if !def.ok {
			return nil, nil // reported on the scenario
		}
		return l.targets[def.name], nil
	case len(l.targetNames) == 1:
		return l.targets[l.targetNames[0]], nil
	case len(l.targetNames) == 0:
		return nil, hcl.Diagnostics{errorDiag(r.DeclRange, "No target",
			`Request %q has nowhere to go: the test declares no target block. Add one, such as target "shop" { base_url = "http://127.0.0.1:8080" }.`,
			r.Name)}
	}
	return nil, hcl.Diagnostics{errorDiag(r.DeclRange, "Which target?",
		"Request %q does not say which target it uses, and the test has %d: %s. Set target in the request, or in its scenario for all its requests.",
		r.Name, len(l.targetNames), quoteList(l.targetNames))}
}

// lookupTarget returns the declared target name, or a diagnostic on rng.
func (l *loader) lookupTarget(name string, rng hcl.Range) (*targetEntry, hcl.Diagnostics) {
	if e, ok := l.targets[name]; ok {
		return e, nil
	}
	return nil, hcl.Diagnostics{errorDiag(rng, fmt.Sprintf("Unknown target %q", name),
		"No target block is named %q.%s Declared targets: %s.",
		name, didYouMean(name, l.targetNames), quoteList(l.targetNames))}
}

// decodeCheck decodes a check block.
func (l *loader) decodeCheck(b *hcl.Block) (Check, hcl.Diagnostics) {
	c := Check{DeclRange: b.DefRange}
	content, diags := b.Body.Content(checkSchema)
	if attr := content.Attributes["status"]; attr != nil {
		v, d := l.evalStatic(attr.Expr, "A check block")
		diags = append(diags, d...)
		if !d.HasErrors() && v.IsWhollyKnown() && !v.IsNull() {
			if v.Type() == cty.Number {
				v = cty.TupleVal([]cty.Value{v}) // status = 200 means [200]
			}
			c.Status, d = checkStatuses(attr, v)
			diags = append(diags, d...)
		}
	}
	if attr := content.Attributes["body_contains"]; attr != nil {
		s, _, d := l.stringAttr(attr, "A check block")
		diags = append(diags, d...)
		c.BodyContains = s
	}
	return c, diags
}

// checkStatuses reads the list of allowed statuses of a check.
func checkStatuses(attr *hcl.Attribute, v cty.Value) ([]int, hcl.Diagnostics) {
	lv, err := convert.Convert(v, cty.List(cty.Number))
	if err != nil {
		return nil, hcl.Diagnostics{typeDiag(attr, fmt.Errorf("a list of status codes such as [200, 201] is required"))}
	}
	var statuses []int
	for it := lv.ElementIterator(); it.Next(); {
		_, ev := it.Element()
		n, ok := wholeNumber(ev)
		if ev.IsNull() || !ok || n < 0 || n > maxInt {
			return nil, hcl.Diagnostics{errorDiag(attr.Expr.Range(), "Invalid status",
				"A status is a whole number such as 200; got %s.", friendlyValue(ev))}
		}
		statuses = append(statuses, int(n))
	}
	return statuses, nil
}

// decodeRequestAttributes evaluates the protocol attributes of r: static
// ones now, and dynamic ones once with sample values to catch mistakes. It
// returns the dynamic ones' sample values, for the protocol's validator:
// evaluating them again would draw other random values than the ones just
// checked.
func (l *loader) decodeRequestAttributes(r *Request, content *hcl.BodyContent, attrs []specAttr, sample *hcl.EvalContext) (map[string]cty.Value, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	samples := map[string]cty.Value{}
	r.types = make(map[string]cty.Type, len(attrs))
	r.static = make(map[string]cty.Value, len(attrs))
	for _, sa := range attrs {
		r.types[sa.key] = sa.spec.Type
		r.static[sa.key] = cty.NullVal(sa.spec.Type)
		attr := content.Attributes[sa.spec.Name]
		if attr == nil {
			continue
		}
		v, dynamic, d := l.evalAtLoad(r, attr.Expr, r.base, sample)
		diags = append(diags, d...)
		// A dynamic value may be unknown until run time, when it reads a
		// captured value; a static one is unknown only after a mistake.
		if d.HasErrors() || !v.IsWhollyKnown() && !dynamic {
			continue
		}
		v, err := convert.Convert(v, sa.spec.Type)
		if err != nil {
			diags = append(diags, typeDiag(attr, err))
			continue
		}
		v = l.secrets.plain(v) // protocols get plain values
		if dynamic {
			if r.extra.attrMaps == nil {
				r.extra.attrMaps, r.extra.calls = &sync.Pool{}, &sync.Pool{}
			}
			// attrs are in key order, and so are the dynamic ones.
			r.dynamic = append(r.dynamic, dynamicAttr{
				key:  sa.key,
				expr: attr.Expr,
				ty:   sa.spec.Type,
				node: l.compiler(r, r.base).compile(attr.Expr),
			})
			l.noteDynamic(r, attr.Expr)
			delete(r.static, sa.key)
			samples[sa.key] = v
		} else {
			r.static[sa.key] = v
		}
	}
	if len(r.dynamic) == 0 {
		r.value = cty.ObjectVal(r.static)
	}
	return samples, diags
}

// checkRequestReferences reports references to per-iteration values that
// do not exist. hcl would report them too, but without saying what exists.
func (l *loader) checkRequestReferences(r *Request, expr hcl.Expression) hcl.Diagnostics {
	var diags hcl.Diagnostics
	for _, t := range expr.Variables() {
		var valid []string
		switch t.RootName() {
		case rootVU:
			valid = vuAttributes
		case rootScenario:
			valid = scenarioAttributes
		case rootLet:
			if r.extra.let == nil {
				diags = append(diags, errorDiag(t.SourceRange(), "No let in this request",
					"%s refers to the request's let values, but request %q has no let attribute. Add one, such as let = { uid = random_int(1, 5) }.",
					traversalString(t), r.Name))
				continue
			}
			valid = r.extra.letNames
		case rootData:
			if d := l.checkDataReference(t); d != nil {
				diags = append(diags, d)
			}
			continue
		default:
			continue
		}
		if len(t) < 2 {
			continue // the whole object, as in jsonencode(vu)
		}
		name := stepName(t[1])
		if !slices.Contains(valid, name) {
			diags = append(diags, errorDiag(t.SourceRange(), "Unsupported attribute",
				"%s has no attribute %q.%s It has %s.",
				t.RootName(), name, didYouMean(name, valid), quoteList(valid)))
			continue
		}
		if t.RootName() == rootVU && name == vuVars && len(t) > 2 {
			if d := r.vars.check(t); d != nil {
				diags = append(diags, d)
			}
		}
	}
	return diags
}

// checkDataReference returns a diagnostic when t, such as
// data.users.email, names no data block or no column of it, or nil.
func (l *loader) checkDataReference(t hcl.Traversal) *hcl.Diagnostic {
	if len(t) < 2 {
		return errorDiag(t.SourceRange(), "Incomplete data reference",
			"Name a data block and a column, such as data.users.email. Data blocks: %s.", quoteList(l.feederNames))
	}
	name := stepName(t[1])
	if name == "" {
		return errorDiag(t.SourceRange(), "Invalid data reference",
			"Name a data block and a column, such as data.users.email. Data blocks: %s.", quoteList(l.feederNames))
	}
	e := l.feeders[name]
	if e == nil {
		return errorDiag(t.SourceRange(), fmt.Sprintf("Unknown data block %q", name),
			`No data block is named %q.%s Data blocks: %s. Declare one, such as data "csv" "users" { path = "users.csv" }.`,
			name, didYouMean(name, l.feederNames), quoteList(l.feederNames))
	}
	if !e.ok || len(t) < 3 {
		return nil // reported on the data block, or the whole row
	}
	column := stepName(t[2])
	if !slices.Contains(e.feeder.columns, column) {
		return errorDiag(t.SourceRange(), fmt.Sprintf("Unknown column %q", column),
			"%q has no column %q.%s Its columns are %s.",
			e.feeder.Path, column, didYouMean(column, e.feeder.columns), quoteList(e.feeder.columns))
	}
	return nil
}

// isDynamic reports whether expr must be evaluated per iteration: it uses
// a per-iteration value, or calls a function that returns a new value on
// every call.
func isDynamic(expr hcl.Expression) bool {
	for _, t := range expr.Variables() {
		switch t.RootName() {
		case rootVU, rootScenario, rootData:
			return true
		}
	}
	syntax, ok := expr.(hclsyntax.Expression)
	if !ok {
		return false
	}
	impure := false
	hclsyntax.VisitAll(syntax, func(n hclsyntax.Node) hcl.Diagnostics {
		if call, ok := n.(*hclsyntax.FunctionCallExpr); ok && impureFunctions[call.Name] {
			impure = true
		}
		return nil
	})
	return impure
}

// readsVars reports whether expr reads vu.vars, or the whole vu.
func readsVars(expr hcl.Expression) bool {
	for _, t := range expr.Variables() {
		if t.RootName() == rootVU && (len(t) < 2 || stepName(t[1]) == vuVars) {
			return true
		}
	}
	return false
}

// usesRoot reports whether expr refers to the variable root.
func usesRoot(expr hcl.Expression, root string) bool {
	for _, t := range expr.Variables() {
		if t.RootName() == root {
			return true
		}
	}
	return false
}

// Dynamic reports whether the request has attributes evaluated per
// iteration.
func (r *Request) Dynamic() bool { return len(r.dynamic) > 0 }

// Value returns the request's attributes for one iteration, as an object
// with every attribute of the protocol's RequestSpec (null when not set).
// A request with nothing dynamic returns the value computed at load,
// without allocating. A request that uses data needs it.Data to hold a row
// of each of its Feeders. Value is safe for concurrent use.
func (r *Request) Value(it Iteration) (cty.Value, hcl.Diagnostics) {
	v, _, diags := r.Eval(it)
	return v, diags
}

// Eval returns what Value returns, plus the call's delivery: its let is
// evaluated once and shared by both. The expressions run in their compiled
// form where it exists, else through HCL (see compile.go). Eval is safe
// for concurrent use.
func (r *Request) Eval(it Iteration) (cty.Value, Delivery, hcl.Diagnostics) {
	x := &r.extra
	if len(r.dynamic) == 0 && x.delivery == nil {
		return r.value, x.deliveryStatic, nil
	}
	c, diags := r.begin(it)
	if c == nil {
		return cty.NilVal, Delivery{}, diags
	}
	defer r.end(c)
	value := r.value
	if len(r.dynamic) > 0 {
		// Every key is set below, the static ones first, so a map from
		// the pool needs no clearing.
		var attrs map[string]cty.Value
		if x.attrMaps != nil {
			attrs, _ = x.attrMaps.Get().(map[string]cty.Value)
		}
		if attrs == nil {
			attrs = make(map[string]cty.Value, len(r.types))
		}
		if x.attrMaps != nil {
			defer x.attrMaps.Put(attrs)
		}
		maps.Copy(attrs, r.static)
		for i := range r.dynamic {
			a := &r.dynamic[i]
			v, d := r.attr(c, a, a.node)
			diags = append(diags, d...)
			if !d.HasErrors() {
				attrs[a.key] = v
			}
		}
		value = cty.ObjectVal(attrs)
	}
	delivery, d := r.delivery(c)
	if diags = append(diags, d...); diags.HasErrors() {
		return cty.NilVal, Delivery{}, diags
	}
	return value, delivery, diags
}

// begin starts one call's evaluation: it checks that the iteration
// carries the rows the request needs and evaluates a dynamic let. It
// returns nil, with the errors, when the call cannot be evaluated; else a
// call state that end gives back.
func (r *Request) begin(it Iteration) (*call, hcl.Diagnostics) {
	x := &r.extra
	var diags hcl.Diagnostics
	for _, f := range r.feeders {
		if _, ok := it.Data[f.Name]; !ok {
			diags = append(diags, errorDiag(r.DeclRange, fmt.Sprintf("No row of data.%s", f.Name),
				"Request %q uses data block %q, but the iteration carries no row of it in Iteration.Data.", r.Name, f.Name))
		}
	}
	if diags.HasErrors() {
		return nil, diags
	}
	var c *call
	if x.calls != nil {
		c, _ = x.calls.Get().(*call)
	}
	if c == nil {
		c = new(call)
	}
	c.r, c.it = r, it
	if x.letDynamic && x.hasLetReference {
		// let is evaluated without let in scope: it cannot refer to itself.
		v, d := c.eval(x.let, x.letNode)
		if d.HasErrors() {
			r.end(c)
			return nil, append(diags, d...)
		}
		c.setLet(v)
	}
	return c, diags
}

// end gives back a call state begin returned.
func (r *Request) end(c *call) {
	if r.extra.calls != nil {
		*c = call{} // nothing of this call stays reachable
		r.extra.calls.Put(c)
	}
}

// attr evaluates a dynamic attribute in the call, through n where it can
// (a.node, or nil for HCL), and converts it to the protocol's type.
func (r *Request) attr(c *call, a *dynamicAttr, n node) (cty.Value, hcl.Diagnostics) {
	v, diags := c.eval(a.expr, n)
	if diags.HasErrors() {
		return cty.NilVal, diags
	}
	if !v.Type().Equals(a.ty) && a.ty != cty.DynamicPseudoType {
		cv, err := convert.Convert(v, a.ty)
		if err != nil {
			return cty.NilVal, append(diags, errorDiag(a.expr.Range(), "Incorrect attribute value type",
				"Inappropriate value for attribute %q of request %q: %s.", a.key, r.Name, err))
		}
		v = cv
	}
	return v, diags
}

// delivery is the call's delivery: the static one, or its per-call value.
func (r *Request) delivery(c *call) (Delivery, hcl.Diagnostics) {
	x := &r.extra
	if x.delivery == nil {
		return x.deliveryStatic, nil
	}
	v, diags := c.eval(x.delivery, x.deliveryNode)
	if diags.HasErrors() {
		return Delivery{}, diags
	}
	delivery, err := deliveryFromValue(v)
	if err != nil {
		return Delivery{}, append(diags, errorDiag(x.deliveryDecl, "Invalid delivery", "%s.", err))
	}
	return delivery, diags
}

// dynamicAttr is a request attribute evaluated per call.
type dynamicAttr struct {
	key  string         // in the request's value
	expr hcl.Expression // for HCL, and the messages
	ty   cty.Type       // the protocol's type for it
	node node           // expr compiled, or nil (see compile.go)
}
