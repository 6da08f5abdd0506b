package config

import (
	"fmt"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hcldec"

	"github.com/hload/hload/protocols"
)

// defaultProtocol is the protocol of a target that names none.
const defaultProtocol = "http"

// targetWhere names target blocks in messages about per-iteration values.
const targetWhere = "A target block"

// targetSchema holds the attribute every target has; the protocol's
// TargetSpec decodes the rest.
var targetSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "protocol"}, {Name: "isolate"}, {Name: requestMaxBody}},
}

// targetEntry is a declared target, kept for resolving request targets.
type targetEntry struct {
	target *Target
	// info is nil when the protocol is unknown; requests to such a target
	// are then not checked further, as the mistake is already reported.
	info *protocols.Info
}

// decodeTargets is the third phase. Targets are static: they are opened
// once, before the run.
func (l *loader) decodeTargets(blocks []*hcl.Block) hcl.Diagnostics {
	var diags hcl.Diagnostics
	for _, b := range blocks {
		name := b.Labels[0]
		if name == "" {
			diags = append(diags, errorDiag(b.LabelRanges[0], "Empty target name", "A target needs a name, such as target \"shop\"."))
			continue
		}
		if earlier, dup := l.targets[name]; dup {
			diags = append(diags, duplicateDiag("target", name, b.DefRange, earlier.target.DeclRange))
			continue
		}
		t, info, d := l.decodeTarget(b)
		diags = append(diags, d...)
		l.targets[name] = &targetEntry{target: t, info: info}
		l.targetNames = append(l.targetNames, name)
		l.test.Targets = append(l.test.Targets, t)
	}
	return diags
}

func (l *loader) decodeTarget(b *hcl.Block) (*Target, *protocols.Info, hcl.Diagnostics) {
	t := &Target{Name: b.Labels[0], Protocol: defaultProtocol, DeclRange: b.DefRange}
	content, rest, diags := b.Body.PartialContent(targetSchema)
	if attr := content.Attributes[requestMaxBody]; attr != nil {
		n, _, d := l.byteSizeAttr(attr, targetWhere)
		diags = append(diags, d...)
		t.MaxBody = n
	}
	protoRange := b.DefRange
	if attr := content.Attributes["protocol"]; attr != nil {
		s, ok, d := l.stringAttr(attr, targetWhere)
		diags = append(diags, d...)
		if !ok {
			return t, nil, diags
		}
		t.Protocol, protoRange = s, attr.Expr.Range()
	}
	p, ok := l.opts.Protocols.Lookup(t.Protocol)
	if !ok && l.isPlugin(t.Protocol) {
		// The plugin could not be provided, and that was reported.
		return t, nil, diags
	}
	if !ok {
		known := l.opts.Protocols.Names()
		return t, nil, append(diags, errorDiag(protoRange, fmt.Sprintf("Unknown protocol %q", t.Protocol),
			"Target %q uses protocol %q, which hload does not know.%s Known protocols: %s.",
			t.Name, t.Protocol, didYouMean(t.Protocol, known), quoteList(known)))
	}
	if attr := content.Attributes["isolate"]; attr != nil {
		if l.isPlugin(t.Protocol) {
			diags = append(diags, errorDiag(attr.Range, "isolate is for built-in protocols",
				"Target %q uses the plugin %q, which always runs in its own process. isolate = true runs a built-in protocol (%s) that way; remove the attribute here.",
				t.Name, t.Protocol, quoteList(l.builtinNames())))
		} else {
			v, _, d := l.boolAttr(attr, targetWhere)
			diags = append(diags, d...)
			t.Isolate = v
		}
	}
	info := p.Describe()
	diags = append(diags, checkStatic(hcldec.Variables(rest, info.TargetSpec), targetWhere)...)
	v, d := hcldec.Decode(rest, info.TargetSpec, l.static)
	diags = append(diags, d...)
	t.Config = v
	if !d.HasErrors() {
		diags = append(diags, validateTarget(p, t, rest, info.TargetSpec)...)
	}
	return t, &info, diags
}

// validateTarget asks t's protocol, when it can, to check t's values with
// the decoder its Open uses, so that a value Open would refuse is reported
// at its attribute before anything is started. A target is static: its
// value is whole at load, unless a mistake already reported left a part
// unknown.
func validateTarget(p protocols.Protocol, t *Target, body hcl.Body, spec hcldec.ObjectSpec) hcl.Diagnostics {
	tv, ok := p.(protocols.TargetValidator)
	if !ok || !t.Config.IsWhollyKnown() {
		return nil
	}
	name, err := tv.ValidateTarget(t.Config)
	if err == nil {
		return nil
	}
	rng := t.DeclRange
	if a := specAttribute(body, spec, name); a != nil {
		rng = a.Expr.Range()
	}
	return hcl.Diagnostics{validatorDiag(rng, name, "target", err)}
}

// specAttribute returns the attribute of body that key of spec decodes, or
// nil when key is not an attribute of spec or the body does not set it.
func specAttribute(body hcl.Body, spec hcldec.ObjectSpec, key string) *hcl.Attribute {
	as, ok := spec[key].(*hcldec.AttrSpec)
	if !ok || as == nil {
		return nil
	}
	content, _, _ := body.PartialContent(&hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: as.Name}}})
	return content.Attributes[as.Name]
}

// validatorDiag turns a protocol validator's error about attribute attr
// ("" for the block as a whole) of a block of kind what into a diagnostic
// on rng. The protocol's message says what is wrong and how to fix it.
func validatorDiag(rng hcl.Range, attr, what string, err error) *hcl.Diagnostic {
	msg := err.Error()
	if attr == "" || !strings.HasPrefix(msg, attr) {
		msg = capitalize(msg) // an attribute's name keeps its spelling
	}
	if !strings.HasSuffix(msg, ".") && !strings.HasSuffix(msg, "?") {
		msg += "."
	}
	summary := "Invalid " + attr
	if attr == "" {
		summary = "Invalid " + what
	}
	return errorDiag(rng, summary, "%s", msg)
}

// builtinNames lists the protocols that are not plugins, for messages.
func (l *loader) builtinNames() []string {
	var names []string
	for _, n := range l.opts.Protocols.Names() {
		if !l.isPlugin(n) {
			names = append(names, n)
		}
	}
	return names
}
