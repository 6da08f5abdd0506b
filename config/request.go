package config

import (
	"fmt"
	"maps"
	"slices"
	"sort"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
)

// blockCheck is the type of the check blocks inside a request.
const blockCheck = "check"

// The attributes every request has, whatever its protocol.
const (
	requestTarget = "target"
	requestWeight = "weight"
)

// requestWhere names the static attributes of a request in messages.
const requestWhere = "This request attribute"

// requestCoreSchema is the schema of a request whose protocol is unknown:
// its protocol attributes cannot be checked, and the reason is already
// reported.
var requestCoreSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: requestTarget}, {Name: requestWeight}},
	Blocks:     []hcl.BlockHeaderSchema{{Type: blockCheck}},
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
	vuAttributes       = []string{"id", "iteration"}
	scenarioAttributes = []string{"name"}
)

// specAttr is one protocol attribute of a request: key in the result
// object, and the spec that names and types it in HCL.
type specAttr struct {
	key  string
	spec *hcldec.AttrSpec
}

// decodeRequests decodes the request blocks of scenario s.
func (l *loader) decodeRequests(s *Scenario, blocks []*hcl.Block, def scenarioTarget) hcl.Diagnostics {
	var diags hcl.Diagnostics
	seen := map[string]*Request{}
	sample := l.sampleContext(s.Name)
	for _, b := range blocks {
		name := b.Labels[0]
		if name == "" {
			diags = append(diags, errorDiag(b.LabelRanges[0], "Empty request name", `A request needs a name, such as request "home".`))
			continue
		}
		if earlier, dup := seen[name]; dup {
			d := duplicateDiag("request", name, b.DefRange, earlier.DeclRange)
			d.Detail += fmt.Sprintf(" Request names are unique within a scenario, here %q.", s.Name)
			diags = append(diags, d)
			continue
		}
		r, d := l.decodeRequest(s.Name, b, def, sample)
		diags = append(diags, d...)
		seen[name] = r
		s.Requests = append(s.Requests, r)
	}
	return diags
}

// sampleContext evaluates a per-iteration expression once at load, with
// the values of the first iteration of the first VU, so that type errors
// and unknown functions show up before the run.
func (l *loader) sampleContext(scenario string) *hcl.EvalContext {
	ctx := l.base.NewChild()
	ctx.Variables = map[string]cty.Value{
		rootVU: cty.ObjectVal(map[string]cty.Value{
			"id":        cty.NumberUIntVal(1),
			"iteration": cty.NumberUIntVal(0),
		}),
		rootScenario: scenarioValue(scenario),
		rootData:     l.sampleData(),
	}
	return ctx
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

func (l *loader) decodeRequest(scenario string, b *hcl.Block, def scenarioTarget, sample *hcl.EvalContext) (*Request, hcl.Diagnostics) {
	r := &Request{
		Name:        b.Labels[0],
		Weight:      1,
		DeclRange:   b.DefRange,
		base:        l.base,
		scenario:    scenario,
		scenarioVal: scenarioValue(scenario),
	}
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

	if attr := content.Attributes[requestWeight]; attr != nil {
		w, ok, d := l.intAttr(attr, 1, "the request's share of the scenario's mix", requestWhere)
		diags = append(diags, d...)
		if ok {
			r.Weight = w
		}
	}
	for _, cb := range content.Blocks {
		c, d := l.decodeCheck(cb)
		diags = append(diags, d...)
		r.Checks = append(r.Checks, c)
	}
	if entry != nil && entry.info != nil {
		diags = append(diags, l.decodeRequestAttributes(r, content, attrs, sample)...)
	}
	return r, diags
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
	used := map[string]bool{requestTarget: true, requestWeight: true}
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
// ones now, and dynamic ones once with sample values to catch mistakes.
func (l *loader) decodeRequestAttributes(r *Request, content *hcl.BodyContent, attrs []specAttr, sample *hcl.EvalContext) hcl.Diagnostics {
	var diags hcl.Diagnostics
	r.types = make(map[string]cty.Type, len(attrs))
	r.static = make(map[string]cty.Value, len(attrs))
	used := map[string]bool{} // the data blocks of the dynamic attributes
	for _, sa := range attrs {
		r.types[sa.key] = sa.spec.Type
		r.static[sa.key] = cty.NullVal(sa.spec.Type)
		attr := content.Attributes[sa.spec.Name]
		if attr == nil {
			continue
		}
		if d := l.checkRequestReferences(attr.Expr); d.HasErrors() {
			diags = append(diags, d...)
			continue
		}
		dynamic := isDynamic(attr.Expr)
		ctx := l.base
		if dynamic {
			ctx = sample
		}
		v, d := attr.Expr.Value(ctx)
		diags = append(diags, d...)
		if d.HasErrors() || !v.IsWhollyKnown() {
			continue
		}
		v, err := convert.Convert(v, sa.spec.Type)
		if err != nil {
			diags = append(diags, typeDiag(attr, err))
			continue
		}
		if dynamic {
			if r.dynamic == nil {
				r.dynamic = map[string]hcl.Expression{}
			}
			r.dynamic[sa.key] = attr.Expr
			r.usesVU = r.usesVU || usesRoot(attr.Expr, rootVU)
			for _, t := range attr.Expr.Variables() {
				if t.RootName() == rootData && len(t) > 1 {
					used[stepName(t[1])] = true
				}
			}
			delete(r.static, sa.key)
		} else {
			r.static[sa.key] = v
		}
	}
	if len(r.dynamic) == 0 {
		r.value = cty.ObjectVal(r.static)
	}
	for _, f := range l.test.Feeders {
		if used[f.Name] {
			r.feeders = append(r.feeders, f)
		}
	}
	return diags
}

// checkRequestReferences reports references to per-iteration values that
// do not exist. hcl would report them too, but without saying what exists.
func (l *loader) checkRequestReferences(expr hcl.Expression) hcl.Diagnostics {
	var diags hcl.Diagnostics
	for _, t := range expr.Variables() {
		var valid []string
		switch t.RootName() {
		case rootVU:
			valid = vuAttributes
		case rootScenario:
			valid = scenarioAttributes
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
		if name := stepName(t[1]); !slices.Contains(valid, name) {
			diags = append(diags, errorDiag(t.SourceRange(), "Unsupported attribute",
				"%s has no attribute %q.%s It has %s.",
				t.RootName(), name, didYouMean(name, valid), quoteList(valid)))
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
	if len(r.dynamic) == 0 {
		return r.value, nil
	}
	scenario := r.scenarioVal
	if it.Scenario != "" && it.Scenario != r.scenario {
		scenario = scenarioValue(it.Scenario)
	}
	ctx := r.base.NewChild()
	ctx.Variables = map[string]cty.Value{rootScenario: scenario}
	if r.usesVU {
		ctx.Variables[rootVU] = cty.ObjectVal(map[string]cty.Value{
			"id":        cty.NumberUIntVal(it.VU),
			"iteration": cty.NumberUIntVal(it.Iteration),
		})
	}
	var diags hcl.Diagnostics
	if len(r.feeders) > 0 {
		for _, f := range r.feeders {
			if _, ok := it.Data[f.Name]; !ok {
				diags = append(diags, errorDiag(r.DeclRange, fmt.Sprintf("No row of data.%s", f.Name),
					"Request %q uses data block %q, but the iteration carries no row of it in Iteration.Data.", r.Name, f.Name))
			}
		}
		if diags.HasErrors() {
			return cty.NilVal, diags
		}
		ctx.Variables[rootData] = cty.ObjectVal(it.Data)
	}
	attrs := make(map[string]cty.Value, len(r.types))
	maps.Copy(attrs, r.static)
	for key, expr := range r.dynamic {
		v, d := expr.Value(ctx)
		diags = append(diags, d...)
		if d.HasErrors() {
			continue
		}
		if ty := r.types[key]; !v.Type().Equals(ty) && ty != cty.DynamicPseudoType {
			cv, err := convert.Convert(v, ty)
			if err != nil {
				diags = append(diags, errorDiag(expr.Range(), "Incorrect attribute value type",
					"Inappropriate value for attribute %q of request %q: %s.", key, r.Name, err))
				continue
			}
			v = cv
		}
		attrs[key] = v
	}
	if diags.HasErrors() {
		return cty.NilVal, diags
	}
	return cty.ObjectVal(attrs), diags
}

// NewStaticRequest returns a request whose attributes are the fixed object
// value, for tests of the packages that run requests.
func NewStaticRequest(name, target, protocol string, weight int, value cty.Value) *Request {
	return &Request{Name: name, Target: target, Protocol: protocol, Weight: weight, value: value}
}
